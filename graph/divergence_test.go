package graph_test

// Places where an outside differential test against LangGraph.js
// 1.7.3 found this engine answering differently; each test states
// LangGraph's answer.

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// The recursion limit given to the parent's run bounds the subgraph's run
// too (LangGraph.js passes recursionLimit down with the config): a
// subgraph that loops for ever stops with a RecursionError at the
// parent's limit, not at the default.
func TestRecursionLimitOfTheParentRunBoundsASubgraph(t *testing.T) {
	sb := graph.New[deadEndState]()
	loops := 0
	sb.AddNode("spin", func(ctx context.Context, s deadEndState) (deadEndState, error) {
		loops++
		return logNode("spin")(ctx, s)
	})
	sb.AddEdge(graph.Start, "spin")
	sb.AddConditionalEdges("spin", func(ctx context.Context, s deadEndState) (string, error) {
		if s.Log.Len() >= 100 {
			return graph.End, nil
		}
		return "spin", nil
	})
	sub, err := sb.Compile()
	require.NoError(t, err)

	pb := graph.New[deadEndState]()
	pb.AddCommandNode("child", graph.Subgraph[deadEndState, deadEndState](sub, nil, nil))
	pb.AddEdge(graph.Start, "child")
	parent, err := pb.Compile()
	require.NoError(t, err)

	_, err = parent.Invoke(t.Context(), deadEndState{}, graph.WithRecursionLimit(6))
	var rec *graph.RecursionError
	require.ErrorAs(t, err, &rec)
	require.Equal(t, 6, rec.Limit)
	require.Less(t, loops, 10, "the subgraph stopped near the parent's limit")
}

// A subgraph compiled with a recursion limit of its own keeps it.
func TestASubgraphsOwnRecursionLimitWins(t *testing.T) {
	sb := graph.New[deadEndState]()
	sb.AddNode("spin", logNode("spin"))
	sb.AddEdge(graph.Start, "spin")
	sb.AddConditionalEdges("spin", func(ctx context.Context, s deadEndState) (string, error) {
		if s.Log.Len() >= 8 {
			return graph.End, nil
		}
		return "spin", nil
	})
	sub, err := sb.Compile(graph.WithRunDefaults(graph.WithRecursionLimit(20)))
	require.NoError(t, err)
	pb := graph.New[deadEndState]()
	pb.AddCommandNode("child", graph.Subgraph[deadEndState, deadEndState](sub, nil, nil))
	pb.AddEdge(graph.Start, "child")
	parent, err := pb.Compile()
	require.NoError(t, err)

	out, err := parent.Invoke(t.Context(), deadEndState{}, graph.WithRecursionLimit(3))
	require.NoError(t, err)
	require.Equal(t, 8, out.Log.Len())
}

// A task that interrupted stays pending in the snapshot when a sibling of
// the same step failed: a UI built on GetState shows the question beside
// the failure, as LangGraph's does.
func TestGetStateKeepsAnInterruptBesideAFailedSibling(t *testing.T) {
	asked := make(chan struct{})
	b := graph.New[deadEndState]()
	b.AddNode("ask", func(ctx context.Context, s deadEndState) (deadEndState, error) {
		defer close(asked)
		if _, err := graph.Interrupt(ctx, "ok?"); err != nil {
			return s, err
		}
		return logNode("ask")(ctx, s)
	})
	boom := errors.New("boom")
	b.AddNode("boom", func(ctx context.Context, s deadEndState) (deadEndState, error) {
		select {
		case <-asked:
		case <-ctx.Done():
		}
		return s, boom
	})
	b.AddEdge(graph.Start, "ask").AddEdge(graph.Start, "boom")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), deadEndState{}, th)
	require.ErrorIs(t, err, boom)

	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the question is still pending")
	require.Equal(t, "ok?", snap.Interrupts[0].Value)
	require.ElementsMatch(t, []string{"ask", "boom"}, snap.Next)
}

// A replay from an older checkpoint (Resume with WithCheckpointID) saves
// its fork one step after the checkpoint it copies, and the steps after it
// count on from there: LangGraph's history reads loop@4, loop@3, fork@2
// for a replay of the checkpoint of step 1.
func TestReplayNumbersItsForkAndStepsAsLangGraphDoes(t *testing.T) {
	b := graph.New[deadEndState]()
	b.AddNode("a", logNode("a"))
	b.AddNode("b", logNode("b"))
	b.AddNode("c", logNode("c"))
	b.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), deadEndState{}, th)
	require.NoError(t, err)
	var at *graph.Snapshot[deadEndState]
	for s, err := range g.History(t.Context(), "t") {
		require.NoError(t, err)
		if s.Metadata.Step == 1 {
			at = s
		}
	}
	require.NotNil(t, at)
	require.Equal(t, []string{"b"}, at.Next)

	_, err = g.Resume(t.Context(), graph.Command[deadEndState]{}, th, graph.WithCheckpointID(at.CheckpointID))
	require.NoError(t, err)
	var got []string
	for s, err := range g.History(t.Context(), "t", graph.WithLimit(3)) {
		require.NoError(t, err)
		got = append(got, s.Metadata.Source+"@"+itoa(s.Metadata.Step))
	}
	require.Equal(t, []string{"loop@4", "loop@3", "fork@2"}, got)
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// GetState at an older checkpoint shows the tasks of the step that
// followed it as done, with their writes — for a step of one task as for
// a step of two (LangGraph's tasks[].result: a historic snapshot of a
// straight a → b → c run shows b's result).
func TestGetStateAtAnOlderCheckpointShowsItsTasksDone(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *graph.Builder[deadEndState])
		step  int
		tasks map[string]string // task name → its writes
	}{
		{
			name: "one task",
			build: func(b *graph.Builder[deadEndState]) {
				b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
				b.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c")
			},
			step:  1,
			tasks: map[string]string{"b": `{Log: {"updates":["b"]}}`},
		},
		{
			name: "two tasks",
			build: func(b *graph.Builder[deadEndState]) {
				b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c")).AddNode("d", logNode("d"))
				b.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("a", "c").AddEdge("b", "d").AddEdge("c", "d")
			},
			step:  1,
			tasks: map[string]string{"b": `{Log: {"updates":["b"]}}`, "c": `{Log: {"updates":["c"]}}`},
		},
		{
			name: "the input's task",
			build: func(b *graph.Builder[deadEndState]) {
				b.AddNode("a", logNode("a"))
				b.AddEdge(graph.Start, "a")
			},
			step:  0,
			tasks: map[string]string{"a": `{Log: {"updates":["a"]}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := graph.New[deadEndState]()
			tt.build(b)
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), deadEndState{}, graph.WithThread("t"))
			require.NoError(t, err)
			var at *graph.Snapshot[deadEndState]
			for s, err := range g.History(t.Context(), "t") {
				require.NoError(t, err)
				if s.Metadata.Step == tt.step {
					at = s
				}
			}
			require.NotNil(t, at)
			snap, err := g.GetState(t.Context(), graph.WithThread("t"), graph.WithCheckpointID(at.CheckpointID))
			require.NoError(t, err)
			for _, s := range []*graph.Snapshot[deadEndState]{at, snap} {
				got := map[string]string{}
				for _, tk := range s.Tasks {
					require.True(t, tk.Done, "task %s", tk.Name)
					got[tk.Name] = tk.Writes.String()
				}
				require.Equal(t, tt.tasks, got)
			}
		})
	}
}
