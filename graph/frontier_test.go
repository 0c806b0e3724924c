package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type frontierState struct {
	Ran state.Append[string]
}

// Static edges are declared in any order, repeated, and mixed with End:
// each target runs once, the writes of a step merge by node name.
func TestEdgesDeclaredOutOfOrderRepeatedOrToEndRunEachTargetOnceByName(t *testing.T) {
	build := func(t *testing.T, opts ...graph.CompileOption) *graph.Graph[frontierState] {
		t.Helper()
		b := graph.New[frontierState]()
		for _, n := range []string{"c", "a", "b", "z", "y"} {
			b.AddNode(n, func(ctx context.Context, s frontierState) (frontierState, error) {
				return frontierState{Ran: state.Items(n)}, nil
			})
		}
		b.AddEdge(graph.Start, "c").AddEdge(graph.Start, "a").AddEdge(graph.Start, "b").AddEdge(graph.Start, "a")
		b.AddEdge("a", "z").AddEdge("a", graph.End).AddEdge("a", "y").AddEdge("a", "z")
		b.AddEdge("b", "y").AddEdge("c", graph.End).AddEdge("y", graph.End).AddEdge("z", graph.End)
		g, err := b.Compile(opts...)
		require.NoError(t, err)
		return g
	}
	want := []string{"a", "b", "c", "y", "z"}

	t.Run("in one run", func(t *testing.T) {
		out, err := build(t).Invoke(t.Context(), frontierState{})
		require.NoError(t, err)
		require.Equal(t, want, out.Ran.Get())
	})
	t.Run("paused before the second step and resumed", func(t *testing.T) {
		g := build(t, graph.WithCheckpointer(checkpoint.NewMemory()))
		th := graph.WithThread("t")
		out, err := g.Invoke(t.Context(), frontierState{}, th, graph.WithInterruptBefore("y"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"y"}, intr.Before)
		require.Equal(t, want[:3], out.Ran.Get())
		snap, err := g.GetState(t.Context(), th)
		require.NoError(t, err)
		require.Equal(t, []string{"y", "z"}, snap.Next)
		out, err = g.Resume(t.Context(), graph.Command[frontierState]{}, th, graph.WithInterruptBefore())
		require.NoError(t, err)
		require.Equal(t, want, out.Ran.Get())
	})
}
