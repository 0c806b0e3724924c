package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/internal/samplefs"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
	stsqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

// sampleFiles is the bundled sample project, a tiny Go module with a
// failing test (its go.mod is stored as go.mod.sample, so that the go
// command does not take the folder for a module of this repository).
//
//go:embed all:testdata/sample
var sampleFiles embed.FS

// sampleRoot is the folder of the sample in sampleFiles.
const sampleRoot = "testdata/sample"

// copySample writes the sample project into dir.
func copySample(dir string) error { return samplefs.Copy(sampleFiles, sampleRoot, dir) }

// demoStep is one request of the offline demo.
type demoStep struct {
	request string
	shows   string // what the step shows, printed before it
}

// demoSteps are the demo's requests, in order: each intent once, the
// model's routing once, a cache hit, and the auto-fix loop.
var demoSteps = []demoStep{
	{"remember that I prefer table-driven tests", "a preference, routed by a pattern (no model call), kept in the persistent store"},
	{"what does Total do in cart.go?", "a question, routed by a pattern; the files are read and the model answers"},
	{"what does Total do in cart.go?", "the same question again: the query cache answers (no model call)"},
	{"the cart total comes out too low", "no pattern is confident: the model chooses the intent; then the edit, the tests and the auto-fix loop"},
	{"run go vet ./...", "a command, routed by a pattern and run in the project with a timeout (sandboxed if the machine can: see the sandbox line above)"},
}

// The sample's buggy loop and the demo model's two attempts at it.
const (
	buggyLoop   = "for i := 1; i < len(items); i++ {\n\t\ttotal += items[i].Price * items[i].Quantity\n\t}"
	wrongLoop   = "for i := 1; i <= len(items); i++ {\n\t\ttotal += items[i-1].Price\n\t}"
	correctLoop = "for _, it := range items {\n\t\ttotal += it.Price * it.Quantity\n\t}"
)

// demoModel is the scripted model of the offline demo: its replies, in
// the order the demo's requests call it.
func demoModel() *llm.Scripted {
	patch := func(summary, oldText, newText string) llm.Reply {
		args, _ := json.Marshal(map[string]string{"path": "cart.go", "old_text": oldText, "new_text": newText})
		return llm.Reply{Text: summary, ToolCalls: []llms.ToolCall{{Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "file_patch", Arguments: string(args)}}}}
	}
	return llm.NewScripted(
		// "what does Total do in cart.go?": the read node's answer.
		llm.Reply{Text: "Total (cart.go:13) returns the cart's price in cents: it should sum Price × Quantity " +
			"over the items, but its loop starts at index 1, so the first item is never counted — " +
			"which is why TestTotal (cart_test.go) fails."},
		// "the cart total comes out too low": the route node's classifier.
		llm.Reply{ToolCalls: []llms.ToolCall{{Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "choose_intent", Arguments: `{"intent":"edit","reason":"a bug report: the total is wrong, so the code needs a fix"}`}}}},
		llm.Reply{Text: `["cart.go", "cart_test.go"]`}, // the files to edit: the request names none
		// The edit node, attempt 1: a wrong fix (the tests catch it).
		patch("Start counting at the first item.", buggyLoop, wrongLoop),
		// Attempt 2, with the failure in its prompt: the right fix.
		patch("Sum every item: range over the items instead of indexing from 1.", wrongLoop, correctLoop),
	)
}

// demo runs the offline demo: the scripted model over a copy of the
// bundled sample, one request per step, in a fresh session.
func demo(ctx context.Context, o options, stdout, stderr io.Writer) int {
	if o.prompt != "" {
		fmt.Fprintf(stderr, "coder: no model configured for -p: pass --model (e.g. --model openai:gpt-4o) or set $%s\n", modelEnv)
		return exitUsage
	}
	tmp, err := os.MkdirTemp("", "coder-demo-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(tmp)
	// The project and, beside it (outside it), its memory.
	dir, mem := filepath.Join(tmp, "sample"), filepath.Join(tmp, "memory")
	if err := copySample(dir); err != nil {
		return fail(stderr, fmt.Errorf("copy the sample project: %w", err))
	}
	printDemoNotice(stdout, dir, mem)
	model := demoModel()
	o.cwd, o.session, o.memory = dir, "demo", mem
	s, err := openWith(ctx, model, o, stdout)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	for i, step := range demoSteps {
		fmt.Fprintf(stdout, "── %d/%d  %s\ncoder> %s\n", i+1, len(demoSteps), step.shows, step.request)
		if _, err := s.ask(ctx, step.request); err != nil {
			return fail(stderr, err)
		}
	}
	if n := model.Remaining(); n != 0 {
		return fail(stderr, fmt.Errorf("the demo's script has %d replies left: the agent called the model less than the demo expects", n))
	}
	fmt.Fprintf(stdout, "The demo made %d model calls, all scripted. To use a real model on your project:\n"+
		"  coder --cwd DIR --model openai:gpt-4o                 (needs OPENAI_API_KEY)\n"+
		"  coder --cwd DIR --model anthropic:claude-sonnet-4-5   (needs ANTHROPIC_API_KEY)\n"+
		"  coder --cwd DIR --model openai-compatible:<model>@<base URL>\n"+
		"or set $%s; add -p \"request\" for one request, --session NAME to keep a conversation apart.\n",
		len(model.Calls()), modelEnv)
	return exitOK
}

// printDemoNotice says that the run is the offline demo.
func printDemoNotice(w io.Writer, dir, mem string) {
	fmt.Fprintf(w, `coder: OFFLINE DEMO — no model is configured (no --model flag, no $%s).
  The model is SCRIPTED: its replies are canned and no LLM is called. Everything else is
  real: the routing, the file reads, the edits, the test runs of the auto-fix loop, the
  command, and the memory (SQLite files in %s). The project is a bundled
  sample Go module with a failing test, copied to %s (both removed at exit).

`, modelEnv, mem, dir)
}

// storeOptions are the options of the persistent store: a semantic
// index, so that a request recalls the preferences relevant to it. The
// embedder is the offline one of package llm (hashed words and character
// trigrams, no model and no network).
func storeOptions() []stsqlite.Option {
	emb := llm.NewHashingEmbedder(llm.DefaultHashingDim)
	return []stsqlite.Option{stsqlite.WithIndex(store.IndexConfig{Embedder: emb, Dims: emb.Dims(), Fields: []string{"text"}})}
}
