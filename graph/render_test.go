package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type rs struct {
	N state.Value[int]
}

func noop(ctx context.Context, s rs) (rs, error) { return rs{}, nil }

func renderGraph(t *testing.T) *graph.Graph[rs] {
	t.Helper()
	b := graph.New[rs]()
	b.AddNode("plan", noop)
	b.AddNode("act", noop)
	b.AddNode("summarize", noop, graph.WithDeferred())
	b.AddEdge(graph.Start, "plan")
	b.AddConditionalEdges("plan", func(ctx context.Context, s rs) (string, error) { return "go", nil },
		graph.WithPathMap(map[string]string{"go": "act", "stop": graph.End}))
	b.AddEdge("act", "summarize")
	b.AddEdge("summarize", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

func TestMermaidLabelsConditionalEdgesWithTheirKeys(t *testing.T) {
	want := "flowchart TD\n" +
		"\t__start__([start])\n" +
		"\tact[act]\n" +
		"\tplan[plan]\n" +
		"\tsummarize[/summarize/]\n" +
		"\t__end__([end])\n" +
		"\t__start__ --> plan\n" +
		"\tact --> summarize\n" +
		"\tplan -. go .-> act\n" +
		"\tplan -. stop .-> __end__\n" +
		"\tsummarize --> __end__\n"
	require.Equal(t, want, renderGraph(t).Mermaid())
}

func TestNodesAndEdgesAreWhatTheDrawingsShow(t *testing.T) {
	g := renderGraph(t)
	require.Equal(t, []string{"act", "plan", "summarize"}, g.Nodes())
	require.Equal(t, []graph.Edge{
		{From: graph.Start, To: "plan"},
		{From: "act", To: "summarize"},
		{From: "plan", To: "act", Label: "go", Conditional: true},
		{From: "plan", To: graph.End, Label: "stop", Conditional: true},
		{From: "summarize", To: graph.End},
	}, g.Edges())
}

func TestStringListsOneEdgePerLine(t *testing.T) {
	want := "__start__ -> plan\nact -> summarize\nplan -?-> act [go]\nplan -?-> __end__ [stop]\nsummarize -> __end__\n"
	require.Equal(t, want, renderGraph(t).String())
}

func TestCompileReportsEveryProblemNamingNodesAndEdges(t *testing.T) {
	type bad struct {
		N     state.Value[int]
		Plain int
	}
	b := graph.New[bad]()
	b.AddNode("a", func(ctx context.Context, s bad) (bad, error) { return s, nil })
	b.AddNode("a", func(ctx context.Context, s bad) (bad, error) { return s, nil })
	b.AddNode(graph.End, func(ctx context.Context, s bad) (bad, error) { return s, nil })
	b.AddNode("x:y", func(ctx context.Context, s bad) (bad, error) { return s, nil })
	b.AddNode("lonely", func(ctx context.Context, s bad) (bad, error) { return s, nil })
	b.AddEdge("ghost", "a")
	b.AddEdge("a", "nowhere")
	_, err := b.Compile(graph.WithInterruptBefore("missing"))
	var ce *graph.CompileError
	require.True(t, errors.As(err, &ce), "got %v", err)
	for _, want := range []string{
		`node "a": added twice`,
		`node "__end__": the name is reserved`,
		`node "x:y": '|' and ':' are reserved characters in node names`,
		`edge ghost -> a: found edge starting at unknown node "ghost"`,
		`edge a -> nowhere: found edge ending at unknown node "nowhere"`,
		"graph must have an entrypoint",
		`interrupt node "missing" not found`,
		`state field bad.Plain has type int, which has no reducer`,
		`node "lonely" is unreachable from graph.Start`,
	} {
		require.Contains(t, err.Error(), want)
	}
}

func TestCheckpointsModeReportsEverySavedCheckpoint(t *testing.T) {
	b := graph.New[rs]()
	b.AddNode("one", func(ctx context.Context, s rs) (rs, error) { return rs{N: state.Set(1)}, nil })
	b.AddEdge(graph.Start, "one")
	b.AddEdge("one", graph.End)
	saver := checkpoint.NewMemory()
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	var got []graph.CheckpointInfo
	for ev, err := range g.Stream(context.Background(), rs{}, graph.WithThread("t"), graph.WithStreamModes(graph.ModeCheckpoints)) {
		require.NoError(t, err)
		got = append(got, ev.Payload.(graph.CheckpointInfo))
	}
	require.Len(t, got, 3)
	require.Equal(t, []string{"input", "loop", "loop"}, []string{got[0].Source, got[1].Source, got[2].Source})
	require.Equal(t, []string{graph.Start}, got[0].Next)
	require.Equal(t, []string{"one"}, got[1].Next)
	require.Empty(t, got[2].Next)
	require.Equal(t, got[1].ID, got[2].ParentID)
	var history []string
	for snap, err := range g.History(context.Background(), "t") {
		require.NoError(t, err)
		history = append(history, snap.CheckpointID)
	}
	require.Equal(t, []string{got[2].ID, got[1].ID, got[0].ID}, history)
}
