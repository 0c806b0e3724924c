package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// result is how a command line ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runCLI runs the command line args in-process, as main does.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// sampleDir copies the bundled sample into a temporary directory, with
// no model configured and the go.work of this repository switched off
// (the sample is a module of its own), and returns the directory.
func sampleDir(t *testing.T) string {
	t.Helper()
	t.Setenv("GOWORK", "off")
	t.Setenv(modelEnv, "")
	dir := t.TempDir()
	require.NoError(t, copySample(dir))
	return dir
}

// indexedSample returns a copy of the sample, indexed with coderag index.
func indexedSample(t *testing.T) string {
	t.Helper()
	dir := sampleDir(t)
	r := runCLI(t, "index", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "4 files, 13 chunks (4 added, 0 changed, 0 unchanged, 0 removed, 0 skipped)", r)
	require.Contains(t, r.stdout, "files/s", r)
	return dir
}

func TestIndexIsIncremental(t *testing.T) {
	dir := indexedSample(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pricing", "pricing.go"),
		[]byte("package pricing\n\n// Tax is the VAT rate, in percent.\nconst Tax = 7\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "README.md")))

	r := runCLI(t, "index", dir)
	require.Equal(t, exitOK, r.code, r)
	require.Contains(t, r.stdout, "3 files, 9 chunks (0 added, 1 changed, 2 unchanged, 1 removed, 0 skipped)", r)
}

func TestProgressLineEndsAfterTheLastFile(t *testing.T) {
	var b bytes.Buffer
	progress := progressLine(&b, time.Now().Add(-time.Second))
	for i := 1; i <= 3; i++ {
		progress(codeindex.Progress{Done: i, Total: 3, Path: fmt.Sprintf("f%d.go", i)})
	}
	out := b.String()
	require.Contains(t, out, "\r\033[Kindexing 1/3 files, ")
	require.NotContains(t, out, "indexing 2/3", "updates within 100ms of the last are skipped")
	require.True(t, strings.HasSuffix(out, " files/s\n"), "the last update ends the line: %q", out)
	require.Contains(t, out, "\r\033[Kindexing 3/3 files, ")
}

func TestSearchJSONFindsTheSampleDefinitions(t *testing.T) {
	dir := indexedSample(t)
	tests := []struct {
		mode, query      string
		wantPath, wantSy string
		wantLines        [2]int
	}{
		{"bm25", "coupon discount", "pricing/pricing.go", "pricing.Discount", [2]int{13, 29}},
		{"bm25", "add a book to the cart", "cart/cart.go", "cart.(*Cart).Add", [2]int{20, 30}},
		{"vector", "shipping cost", "pricing/pricing.go", "pricing.Shipping", [2]int{31, 38}},
		{"hybrid", "subtotal price of items", "cart/cart.go", "cart.Subtotal", [2]int{32, 39}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+" "+tt.query, func(t *testing.T) {
			r := runCLI(t, "search", tt.query, "--mode", tt.mode, "--json", "--limit", "3", "--dir", dir)
			require.Equal(t, exitOK, r.code, r)
			var hits []map[string]any
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			for sc.Scan() {
				var h map[string]any
				require.NoError(t, json.Unmarshal(sc.Bytes(), &h), "line %q", sc.Text())
				hits = append(hits, h)
			}
			require.Len(t, hits, 3, r)
			for _, h := range hits {
				for _, k := range []string{"path", "start_line", "end_line", "symbol", "score"} {
					require.Contains(t, h, k)
				}
				require.False(t, filepath.IsAbs(h["path"].(string)), "path %q is not relative to the root", h["path"])
			}
			top := hits[0]
			require.Equal(t, tt.wantPath, top["path"])
			require.Equal(t, tt.wantSy, top["symbol"])
			require.Equal(t, []any{float64(tt.wantLines[0]), float64(tt.wantLines[1])}, []any{top["start_line"], top["end_line"]})
		})
	}
}

func TestCallersAndCalleesOfTheSample(t *testing.T) {
	dir := sampleDir(t)
	tests := []struct {
		cmd, name string
		want      string
	}{
		{"callers", "pricing.Discount", "cart/cart.go:46  in cart.Checkout: calls pricing.Discount\n"},
		{"callers", "Subtotal", "cart/cart.go:45  in cart.Checkout: calls cart.Subtotal\n"},
		{"callees", "cart.Checkout", "cart/cart.go:45  in cart.Checkout: calls cart.Subtotal\n" +
			"cart/cart.go:46  in cart.Checkout: calls pricing.Discount\n" +
			"cart/cart.go:51  in cart.Checkout: calls pricing.Shipping\n"},
		{"callers", "cart.Checkout", "no calls of cart.Checkout under the indexed root\n"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+" "+tt.name, func(t *testing.T) {
			r := runCLI(t, tt.cmd, tt.name, "--dir", dir)
			require.Equal(t, exitOK, r.code, r)
			require.Equal(t, tt.want, r.stdout)
		})
	}

	r := runCLI(t, "callers", "pricing.Nope", "--dir", dir)
	require.Equal(t, exitError, r.code, r)
	require.Contains(t, r.stderr, `no function named "pricing.Nope"`)
}

func TestAskOfflineRunsTheScriptedAgentOnARealIndex(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv(modelEnv, "")
	r := runCLI(t, "ask", "how are coupons applied?")
	require.Equal(t, exitOK, r.code, r)
	for _, want := range []string{
		"OFFLINE DEMO", "The model is SCRIPTED",
		"--model openai:gpt-4o", "OPENAI_API_KEY", "openai-compatible:<model>@<base URL>",
		"is not the one the script answers",
		"4 files, 13 chunks",
		"plan, iteration 1 of at most 10: 1 step(s); this iteration runs the first, then the planner plans again\n  next: Find the code that applies the coupon discount",
		"step (iteration 1): Find the code",
		`→ search_codebase {"query":"checkout coupon discount","limit":5}`,
		// The real results of the real tools:
		"pricing/pricing.go:13-29  func pricing.Discount",
		"→ read_file {\"path\":\"pricing/pricing.go\"}",
		"// Package pricing holds the shop's coupon and shipping rules.",
		"← get_callers {\"name\":\"pricing.Discount\"}:\n      cart/cart.go:46  in cart.Checkout: calls pricing.Discount",
		`finding "step_1: Find the code`,
		"decision: FINISH",
		"answer:\n## Coupon discounts at checkout",
	} {
		require.Contains(t, r.stdout, want, r)
	}
	require.NotContains(t, r.stdout, "[state after superstep", "only --verbose dumps the state")
}

func TestAskVerboseDumpsTheStateAfterEachSuperstep(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv(modelEnv, "")
	r := runCLI(t, "ask", "--verbose")
	require.Equal(t, exitOK, r.code, r)
	for _, want := range []string{
		"[state after superstep 0 (the input)]",
		"[state after superstep 1 (planner)]",
		"[state after superstep 2 (setup_executor)]",
		`"IterationCount": 1`,
		"[model call in planner: 0 tool calls",
		"[model call in executor: 1 tool calls",
	} {
		require.Contains(t, r.stdout, want, r)
	}
}

func TestReadFileIsConfinedToTheIndexedRoot(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "project")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, copySample(dir))
	require.NoError(t, os.WriteFile(filepath.Join(parent, "secret.txt"), []byte("s3cret\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(parent, "secret.txt"), filepath.Join(dir, "link.txt")))

	ix, err := codeindex.Open(t.Context(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ix.Close()) })
	cb, err := newCodebase(ix)
	require.NoError(t, err)
	byName := map[string]tools.Tool{}
	for _, tl := range cb.agentTools() {
		byName[tl.Name()] = tl
	}

	tests := []struct {
		name, tool, args string
		outside          bool
		want             string
	}{
		{"a file of the root", "read_file", `{"path":"pricing/pricing.go","start_line":2,"end_line":2}`, false, "package pricing"},
		{"dot-dot", "read_file", `{"path":"../secret.txt"}`, true, ""},
		{"absolute path", "read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(parent, "secret.txt")), true, ""},
		{"symlink out of the root", "read_file", `{"path":"link.txt"}`, true, ""},
		{"list the root", "list_directory", `{}`, false, "pricing/"},
		{"list the parent", "list_directory", `{"path":".."}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := byName[tt.tool].Call(t.Context(), json.RawMessage(tt.args))
			if tt.outside {
				var oe *tools.OutsideWorkspaceError
				require.ErrorAs(t, err, &oe)
				require.NotContains(t, out, "s3cret")
				return
			}
			require.NoError(t, err)
			require.Contains(t, out, tt.want)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Setenv(modelEnv, "")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, exitUsage, "Usage:"},
		{"unknown command", []string{"bogus"}, exitUsage, `coderag: unknown command "bogus"`},
		{"search without a query", []string{"search"}, exitUsage, "want one query, got 0 arguments"},
		{"search with a bad mode", []string{"search", "x", "--mode", "fuzzy"}, exitUsage, `--mode "fuzzy": want bm25, vector or hybrid`},
		{"search with a bad flag", []string{"search", "x", "--nope"}, exitUsage, "flag provided but not defined: -nope"},
		{"search of a directory with no index", []string{"search", "x", "--dir", t.TempDir()}, exitError, "has no index"},
		{"callers without a name", []string{"callers"}, exitUsage, "want one function name"},
		{"ask about a directory with no model", []string{"ask", "why?", "--dir", t.TempDir()}, exitUsage, "no model configured for"},
		{"graph with an argument", []string{"graph", "x"}, exitUsage, "want no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.args...)
			require.Equal(t, tt.code, r.code, r)
			require.Contains(t, r.stderr, tt.want, r)
		})
	}
}

func TestGraphPrintsMermaid(t *testing.T) {
	r := runCLI(t, "graph")
	require.Equal(t, exitOK, r.code, r)
	require.True(t, strings.HasPrefix(r.stdout, "flowchart TD\n"), r)
	for _, edge := range []string{"planner --> setup_executor", "executor -.-> tools", "tools --> executor", "refinery -.-> synthesizer"} {
		require.Contains(t, r.stdout, edge)
	}
}

// chatServer is an OpenAI-compatible chat-completions server that answers
// the n-th request with the n-th reply, as server-sent events when the
// request asks for a stream.
type chatServer struct {
	mu       sync.Mutex
	replies  []llm.Reply
	requests []map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, body)
	s.mu.Unlock()
	if n >= len(s.replies) {
		http.Error(w, "script exhausted", http.StatusInternalServerError)
		return
	}
	reply := s.replies[n]
	msg, finish := map[string]any{"role": "assistant", "content": reply.Text}, "stop"
	if len(reply.ToolCalls) > 0 {
		var calls []any
		for i, c := range reply.ToolCalls {
			calls = append(calls, map[string]any{"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.FunctionCall.Name, "arguments": c.FunctionCall.Arguments}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	id := fmt.Sprintf("chatcmpl-%d", n)
	if stream, _ := body["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "model": "test-model", "usage": usage,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []map[string]any{
		{"choices": []any{map[string]any{"index": 0, "delta": msg}}},
		{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
		{"choices": []any{}, "usage": usage},
	} {
		chunk["id"], chunk["object"], chunk["model"] = id, "chat.completion.chunk", "test-model"
		data, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func TestAskWithAModelOverHTTP(t *testing.T) {
	dir := sampleDir(t)
	srv := &chatServer{replies: []llm.Reply{
		{Text: `["Find the shipping rule"]`},
		{ToolCalls: []llms.ToolCall{state.ToolCall("call_a", "get_callers", `{"name":"pricing.Shipping"}`)}},
		{Text: "Shipping is called by cart.Checkout."},
		{Text: `{"decision":"FINISH","reason":"enough"}`},
		{Text: "Checkout adds pricing.Shipping."},
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	r := runCLI(t, "ask", "Who computes shipping?", "--dir", dir, "--model", "openai-compatible:test-model@"+ts.URL+"/v1")
	require.Equal(t, exitOK, r.code, r)
	require.NotContains(t, r.stdout, "SCRIPTED")
	require.Contains(t, r.stdout, "← get_callers {\"name\":\"pricing.Shipping\"}:\n      cart/cart.go:51  in cart.Checkout: calls pricing.Shipping", r)
	require.Contains(t, r.stdout, "answer:\nCheckout adds pricing.Shipping.", r)

	// The executor's model was offered the five tools.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.requests, 5)
	var names []string
	for _, tl := range srv.requests[1]["tools"].([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	require.ElementsMatch(t, []string{"search_codebase", "read_file", "list_directory", "get_callers", "get_callees"}, names)
	// The tool's real result went back to the model.
	require.Contains(t, fmt.Sprint(srv.requests[2]["messages"]), "cart/cart.go:51  in cart.Checkout: calls pricing.Shipping")
}
