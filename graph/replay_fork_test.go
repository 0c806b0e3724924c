package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// A replay from an older checkpoint saves a "fork" copy of it, one step
// after it (as LangGraph numbers it), and the fork's pending writes (here
// an interrupt) belong to the tasks it runs next.
func TestReplayForkIsTheStepAfterTheCheckpointItCopies(t *testing.T) {
	b := graph.New[deadEndState]()
	b.AddNode("a", logNode("a"))
	b.AddNode("ask", func(ctx context.Context, s deadEndState) (deadEndState, error) {
		if _, err := graph.Interrupt(ctx, "ok?"); err != nil {
			return s, err
		}
		return logNode("ask")(ctx, s)
	})
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "ask")
	b.AddEdge("ask", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), deadEndState{}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	paused, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	_, err = g.Resume(t.Context(), graph.Command[deadEndState]{Resume: "yes"}, th)
	require.NoError(t, err)

	_, err = g.Resume(t.Context(), graph.Command[deadEndState]{}, th, graph.WithCheckpointID(paused.CheckpointID))
	require.ErrorAs(t, err, &intr, "the replayed node interrupts again")
	fork, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Equal(t, "fork", fork.Metadata.Source)
	require.Equal(t, paused.Metadata.Step+1, fork.Metadata.Step)
	require.Equal(t, []string{"ask"}, fork.Next)
	require.Len(t, fork.Interrupts, 1, "the fork shows the replayed task's interrupt")
}
