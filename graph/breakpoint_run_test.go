package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// chainABC is START → a → b → c → END, each node logging its name, with
// opts given at Compile.
func chainABC(t *testing.T, opts ...graph.CompileOption) *graph.Graph[deadEndState] {
	t.Helper()
	b := graph.New[deadEndState]()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, logNode(n))
	}
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", graph.End)
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// LangGraph takes interrupt_before and interrupt_after per call as well as
// at compile time; given per call, they replace the compiled ones.
func TestBreakpointsPerRun(t *testing.T) {
	t.Run("before, replacing the compiled ones", func(t *testing.T) {
		g := chainABC(t, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("a"))
		out, err := g.Invoke(t.Context(), deadEndState{}, graph.WithThread("t"), graph.WithInterruptBefore("c"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"c"}, intr.Before)
		require.Equal(t, []string{"a", "b"}, out.Log.Get())
		out, err = g.Resume(t.Context(), graph.Command[deadEndState]{}, graph.WithThread("t"), graph.WithInterruptBefore())
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, out.Log.Get())
	})
	t.Run("after every node", func(t *testing.T) {
		g := chainABC(t, graph.WithCheckpointer(checkpoint.NewMemory()))
		var intr *graph.Interrupted
		_, err := g.Invoke(t.Context(), deadEndState{}, graph.WithThread("t"), graph.WithInterruptAfter("*"))
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"a"}, intr.After)
		_, err = g.Resume(t.Context(), graph.Command[deadEndState]{}, graph.WithThread("t"), graph.WithInterruptAfter("*"))
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"b"}, intr.After)
	})
	t.Run("the compiled ones stay without the option", func(t *testing.T) {
		g := chainABC(t, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("b"))
		var intr *graph.Interrupted
		_, err := g.Invoke(t.Context(), deadEndState{}, graph.WithThread("t"), graph.WithInterruptBefore("c"))
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"b"}, intr.After, "only the before-breakpoints were replaced")
	})
	t.Run("unknown node", func(t *testing.T) {
		g := chainABC(t, graph.WithCheckpointer(checkpoint.NewMemory()))
		_, err := g.Invoke(t.Context(), deadEndState{}, graph.WithThread("t"), graph.WithInterruptBefore("nope"))
		require.ErrorContains(t, err, `interrupt node "nope" not found`)
	})
	t.Run("no checkpointer", func(t *testing.T) {
		g := chainABC(t)
		_, err := g.Invoke(t.Context(), deadEndState{}, graph.WithInterruptBefore("b"))
		require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	})
}
