package temporal_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
	"github.com/agentgraph/agentgraph/tools"
)

// reactAgent is a ReAct agent on a scripted model: it calls two tools in
// parallel, then answers.
func reactAgent(t *testing.T, saver checkpoint.Saver) *graph.Graph[agent.ReActState] {
	t.Helper()
	type cityArgs struct {
		City string `json:"city" jsonschema:"required"`
	}
	weather := tools.New("get_weather", "Current weather of a city.",
		func(ctx context.Context, a cityArgs) (string, error) { return "sunny in " + a.City, nil })
	book := tools.New("book_trip", "Books a trip.",
		func(ctx context.Context, a cityArgs) (string, error) { return "booked a trip to " + a.City, nil })
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{
			state.ToolCall("call_1", "get_weather", `{"city":"Paris"}`),
			state.ToolCall("call_2", "book_trip", `{"city":"Paris"}`),
		}},
		llm.Reply{Text: "Booked: it is sunny in Paris."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{weather, book}, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func TestReActAgentEndsInTheStateOfInvoke(t *testing.T) {
	ctx := context.Background()
	input := agent.ReActState{Messages: state.Msgs(state.Human("Weather in Paris, and book me a trip?"))}

	out, err := reactAgent(t, checkpoint.NewMemory()).Invoke(ctx, input, graph.WithThread("t"))
	require.NoError(t, err)
	want, err := json.Marshal(out)
	require.NoError(t, err)
	require.Contains(t, string(want), "booked a trip to Paris")

	w, err := agtemporal.New("react", reactAgent(t, checkpoint.NewMemory()))
	require.NoError(t, err)
	env := newEnv()
	w.Register(env)
	in, err := w.Input("t", input)
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	var st agtemporal.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	got, err := w.Values(ctx, st)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	// Message IDs are random: compare everything else.
	require.JSONEq(t, withoutUUIDs(t, want), withoutUUIDs(t, gotJSON))
	require.Len(t, got.Messages.List(), 5)
}

// withoutUUIDs returns the JSON b without the "id" members whose values are
// UUIDs.
func withoutUUIDs(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if id, ok := v["id"].(string); ok && len(id) == 36 && strings.Count(id, "-") == 4 {
				delete(v, "id")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}
