package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// toolNamed returns the agent tool of cb called name.
func toolNamed(t *testing.T, cb *codebase, name string) tools.Tool {
	t.Helper()
	for _, tl := range cb.agentTools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func TestAgentToolOutputsAreCutToTheLimit(t *testing.T) {
	dir := sampleDir(t)
	// A file under file_read's own 200 KB limit, and a folder of many
	// files, whose whole text would go into every later prompt of a run.
	var big strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&big, "line %d of a long generated file\n", i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big.String()), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "many"), 0o755))
	for i := range 1500 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("file_with_a_long_name_%04d.txt", i)), nil, 0o644))
	}
	ix, err := codeindex.Open(t.Context(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ix.Close()) })
	cb, err := newCodebase(ix)
	require.NoError(t, err)

	tests := []struct {
		tool, args string
		head, tail string // the first and the last lines kept
	}{
		{"read_file", `{"path":"big.txt"}`, "line 0 of", "line 1999 of"},
		{"list_directory", `{"path":"many"}`, "file_with_a_long_name_0000.txt", "file_with_a_long_name_1499.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			tool := toolNamed(t, cb, tt.tool)
			require.Contains(t, tool.Description(), fmt.Sprintf("Output over %d characters is cut", maxToolOutput))
			out, err := tool.Call(t.Context(), json.RawMessage(tt.args))
			require.NoError(t, err)
			require.LessOrEqual(t, utf8.RuneCountInString(out), maxToolOutput+100, "the limit and its marker")
			require.Contains(t, out, "chars truncated ...]")
			require.Contains(t, out, tt.head)
			require.Contains(t, out, tt.tail)
		})
	}
}

// lockWatcher is a writer, safe for concurrent use, that closes waiting
// when a process says it waits for the index's lock.
type lockWatcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	waiting chan struct{}
}

func newLockWatcher() *lockWatcher { return &lockWatcher{waiting: make(chan struct{})} }

func (w *lockWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "waiting for another process using the index") {
		w.once.Do(func() { close(w.waiting) })
	}
	return len(p), nil
}

func (w *lockWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestCommandsWaitForAnIndexingInProgress(t *testing.T) {
	tests := []struct {
		name string
		args []string // with the directory last
		want string
	}{
		{"index", []string{"index"}, "4 files, 13 chunks (0 added, 0 changed, 4 unchanged"},
		{"search", []string{"search", "coupon discount", "--mode", "bm25", "--dir"}, "pricing/pricing.go:13-29  func pricing.Discount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := sampleDir(t)
			// This test plays the first `coderag index` of dir: it holds
			// the index open while it builds it, as another process would.
			ix, err := codeindex.Open(t.Context(), dir)
			require.NoError(t, err)

			var out bytes.Buffer
			errw := newLockWatcher()
			done := make(chan int)
			go func() { done <- run(t.Context(), append(tt.args, dir), &out, errw) }()
			select {
			case <-errw.waiting:
			case code := <-done:
				t.Fatalf("%s did not wait for the lock: exit code %d\n%s%s", tt.name, code, out.String(), errw)
			}

			// Without the wait, codeindex.Open of the second command would
			// find a folder without a manifest and delete the keyword
			// index built here.
			_, err = ix.Update(t.Context())
			require.NoError(t, err)
			require.NoError(t, ix.Close())

			require.Equal(t, exitOK, <-done, errw.String())
			require.Contains(t, out.String(), tt.want)
		})
	}
}

func TestWaitingForTheLockEndsWithTheContext(t *testing.T) {
	dir := sampleDir(t)
	ix, err := codeindex.Open(t.Context(), dir)
	require.NoError(t, err)
	defer ix.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var out bytes.Buffer
	errw := newLockWatcher()
	done := make(chan int)
	go func() { done <- run(ctx, []string{"index", dir}, &out, errw) }()
	<-errw.waiting
	cancel()
	require.Equal(t, exitError, <-done)
	require.Contains(t, errw.String(), "context canceled")
}

func TestIndexRebuildRepairsADamagedIndex(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, folder string)
	}{
		{"truncated manifest", func(t *testing.T, folder string) {
			path := filepath.Join(folder, "manifest.bin")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
		}},
		{"garbage vectors", func(t *testing.T, folder string) {
			require.NoError(t, os.WriteFile(filepath.Join(folder, "vectors.bin"), []byte("garbage"), 0o644))
		}},
		{"garbage keyword index", func(t *testing.T, folder string) {
			require.NoError(t, filepath.WalkDir(filepath.Join(folder, "keyword"), func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				return os.WriteFile(path, []byte("junk"), 0o644)
			}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := indexedSample(t)
			tt.damage(t, filepath.Join(dir, codeindex.DefaultDir))

			r := runCLI(t, "index", dir)
			require.Equal(t, exitError, r.code, r)
			require.Contains(t, r.stderr, "may be damaged; rebuild it with: coderag index --rebuild "+dir, r)

			r = runCLI(t, "index", "--rebuild", dir)
			require.Equal(t, exitOK, r.code, r)
			require.Contains(t, r.stdout, "4 files, 13 chunks (4 added, 0 changed, 0 unchanged", r)
			for _, q := range []struct{ mode, query, want string }{
				{"bm25", "coupon discount", "pricing/pricing.go:13-29  func pricing.Discount"},
				{"vector", "shipping cost", "pricing/pricing.go:31-38  func pricing.Shipping"},
			} {
				r = runCLI(t, "search", q.query, "--mode", q.mode, "--limit", "1", "--dir", dir)
				require.Equal(t, exitOK, r.code, r)
				require.Contains(t, r.stdout, q.want, r)
			}
		})
	}
}

func TestIndexOfAMissingDirectoryCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	r := runCLI(t, "index", dir)
	require.Equal(t, exitError, r.code, r)
	require.NoDirExists(t, dir)
}

func TestPrinterShowsOnlyTheStepBeingRunUnlessVerbose(t *testing.T) {
	steps := make([]string, 1000)
	for i := range steps {
		steps[i] = fmt.Sprintf("step %d %s", i, strings.Repeat("x", 300))
	}
	tests := []struct {
		verbose   bool
		wantLines int // of the plan, after its heading
		wantLast  string
	}{
		{false, 2, "  (999 later step(s) foreseen, not run unless planned again; --verbose shows them)"},
		{true, 1000, "  later 1000. " + steps[999]},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("verbose=%v", tt.verbose), func(t *testing.T) {
			var out bytes.Buffer
			p := &printer{w: &out, verbose: tt.verbose}
			p.Publish(events.Event{Data: planexec.PlanMade{Iteration: 1, MaxIterations: 10, Steps: steps}})
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			require.Equal(t, "plan, iteration 1 of at most 10: 1000 step(s); this iteration runs the first, then the planner plans again", lines[1])
			require.Len(t, lines[2:], tt.wantLines)
			require.Equal(t, tt.wantLast, lines[len(lines)-1])
			if !tt.verbose {
				require.Equal(t, "  next: step 0 "+strings.Repeat("x", stepPreviewRunes-len("step 0 "))+"…", lines[2])
			}
		})
	}
}

func TestPrinterPairsEachToolResultWithItsCallInCallOrder(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out}
	p.Publish(events.Event{Data: planexec.StepStarted{Iteration: 2, Index: 1, Total: 3, Step: "Read the files"}})
	for _, c := range []events.ToolCall{
		{ID: "a", Name: "read_file", Args: `{"path":"a.go"}`},
		{ID: "b", Name: "read_file", Args: `{"path":"b.go"}`},
		{ID: "c", Name: "read_file", Args: `{"path":"c.go"}`},
	} {
		p.Publish(events.Event{Data: c})
	}
	// They finish in the reverse order.
	for _, id := range []string{"c", "b", "a"} {
		p.Publish(events.Event{Data: events.ToolResult{ID: id, Name: "read_file", Result: "text of " + id}})
	}
	require.Equal(t, "\nstep (iteration 2): Read the files\n"+
		"  → read_file {\"path\":\"a.go\"}\n"+
		"  → read_file {\"path\":\"b.go\"}\n"+
		"  → read_file {\"path\":\"c.go\"}\n"+
		"  ← read_file {\"path\":\"a.go\"}:\n      text of a\n"+
		"  ← read_file {\"path\":\"b.go\"}:\n      text of b\n"+
		"  ← read_file {\"path\":\"c.go\"}:\n      text of c\n", out.String())
	require.NotContains(t, out.String(), "1/3", "only the step being run is shown, not its place in a plan that is made again")
}

func TestPrinterShowsResultsKeptBehindACallWithoutResultWhenTheStepEnds(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out}
	p.Publish(events.Event{Data: events.ToolCall{ID: "a", Name: "search_codebase", Args: `{"query":"x"}`}})
	p.Publish(events.Event{Data: events.ToolCall{ID: "b", Name: "read_file", Args: `{"path":"b.go"}`}})
	p.Publish(events.Event{Data: events.ToolResult{ID: "b", Name: "read_file", Result: "text of b"}})
	require.NotContains(t, out.String(), "text of b", "kept until a's result")
	p.Publish(events.Event{Data: planexec.FindingRecorded{Key: "step_1: x", Text: "done"}})
	require.Contains(t, out.String(), "  ← read_file {\"path\":\"b.go\"}:\n      text of b\n")
}

func TestAskCancelledMidRunLeavesTheIndexUsable(t *testing.T) {
	dir := indexedSample(t)
	arrived := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server see the client go away.
		_, _ = io.Copy(io.Discard, r.Body)
		once.Do(func() { close(arrived) })
		<-r.Context().Done() // the model never answers: the user presses Ctrl-C
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"ask", "Who computes shipping?", "--dir", dir, "--model", "openai-compatible:m@" + srv.URL + "/v1"}, &out, &errOut)
	}()
	<-arrived
	cancel()
	require.Equal(t, exitError, <-done, out.String())
	require.Contains(t, errOut.String(), "context canceled")

	r := runCLI(t, "index", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "4 files, 13 chunks (0 added, 0 changed, 4 unchanged, 0 removed, 0 skipped)", r)
	r = runCLI(t, "search", "coupon discount", "--mode", "bm25", "--limit", "1", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "pricing/pricing.go:13-29  func pricing.Discount", r)
}

func TestAskCutsTheFindingOfAStepThatReadsHugeFiles(t *testing.T) {
	dir := sampleDir(t)
	var big strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&big, "line %d of a long generated file\n", i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big.String()), 0o644))
	// The executor reads the file five times at once: 5 × maxToolOutput
	// characters, over maxFindingLength.
	var calls []llms.ToolCall
	for i := range 5 {
		calls = append(calls, state.ToolCall(fmt.Sprintf("call_%d", i), "read_file", `{"path":"big.txt"}`))
	}
	srv := &chatServer{replies: []llm.Reply{
		{Text: `["Read big.txt"]`},
		{ToolCalls: calls},
		{Text: "big.txt is a generated file."},
		{Text: `{"decision":"FINISH","reason":"enough"}`},
		{Text: "It is generated."},
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	r := runCLI(t, "ask", "What is big.txt?", "--dir", dir, "--model", "openai-compatible:m@"+ts.URL+"/v1")
	require.Equal(t, exitOK, r.code, r)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.requests, 5)
	refinery := srv.requests[3]["messages"].([]any)[0].(map[string]any)["content"].(string)
	require.Less(t, utf8.RuneCountInString(refinery), maxFindingLength+2000, "the finding and the prompt around it")
	require.Contains(t, refinery, "chars truncated ...]")
	require.Contains(t, refinery, "big.txt is a generated file.", "the executor's answer ends the finding and is kept")
}

func TestSearchOfAnIndexNeverFinishedSaysSo(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc Dial() {}\n"), 0o644))
	// What an interrupted first `coderag index` leaves: the folder, and no
	// manifest.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, codeindex.DefaultDir), 0o755))
	r := runCLI(t, "search", "dial", "--dir", dir)
	require.Equal(t, exitError, r.code, r)
	require.Contains(t, r.stderr, "holds no file: it was never finished")
	require.Contains(t, r.stderr, "run: coderag index "+dir)

	r = runCLI(t, "index", dir)
	require.Equal(t, exitOK, r.code, r)
	r = runCLI(t, "search", "dial", "--dir", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "a.go")
}
