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

type pauseState struct {
	Log state.Append[string]
}

// newPauser compiles START → ask → END, where ask waits for a string.
func newPauser(t *testing.T, opts ...graph.CompileOption) *graph.Graph[pauseState] {
	t.Helper()
	b := graph.New[pauseState]()
	b.AddNode("ask", func(ctx context.Context, s pauseState) (pauseState, error) {
		v, err := graph.InterruptAs[string](ctx, "ok?")
		if err != nil {
			return pauseState{}, err
		}
		return pauseState{Log: state.Items("answer " + v)}, nil
	})
	b.AddEdge(graph.Start, "ask")
	b.AddEdge("ask", graph.End)
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(checkpoint.NewMemory())}, opts...)...)
	require.NoError(t, err)
	return g
}

func pauseInput(s string) pauseState { return pauseState{Log: state.Items(s)} }

// Without RefuseInputWhileInterrupted, new input on a paused thread drops
// the pending interrupt, as in LangGraph.
func TestNewInputOnAPausedThreadDropsTheInterrupt(t *testing.T) {
	g := newPauser(t)
	_, err := g.Invoke(t.Context(), pauseInput("first"), graph.WithThread("t"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	_, err = g.Invoke(t.Context(), pauseInput("second"), graph.WithThread("t"))
	require.ErrorAs(t, err, new(*graph.Interrupted)) // asks again, for the new input
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, []string{"first", "second"}, snap.Values.Log.Get())
}

// With RefuseInputWhileInterrupted, new input on a paused thread fails
// with a *PendingInterruptError naming the interrupt, nothing is written,
// and Resume still answers it.
func TestRefuseInputWhileInterruptedKeepsTheInterrupt(t *testing.T) {
	g := newPauser(t, graph.WithRunDefaults(graph.RefuseInputWhileInterrupted()))
	_, err := g.Invoke(t.Context(), pauseInput("first"), graph.WithThread("t"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	before, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), pauseInput("second"), graph.WithThread("t"))
	perr, ok := errors.AsType[*graph.PendingInterruptError](err)
	require.True(t, ok, "want *graph.PendingInterruptError, got %v", err)
	require.Equal(t, before.Interrupts, perr.Interrupts)
	require.ErrorContains(t, err, `thread "t" waits for answers to interrupt`)
	after, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, before.CheckpointID, after.CheckpointID)

	out, err := g.Resume(t.Context(), graph.Command[pauseState]{Resume: "yes"}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, []string{"first", "answer yes"}, out.Log.Get())
	// A thread that is not paused, or a new one, takes input.
	_, err = g.Invoke(t.Context(), pauseInput("third"), graph.WithThread("t"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	_, err = g.Invoke(t.Context(), pauseInput("other"), graph.WithThread("u"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
}
