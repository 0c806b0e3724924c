package middleware_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func weatherTool() tools.Tool {
	return tools.New("weather", "Weather of a city.", func(ctx context.Context, a cityArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
}

func callWeather(city string) llm.Reply {
	return llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("", "weather", `{"city":"`+city+`"}`)}}
}

func TestModelCallLimitEndsAReActRun(t *testing.T) {
	script := llm.NewScripted(callWeather("Oslo"), callWeather("Rome"), llm.Reply{Text: "done"})
	model := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(2), middleware.WithMessageOnLimit()))
	g, err := agent.NewReAct(model, []tools.Tool{weatherTool()}, agent.WithCompileOptions(middleware.RunScope()))
	require.NoError(t, err)

	out, err := g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("weather?"))})
	require.NoError(t, err, "the limit ends the run normally")
	last, _ := out.Messages.Last()
	require.Contains(t, last.Text(), "limit of 2 model calls per run")
	require.Len(t, script.Calls(), 2)

	// The next run counts from zero.
	out, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("and now?"))})
	require.NoError(t, err)
	last, _ = out.Messages.Last()
	require.Equal(t, "done", last.Text())
}

func TestModelCallLimitPerThreadOfAGraph(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"}, llm.Reply{Text: "2"}, llm.Reply{Text: "3"})
	model := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithThreadLimit(2)))
	g, err := agent.NewReAct(model, nil, agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithCompileOptions(middleware.RunScope()))
	require.NoError(t, err)
	ask := agent.ReActState{Messages: state.Msgs(state.Human("hi"))}
	for range 2 {
		_, err = g.Invoke(t.Context(), ask, graph.WithThread("t1"))
		require.NoError(t, err)
	}
	_, err = g.Invoke(t.Context(), ask, graph.WithThread("t1"))
	le, ok := errors.AsType[*middleware.CallLimitError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, middleware.ScopeThread, le.Scope)

	_, err = g.Invoke(t.Context(), ask, graph.WithThread("t2"))
	require.NoError(t, err, "another thread has its own count")
}

func TestRunScopeCountsASubgraphInItsParentsRun(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"}, llm.Reply{Text: "2"})
	model := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(1)))
	inner, err := agent.NewReAct(model, nil, agent.WithCompileOptions(middleware.RunScope()))
	require.NoError(t, err)

	b := graph.New[agent.ReActState]()
	id := func(s agent.ReActState) agent.ReActState { return s }
	b.AddCommandNode("first", graph.Subgraph(inner, id, id))
	b.AddCommandNode("second", graph.Subgraph(inner, id, id))
	b.AddEdge(graph.Start, "first")
	b.AddEdge("first", "second")
	g, err := b.Compile(middleware.RunScope())
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("hi"))})
	require.ErrorAs(t, err, new(*middleware.CallLimitError), "two subgraph runs, one run of the parent")
	require.Len(t, script.Calls(), 1)
}
