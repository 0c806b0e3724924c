package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// kindsState has a field of each kind of package state.
type kindsState struct {
	Name  state.Value[string]
	N     state.Sum[int]
	Tags  state.Map[string, int]
	Msgs  state.Messages
	Items state.Append[string]
}

// writeKinds writes every field of kindsState: the writes a snapshot
// shows for it, whether saved or derived.
func writeKinds(_ context.Context, s kindsState) (kindsState, error) {
	var out kindsState
	out.Name.Set("b")
	out.N.Add(3)
	out.Tags.Put("x", 2)
	out.Tags.Delete("gone")
	m := state.AI("hi")
	m.ID = "m2"
	out.Msgs.Append(m)
	out.Items.Append("p", "q")
	return out, nil
}

// seedKinds gives every field a value before writeKinds runs.
func seedKinds(_ context.Context, s kindsState) (kindsState, error) {
	var out kindsState
	out.Name.Set("a")
	out.N.Add(1)
	out.Tags.Put("gone", 1)
	out.Tags.Put("keep", 1)
	m := state.Human("q")
	m.ID = "m1"
	out.Msgs.Append(m)
	out.Items.Append("o")
	return out, nil
}

func noopKinds(_ context.Context, s kindsState) (kindsState, error) { return kindsState{}, nil }

// writesOf returns the Writes History shows for the task named node.
func writesOf(t *testing.T, g *graph.Graph[kindsState], node string) graph.Writes {
	t.Helper()
	var found graph.Writes
	for s, err := range g.History(t.Context(), "t") {
		require.NoError(t, err)
		for _, tk := range s.Tasks {
			if tk.Name == node {
				require.True(t, tk.Done, "task %s at step %d", node, s.Metadata.Step)
				found = tk.Writes
			}
		}
	}
	require.NotNil(t, found, "no task %s", node)
	return found
}

// The writes derived for a step's lone task are those saved for the same
// task run beside another (which saves its pending writes), for every
// kind of field.
func TestLoneTaskWritesMatchTheSavedOnes(t *testing.T) {
	build := func(sibling bool) *graph.Graph[kindsState] {
		b := graph.New[kindsState]()
		b.AddNode("seed", seedKinds).AddNode("w", writeKinds)
		b.AddEdge(graph.Start, "seed").AddEdge("seed", "w")
		if sibling {
			b.AddNode("other", noopKinds).AddEdge("seed", "other")
		}
		g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		_, err = g.Invoke(t.Context(), kindsState{}, graph.WithThread("t"))
		require.NoError(t, err)
		return g
	}
	saved := writesOf(t, build(true), "w")
	derived := writesOf(t, build(false), "w")
	require.Equal(t, saved.String(), derived.String())
	require.Equal(t, []string{"Items", "Msgs", "N", "Name", "Tags"}, derived.Fields())
}

// History narrowed by WithBefore or WithFilter finds the checkpoint a
// lone task's step produced outside what it lists.
func TestHistoryNarrowedStillShowsTheLoneTaskDone(t *testing.T) {
	b := graph.New[kindsState]()
	b.AddNode("seed", seedKinds).AddNode("w", writeKinds)
	b.AddEdge(graph.Start, "seed").AddEdge("seed", "w")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), kindsState{}, graph.WithThread("t"))
	require.NoError(t, err)
	full := writesOf(t, g, "w").String()
	require.Contains(t, full, `Name: "b"`)
	tests := []struct {
		name string
		opts []graph.HistoryOption
	}{
		{name: "filter", opts: []graph.HistoryOption{graph.WithFilter(map[string]any{"step": 1})}},
		{name: "limit", opts: []graph.HistoryOption{graph.WithLimit(1), graph.WithBefore(latestID(t, g))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for s, err := range g.History(t.Context(), "t", tt.opts...) {
				require.NoError(t, err)
				require.Equal(t, 1, s.Metadata.Step)
				require.Len(t, s.Tasks, 1)
				require.True(t, s.Tasks[0].Done)
				require.Equal(t, full, s.Tasks[0].Writes.String())
				n++
			}
			require.Equal(t, 1, n)
		})
	}
}

func latestID(t *testing.T, g *graph.Graph[kindsState]) string {
	t.Helper()
	s, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	return s.CheckpointID
}

// A lone task that paused and was answered shows, at the checkpoint its
// step ran from, done with its writes and its interrupt, which is no
// longer pending.
func TestLoneTaskAnsweredShowsDoneWithNothingPending(t *testing.T) {
	b := graph.New[kindsState]()
	b.AddNode("ask", func(ctx context.Context, s kindsState) (kindsState, error) {
		v, err := graph.InterruptAs[string](ctx, "name?")
		if err != nil {
			return kindsState{}, err
		}
		var out kindsState
		out.Name.Set(v)
		return out, nil
	})
	b.AddEdge(graph.Start, "ask")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), kindsState{}, th)
	var paused0 *graph.Interrupted
	require.ErrorAs(t, err, &paused0)
	paused, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Len(t, paused.Interrupts, 1)
	_, err = g.Resume(t.Context(), graph.Command[kindsState]{Resume: "ana"}, th)
	require.NoError(t, err)

	snap, err := g.GetState(t.Context(), th, graph.WithCheckpointID(paused.CheckpointID))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 1)
	require.True(t, snap.Tasks[0].Done)
	require.Equal(t, `{Name: "ana"}`, snap.Tasks[0].Writes.String())
	require.Len(t, snap.Tasks[0].Interrupts, 1, "the task keeps the interrupt it raised")
	require.Empty(t, snap.Interrupts, "nothing is pending: the step went on")
}
