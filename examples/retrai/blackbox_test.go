package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
)

// builtRetrai is the retrai binary the tests build, once per test binary;
// TestMain removes it.
var builtRetrai struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// buildRetrai builds the retrai command with go build and returns its path.
func buildRetrai(t *testing.T) string {
	t.Helper()
	builtRetrai.once.Do(func() {
		builtRetrai.dir, builtRetrai.err = os.MkdirTemp("", "retrai-bin-")
		if builtRetrai.err != nil {
			return
		}
		builtRetrai.path = filepath.Join(builtRetrai.dir, "retrai")
		cmd := exec.Command("go", "build", "-o", builtRetrai.path, ".")
		builtRetrai.out, builtRetrai.err = cmd.CombinedOutput()
	})
	require.NoError(t, builtRetrai.err, "go build: %s", builtRetrai.out)
	return builtRetrai.path
}

// removeBuiltRetrai removes the binary buildRetrai built, if it did.
func removeBuiltRetrai() {
	if builtRetrai.dir != "" {
		_ = os.RemoveAll(builtRetrai.dir)
	}
}

// result is how a retrai process ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runBinary runs the retrai binary with args, in the environment of the
// test plus env, and returns how it ended.
func runBinary(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// fakeOpenAI is an OpenAI-compatible chat-completions server (real HTTP,
// the wire format of /v1/chat/completions, streamed or not) that plays a
// model: it answers the k-th call of a conversation — k counted from the
// assistant messages it is sent — with replies[k] (the last reply past the
// end). Before that, it may hang (accept the request and never answer
// until the client goes away) or rate-limit (429 with Retry-After).
type fakeOpenAI struct {
	*httptest.Server
	replies []llm.Reply

	mu sync.Mutex
	// hang is the number of requests, from the first, that hang.
	hang int
	// limit is the number of requests, after those that hang, answered 429
	// with "Retry-After: 1".
	limit    int
	requests int
	// hanging receives a value when a request starts to hang.
	hanging chan struct{}
}

func newFakeOpenAI(t *testing.T, replies []llm.Reply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{replies: replies, hanging: make(chan struct{}, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// spec is the model spec that points retrai at the server, with the spec's
// parameters params (e.g. "timeout=1s").
func (f *fakeOpenAI) spec(params string) string {
	s := "openai-compatible:test-model@" + f.URL + "/v1"
	if params != "" {
		s += "?" + params
	}
	return s
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, ok := openaitest.ReadRequest(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	f.requests++
	n := f.requests
	hang, limit := n <= f.hang, n > f.hang && n <= f.hang+f.limit
	f.mu.Unlock()
	switch {
	case hang:
		f.hanging <- struct{}{}
		<-r.Context().Done()
		return
	case limit:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	reply := f.replies[min(openaitest.AssistantTurns(body), len(f.replies)-1)]
	openaitest.WriteReply(w, body, fmt.Sprintf("chatcmpl-%d", n), reply)
}

// toolCall is a tool call of a scripted reply.
func toolCall(id, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

// sumProject writes a Go module whose one test fails, and returns its
// directory.
func sumProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":      "module example.com/sum\n\ngo 1.21\n",
		"sum.go":      "package sum\n\n// Sum returns a + b.\nfunc Sum(a, b int) int { return a - b }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif got := Sum(2, 3); got != 5 {\n\t\tt.Fatalf(\"Sum(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// TestBuiltBinary runs the retrai binary, built with go build, against
// OpenAI-compatible servers that misbehave.
func TestBuiltBinary(t *testing.T) {
	bin := buildRetrai(t)
	isolate(t)

	t.Run("a cheating model does not reach the goal", func(t *testing.T) {
		// The model "fixes" the failing test by deleting it.
		srv := newFakeOpenAI(t, []llm.Reply{
			{Text: "The test is wrong; I remove it.", ToolCalls: []llms.ToolCall{toolCall("call_1", "bash_exec", `{"command":"rm sum_test.go"}`)},
				Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
			{Text: "Every test passes now.", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
		})
		dir := sumProject(t)
		r := runBinary(t, bin, nil, "run", "--cwd", dir, "--model", srv.spec(""), "--max-iterations", "2",
			"--db", filepath.Join(t.TempDir(), "r.db"))
		require.Equal(t, exitNotDone, r.code, "%s", r)
		require.NoFileExists(t, filepath.Join(dir, "sum_test.go"), "the model did delete the test")
		require.Contains(t, r.stdout, "✓ bash_exec command=\"rm sum_test.go\"")
		require.Contains(t, r.stdout, "TestSum")
		require.Contains(t, r.stdout, "✗ GOAL NOT ACHIEVED")
		require.NotContains(t, r.stdout, "✓ GOAL ACHIEVED")
		require.NotContains(t, r.stdout, "goal ✓ achieved")
	})

	t.Run("a hanging model ends the run with an error", func(t *testing.T) {
		srv := newFakeOpenAI(t, []llm.Reply{{Text: "never sent"}})
		srv.hang = 1 << 30
		dir := sumProject(t)
		r := runBinary(t, bin, nil, "run", "--cwd", dir, "--model", srv.spec("timeout=1s&stall=1s"),
			"--db", filepath.Join(t.TempDir(), "r.db"))
		require.Equal(t, exitNotDone, r.code, "%s", r)
		require.Contains(t, r.stdout, "… waiting for the model\n")
		require.Contains(t, r.stdout, "! model timed out: retrying in ")
		require.Contains(t, r.stdout, "(attempt 1 of 4 failed)")
		require.Contains(t, r.stdout, "… waiting for the model (attempt 4 of 4)")
		require.Contains(t, r.stdout, "! model timed out: gave up after attempt 4 of 4: ")
		require.Contains(t, r.stdout, "✗ STOPPED ON AN ERROR after 0 iteration(s): ")
		require.Regexp(t, `STOPPED ON AN ERROR .*(timed out|stalled)`, r.stdout)
		require.Contains(t, r.stdout, "resume with: retrai run --resume ")
	})

	t.Run("a rate-limited model is waited for", func(t *testing.T) {
		script, err := samples.Script(samples.GoTest)
		require.NoError(t, err)
		srv := newFakeOpenAI(t, script)
		srv.limit = 1
		dir := t.TempDir()
		require.NoError(t, samples.Copy(samples.GoTest, dir))
		r := runBinary(t, bin, nil, "run", "--cwd", dir, "--model", srv.spec(""), "--db", filepath.Join(t.TempDir(), "r.db"))
		require.Equal(t, exitAchieved, r.code, "%s", r)
		require.Contains(t, r.stdout, "! model rate limited (HTTP 429): retrying in 1s (attempt 1 of 4 failed)")
		require.Contains(t, r.stdout, "… waiting for the model (attempt 2 of 4)")
		require.Contains(t, r.stdout, "✓ GOAL ACHIEVED after 2 iteration(s)")
	})

	t.Run("a project cannot send the key elsewhere", func(t *testing.T) {
		script, err := samples.Script(samples.Shell)
		require.NoError(t, err)
		srv := newFakeOpenAI(t, script)
		dir := t.TempDir()
		require.NoError(t, samples.Copy(samples.Shell, dir))
		f, err := os.OpenFile(filepath.Join(dir, ".retrai.yml"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = fmt.Fprintf(f, "model: %s\n", srv.spec(""))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		db := filepath.Join(t.TempDir(), "r.db")

		r := runBinary(t, bin, nil, "run", "--cwd", dir, "--db", db)
		require.Equal(t, exitNotDone, r.code, "%s", r)
		require.Contains(t, r.stderr, "would send the model's API key and your code to "+srv.URL+"/v1")
		require.Contains(t, r.stderr, "--allow-config-endpoint")
		srv.mu.Lock()
		require.Zero(t, srv.requests, "nothing was sent")
		srv.mu.Unlock()
		r = runBinary(t, bin, nil, "runs", "--db", db)
		require.Contains(t, r.stdout, "No runs in ", "no run was recorded")

		r = runBinary(t, bin, []string{allowEndpointEnv + "=1"}, "run", "--cwd", dir, "--db", db)
		require.Equal(t, exitAchieved, r.code, "%s", r)
		require.Contains(t, r.stdout, "✓ GOAL ACHIEVED")
	})

	t.Run("version", func(t *testing.T) {
		r := runBinary(t, bin, nil, "--version")
		require.Equal(t, exitAchieved, r.code, "%s", r)
		require.Regexp(t, `^retrai \S+ \(.*go1\.\d+`, r.stdout)
	})
}

// TestALiveRunIsNotResumedTwiceAndAKilledOneIs: a run live in one retrai
// process is refused by a second (clearly, and its record is left alone);
// once that process is SIGKILLed and its lease has expired, `retrai serve`
// shows the run interrupted and resumable, and resumes it through the API
// to its goal.
func TestALiveRunIsNotResumedTwiceAndAKilledOneIs(t *testing.T) {
	bin := buildRetrai(t)
	isolate(t)
	// A short lease, for this process and the retrai processes it starts:
	// renewed every 500 ms, it expires 1.5 s after A dies.
	t.Setenv(leaseTTLEnv, "1500ms")
	script, err := samples.Script(samples.GoTest)
	require.NoError(t, err)
	srv := newFakeOpenAI(t, script)
	srv.hang = 1 // the first process waits for the model until it is killed
	dir := t.TempDir()
	require.NoError(t, samples.Copy(samples.GoTest, dir))
	db := filepath.Join(t.TempDir(), "r.db")

	// Process A runs, and waits for the model.
	a := exec.CommandContext(t.Context(), bin, "run", "--cwd", dir, "--model", srv.spec(""), "--db", db)
	var aOut, aErr lockedBuffer
	a.Stdout, a.Stderr = &aOut, &aErr
	require.NoError(t, a.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = a.Process.Kill()
			_ = a.Wait()
		}
	})
	id := aOut.waitFor(t, runIDRe)[1]
	select {
	case <-srv.hanging: // A's graph runs: it holds the run's lease
	case <-t.Context().Done():
		t.Fatalf("the model was never called; A's output:\n%s\n%s", aOut.String(), aErr.String())
	}
	ts := newTestServerOn(t, runs.Options{DB: db, LeaseTTL: 1500 * time.Millisecond})
	before, err := ts.m.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusRunning, before.Status)

	// Process B (this one) cannot resume it: it says where it runs.
	live := fmt.Sprintf("run %s is live in pid %d on ", id, a.Process.Pid)
	code, out, errOut := runCLI(t, "", "run", "--resume", id, "--db", db)
	require.Equal(t, exitNotDone, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, errOut, "retrai: "+live)
	require.Contains(t, errOut, "(lease expires ")
	require.NotContains(t, out, "resuming run")
	code, out, _ = runCLI(t, "", "runs", "--db", db, id)
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "running: "+live)
	// Nor can the server, whose answer says why.
	var shown apiRun
	ts.api(t, "GET", "/api/runs/"+id, "", http.StatusOK, &shown)
	require.Equal(t, runs.StatusRunning, shown.Status)
	require.False(t, shown.Resumable)
	require.Contains(t, shown.Live, live)
	code, body := ts.do(t, "POST", "/api/runs/"+id+"/resume", ts.token, `{}`)
	require.Equal(t, http.StatusConflict, code, "%s", body)
	require.Contains(t, string(body), live)
	// Its events are A's: the WebSocket says so and closes.
	c := ts.follow(t, id, false)
	state := readUntil(t, c, id, wsKindState)
	require.Equal(t, runs.StatusRunning, state[len(state)-1].Run.Status)
	requireClosed(t, c, websocket.StatusNormalClosure)
	// The record is as A wrote it.
	after, err := ts.m.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, before, after)

	// A is killed: its lease is no longer renewed, and expires.
	require.NoError(t, a.Process.Kill())
	_ = a.Wait()
	killed = true
	for shown.Status == runs.StatusRunning {
		require.NoError(t, sleepCtx(t, 50*time.Millisecond))
		shown = apiRun{}
		ts.api(t, "GET", "/api/runs/"+id, "", http.StatusOK, &shown)
	}
	require.Equal(t, runs.StatusInterrupted, shown.Status)
	require.True(t, shown.Resumable)
	require.Empty(t, shown.Live)
	var list listResponse
	ts.api(t, "GET", "/api/runs", "", http.StatusOK, &list)
	require.Equal(t, runs.StatusInterrupted, list.Runs[0].Status)
	require.True(t, list.Runs[0].Resumable)

	// The server resumes it, and it reaches its goal.
	var resumed apiRun
	ts.api(t, "POST", "/api/runs/"+id+"/resume", `{}`, http.StatusAccepted, &resumed)
	c = ts.follow(t, id, false)
	got := readUntil(t, c, id, "runs.ended")
	require.Equal(t, string(runs.StatusAchieved), got[len(got)-1].Data["status"])
	requireClosed(t, c, websocket.StatusNormalClosure)
	var final apiRun
	ts.api(t, "GET", "/api/runs/"+id, "", http.StatusOK, &final)
	require.Equal(t, runs.StatusAchieved, final.Status)
	require.False(t, final.Resumable)
	data, err := os.ReadFile(filepath.Join(dir, "calc.go"))
	require.NoError(t, err)
	require.Contains(t, string(data), "i <= b")
}

// sleepCtx waits d, or fails when the test's context ends first.
func sleepCtx(t *testing.T, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-t.Context().Done():
		return t.Context().Err()
	}
}
