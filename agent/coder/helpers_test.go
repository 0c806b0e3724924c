package coder_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

var errBoom = errors.New("boom")

func text(s string) llm.Reply { return llm.Reply{Text: s} }

// patch is a model reply calling file_patch once, with a summary.
func patch(path, oldText, newText, summary string) llm.Reply {
	return llm.Reply{Text: summary, ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{
		Name: "file_patch", Arguments: mustJSON(map[string]string{"path": path, "old_text": oldText, "new_text": newText})}}}}
}

// write is a model reply calling file_write once.
func write(path, content string) llm.Reply {
	return llm.Reply{Text: "wrote " + path, ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{
		Name: "file_write", Arguments: mustJSON(map[string]string{"path": path, "content": content})}}}}
}

// buggySum is calc.go with an off-by-one bug: it skips the first element.
const buggySum = `package calc

// Sum returns the sum of xs.
func Sum(xs []int) int {
	total := 0
	for i := 1; i < len(xs); i++ {
		total += xs[i]
	}
	return total
}
`

// goSample writes a tiny Go module whose test fails (Sum skips the first
// element) and returns its directory.
func goSample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "go.mod", "module example.com/calc\n\ngo 1.22\n")
	writeFile(t, dir, "calc.go", buggySum)
	writeFile(t, dir, "calc_test.go", `package calc

import "testing"

func TestSum(t *testing.T) {
	if got := Sum([]int{1, 2, 3}); got != 6 {
		t.Fatalf("Sum = %d, want 6", got)
	}
}
`)
	writeFile(t, dir, "README.md", "# calc\n\nA calculator.\n")
	return dir
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(b)
}

// newAgent builds an agent on the sample with the sandbox off (the tests
// run commands they control) and fails the test on error.
func newAgent(t *testing.T, model llm.Model, dir string, opts ...coder.Option) *coder.Agent {
	t.Helper()
	opts = append([]coder.Option{coder.WithToolOptions(tools.WithSandbox(tools.SandboxOff))}, opts...)
	a, err := coder.New(model, dir, opts...)
	require.NoError(t, err)
	return a
}

// customEvents runs request on thread through Stream and returns the
// agent's own events, in order, and the result.
func customEvents(t *testing.T, a *coder.Agent, thread, request string) ([]any, coder.Result) {
	t.Helper()
	var out []any
	for ev, err := range a.Stream(t.Context(), thread, request) {
		require.NoError(t, err)
		if ev.Mode == graph.ModeCustom {
			switch ev.Payload.(type) {
			case coder.IntentChosen, coder.ToolAction, coder.TestRun, coder.MemoryHit, coder.Finished:
				out = append(out, ev.Payload)
			}
		}
	}
	res, err := a.Last(t.Context(), thread)
	require.NoError(t, err)
	return out, res
}

// messagesText joins the text of the messages of a scripted call.
func messagesText(c llm.Call) string {
	s := ""
	for _, m := range c.Messages {
		s += m.Text() + "\n"
	}
	return s
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func graphThread(id string) graph.RunOption { return graph.WithThread(id) }

// feedback lists the working memory's feedback of res as "node kind: text".
func feedback(res coder.Result) []string {
	var out []string
	for _, f := range res.Working.Feedback {
		out = append(out, f.Node+" "+f.Kind+": "+f.Text)
	}
	return out
}

// TestMain trusts the metadata of files changed just now: the tests write
// a file and ask about it at once, and expect the session's file cache to
// serve it the second time (TestTheFileCacheSeesAnEditThatKeepsSizeAndTime
// tests the racy window itself).
func TestMain(m *testing.M) {
	coder.SetRacyWindow(0)
	os.Exit(m.Run())
}
