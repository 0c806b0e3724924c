package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// New input given from an older checkpoint forks the history there and
// numbers steps on from it, as the ordinary input path does: an input
// checkpoint one step after the one forked, the input applied in the next,
// and the nodes after that (LangGraph numbers them the same way).
func TestNewInputFromAnOlderCheckpointNumbersStepsOnFromIt(t *testing.T) {
	b := graph.New[deadEndState]()
	b.AddNode("a", logNode("a"))
	b.AddNode("b", logNode("b"))
	b.AddEdge(graph.Start, "a").AddEdge("a", "b")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), deadEndState{}, th)
	require.NoError(t, err)
	var fork *graph.Snapshot[deadEndState]
	for s, err := range g.History(t.Context(), "t") {
		require.NoError(t, err)
		if s.Metadata.Step == 0 {
			fork = s
		}
	}
	require.NotNil(t, fork)
	require.Equal(t, []string{"a"}, fork.Next)

	type step struct {
		Step   int
		Source string
		Node   string
	}
	var got []step
	for ev, err := range g.Stream(t.Context(), deadEndState{}, th, graph.WithCheckpointID(fork.CheckpointID),
		graph.WithStreamModes(graph.ModeUpdates|graph.ModeCheckpoints)) {
		require.NoError(t, err)
		switch p := ev.Payload.(type) {
		case graph.CheckpointInfo:
			got = append(got, step{Step: p.Step, Source: p.Source})
		default:
			got = append(got, step{Step: ev.Step, Node: ev.Node})
		}
	}
	require.Equal(t, []step{
		{Step: 1, Source: "input"},
		{Step: 2, Source: "loop"},
		{Step: 3, Node: "a"},
		{Step: 3, Source: "loop"},
		{Step: 4, Node: "b"},
		{Step: 4, Source: "loop"},
	}, got)
	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Equal(t, 4, snap.Metadata.Step)
}
