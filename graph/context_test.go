package graph_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type ctxKey struct{}

type ctxLoop struct {
	N     state.Value[int]
	Steps state.Append[int]
	Nodes state.Append[string]
}

// A node's context may be read by goroutines the node started after the
// node returned (an HTTP client's, say) while the run goes on: the runtime
// must never write to a context it handed out (run under -race), and each
// node must still see its own step and name.
func TestContextReadAfterNodeReturnsWhileRunContinues(t *testing.T) {
	const steps = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	node := func(ctx context.Context, s ctxLoop) (ctxLoop, error) {
		wg.Go(func() {
			// A few reads, interleaved with the run's next steps; the race
			// detector needs no overlap in time, only no synchronisation.
			for range 50 {
				select {
				case <-stop:
					return
				default:
				}
				_ = ctx.Err()
				_ = ctx.Value(ctxKey{})
				_ = ctx.Done()
				runtime.Gosched()
			}
		})
		return ctxLoop{N: state.Set(s.N.Get() + 1), Steps: state.Items(graph.Step(ctx)), Nodes: state.Items(graph.NodeName(ctx))}, nil
	}
	g, err := graph.New[ctxLoop]().
		AddNode("a", node).AddNode("b", node).
		AddEdge(graph.Start, "a").AddEdge("a", "b").
		AddConditionalEdges("b", func(_ context.Context, s ctxLoop) (string, error) {
			if s.N.Get() < steps {
				return "a", nil
			}
			return graph.End, nil
		}, graph.WithDestinations("a", graph.End)).
		Compile()
	require.NoError(t, err)
	ctx := context.WithValue(t.Context(), ctxKey{}, "v")
	out, err := g.Invoke(ctx, ctxLoop{})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.Len(t, out.Steps.Get(), steps)
	for i, st := range out.Steps.Get() {
		require.Equal(t, i+1, st, "the step node %d saw", i)
		require.Equal(t, []string{"a", "b"}[i%2], out.Nodes.Get()[i])
	}
}

// Tasks that only compute (never block) still spread over the cores once
// a step takes longer than the supervisor's period.
func TestCPUBoundTasksRunInParallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	var running, most atomic.Int32
	work := func(_ context.Context, s ctxLoop) (ctxLoop, error) {
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		deadline := time.Now().Add(20 * time.Millisecond)
		x := 0
		for time.Now().Before(deadline) {
			x++ // busy: never blocks
		}
		running.Add(-1)
		return ctxLoop{Steps: state.Items(x & 1)}, nil
	}
	b := graph.New[ctxLoop]()
	for _, name := range []string{"a", "b", "c", "d"} {
		b.AddNode(name, work).AddEdge(graph.Start, name).AddEdge(name, graph.End)
	}
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), ctxLoop{})
	require.NoError(t, err)
	require.Len(t, out.Steps.Get(), 4)
	require.GreaterOrEqual(t, most.Load(), int32(2), "at most one task ran at a time")
}
