package graph_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// A thread whose step passes 2^26 (the last step a task header packs; a
// checkpoint at such a step is written here rather than run to) goes on
// across the limit: its pulled and sent tasks name their nodes, read their
// steps and compute the stored IDs on both sides of it, and contexts kept
// from both sides read the same values for ever.
func TestTasksAcrossStep2To26KeepTheirNamesStepsAndIDs(t *testing.T) {
	type S struct {
		N state.Sum[int]
	}
	const start = 1<<26 - 4 // the steps run are start+1 … start+6
	type reading struct {
		reviewReading
		push bool
	}
	var (
		mu       sync.Mutex
		readings []reading
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		changed  []string
	)
	keep := func(ctx context.Context, push bool) {
		r := readIdentity(ctx)
		mu.Lock()
		readings = append(readings, reading{r, push})
		mu.Unlock()
		wg.Go(func() {
			for {
				if now := readIdentity(ctx); now != r {
					mu.Lock()
					changed = append(changed, now.name)
					mu.Unlock()
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
		})
	}
	b := graph.New[S]()
	b.AddNode("loop", func(ctx context.Context, s S) (S, error) {
		keep(ctx, false)
		return S{N: state.Delta(1)}, nil
	})
	b.AddNode("side", func(ctx context.Context, s S) (S, error) {
		keep(ctx, true)
		return S{}, nil
	})
	b.AddEdge(graph.Start, "loop")
	b.AddBranch("loop", func(_ context.Context, s S) (graph.Route[S], error) {
		if s.N.Get() >= 6 {
			return graph.Route[S]{Nodes: []string{graph.End}}, nil
		}
		return graph.Route[S]{Nodes: []string{"loop"}, Sends: []graph.Send[S]{{Node: "side"}}}, nil
	})
	saver := checkpoint.NewMemory()
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), S{}, graph.WithThread("seed"), graph.WithInterruptBefore("loop"))
	var in *graph.Interrupted
	require.ErrorAs(t, err, &in)
	mu.Lock()
	readings = nil
	mu.Unlock()

	// The paused checkpoint, moved to a thread of its own at a far step.
	tup, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: "seed"})
	require.NoError(t, err)
	cp := tup.Checkpoint.Clone()
	cp.ThreadID, cp.ParentID, cp.Fork = "far", "", true
	cp.Metadata.Step = start
	require.NoError(t, saver.Put(t.Context(), cp))

	out, err := g.Resume(t.Context(), graph.Command[S]{}, graph.WithThread("far"))
	require.NoError(t, err)
	require.Equal(t, 6, out.N.Get())

	before := map[int]string{} // the checkpoint each step starts from
	for snap, err := range g.History(t.Context(), "far") {
		require.NoError(t, err)
		before[snap.Metadata.Step+1] = snap.CheckpointID
	}
	mu.Lock()
	defer mu.Unlock()
	steps := map[int]int{}
	for _, r := range readings {
		steps[r.step]++
		cpID, ok := before[r.step]
		require.True(t, ok, "step %d", r.step)
		name := "loop"
		if r.push {
			name = "side"
		}
		require.Equal(t, name, r.name)
		require.Equal(t, wantTaskID(cpID, "", r.step, name, r.push, 0), r.id, "%s at step %d", name, r.step)
	}
	for s := start + 1; s <= start+6; s++ {
		require.NotZero(t, steps[s], "step %d ran", s)
	}
	mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	require.Empty(t, changed)
}
