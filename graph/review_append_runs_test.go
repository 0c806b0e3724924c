package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Runs given one input whose list has spare room in its array (a former
// run's output, kept by the user) run concurrently, each appending its own
// items: every output is its run's items, and the kept value reads the
// same items throughout; so does it while forks of an old checkpoint
// append to the list that checkpoint had.
func TestRunsSharingAnInputListEachAppendTheirOwnAndTheKeptValueStays(t *testing.T) {
	type S struct {
		Tag state.Value[string]
		L   state.Append[string]
	}
	b := graph.New[S]()
	b.AddNode("one", func(_ context.Context, s S) (S, error) {
		return S{L: state.Items(s.Tag.Get() + "-1")}, nil
	})
	b.AddNode("two", func(_ context.Context, s S) (S, error) {
		return S{L: state.Items(s.Tag.Get()+"-2", s.Tag.Get()+"-3")}, nil
	})
	b.AddEdge(graph.Start, "one")
	b.AddEdge("one", "two")
	saver := checkpoint.NewMemory()
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)

	kept, err := g.Invoke(t.Context(), S{Tag: state.Set("k")}, graph.WithThread("first"))
	require.NoError(t, err)
	want := []string{"k-1", "k-2", "k-3"}
	require.Equal(t, want, kept.L.Get())

	const runs = 12
	outs := make([][]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			in := kept
			in.Tag = state.Set(fmt.Sprint("r", i))
			out, err := g.Invoke(t.Context(), in, graph.WithThread(fmt.Sprint("run", i)))
			if err == nil {
				outs[i] = out.L.Get()
			}
			require.Equal(t, want, kept.L.Get())
		})
	}
	wg.Wait()
	for i, got := range outs {
		r := fmt.Sprint("r", i)
		// (An input's list is not a write: the run starts from none.)
		require.Equal(t, []string{r + "-1", r + "-2", r + "-3"}, got)
	}
	require.Equal(t, want, kept.L.Get())

	// A fork of the first thread's checkpoint after "one" appends to the
	// list it had then, not to what the thread went on to.
	var afterOne string
	for snap, err := range g.History(t.Context(), "first") {
		require.NoError(t, err)
		if len(snap.Values.L.Get()) == 1 {
			afterOne = snap.CheckpointID
			break
		}
	}
	require.NotEmpty(t, afterOne)
	for range 3 { // one after another: a thread runs one run at a time
		forked, err := g.Resume(t.Context(), graph.Command[S]{}, graph.WithThread("first"), graph.WithCheckpointID(afterOne))
		require.NoError(t, err)
		require.Equal(t, []string{"k-1", "k-2", "k-3"}, forked.L.Get())
		require.Equal(t, want, kept.L.Get())
	}
	require.Equal(t, want, kept.L.Get())
}
