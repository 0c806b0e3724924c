package codur_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// workspace writes files into a new temporary directory.
func workspace(t *testing.T, files map[string]string) (string, *tools.Workspace) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	ws, err := tools.NewWorkspace(dir)
	require.NoError(t, err)
	return dir, ws
}

// build compiles Codur over dir with model as planner and as the agent
// llm:default.
func build(t *testing.T, model llm.Model, dir string, opts ...codur.Option) *graph.Graph[codur.State] {
	t.Helper()
	ws, err := tools.NewWorkspace(dir)
	require.NoError(t, err)
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: model}))
	g, err := codur.New(model, reg, codur.DefaultTools(ws), append([]codur.Option{codur.WithWorkspace(dir)}, opts...)...)
	require.NoError(t, err)
	return g
}

// runResult is a run's final state and the events its nodes wrote.
type runResult struct {
	out       codur.State
	decisions []codur.Decision
	rounds    []codur.ToolRound
	repairs   []codur.RepairAttempted
	err       error
}

// run streams a run and collects its values and custom events.
func run(t *testing.T, g *graph.Graph[codur.State], in codur.State, opts ...graph.RunOption) runResult {
	t.Helper()
	var r runResult
	opts = append(opts, graph.WithStreamModes(graph.ModeValues|graph.ModeCustom))
	for ev, err := range g.Stream(t.Context(), in, opts...) {
		if err != nil {
			r.err = err
			break
		}
		switch p := ev.Payload.(type) {
		case codur.State:
			r.out = p
		case codur.Decision:
			r.decisions = append(r.decisions, p)
		case codur.ToolRound:
			r.rounds = append(r.rounds, p)
		case codur.RepairAttempted:
			r.repairs = append(r.repairs, p)
		}
	}
	return r
}

// phases returns the phase and action of each decision.
func (r runResult) phases() []string {
	var out []string
	for _, d := range r.decisions {
		out = append(out, string(d.Phase)+":"+string(d.Action))
	}
	return out
}

func text(s string) llm.Reply { return llm.Reply{Text: s} }

func jsonText(t *testing.T, v any) llm.Reply {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return llm.Reply{Text: string(b)}
}

func nativeCall(name, args string) llm.Reply {
	return llm.Reply{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}}}
}

// preCode is a pre-plan answer that leaves a code change to planning.
var preCode = text(`{"task_type": "code_change", "confidence": 0.99, "action": "plan"}`)

// planDelegate delegates to the default agent.
var planDelegate = text(`{"action": "delegate", "agent": "llm:default", "reasoning": "code"}`)

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(b)
}
