package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// TestAStreamConsumerThatPanicsLeavesNoGoroutineBehind: a loop body that
// panics on a concurrent step's first event gets its panic back, and the
// step's nodes, which emit more events than the relay buffers, neither
// block for ever on a relay nobody reads nor outlive the stream.
func TestAStreamConsumerThatPanicsLeavesNoGoroutineBehind(t *testing.T) {
	type S struct {
		Log state.Append[string]
	}
	b := graph.New[S]()
	const workers, events = 4, 200
	for i := range workers {
		name := fmt.Sprintf("w%d", i)
		b.AddNode(name, func(ctx context.Context, s S) (S, error) {
			emit := graph.StreamWriter(ctx)
			for j := range events {
				emit(j)
			}
			return S{Log: state.Items(name)}, nil
		})
		b.AddEdge(graph.Start, name)
		b.AddEdge(name, graph.End)
	}
	g, err := b.Compile()
	require.NoError(t, err)

	for _, maxConc := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("max concurrency %d", maxConc), func(t *testing.T) {
			settled := abcfNoLeak(t)
			opts := []graph.RunOption{graph.WithStreamModes(graph.ModeCustom)}
			if maxConc > 0 {
				opts = append(opts, graph.WithMaxConcurrency(maxConc))
			}
			got := func() (r any) {
				defer func() { r = recover() }()
				for ev, err := range g.Stream(context.Background(), S{}, opts...) {
					require.NoError(t, err)
					panic(fmt.Sprintf("consumer gave up at %v", ev.Payload))
				}
				return nil
			}()
			require.Equal(t, "consumer gave up at 0", got)
			settled()
		})
	}
}

// TestAStreamConsumerThatPanicsInASingleNodesStepGetsItsPanicBack: the
// panic of a loop body reached from a node's own event (the node runs on
// the stream's goroutine) is the consumer's, not the node's: it comes back
// to the consumer as it was, not as the node's failure.
func TestAStreamConsumerThatPanicsInASingleNodesStepGetsItsPanicBack(t *testing.T) {
	type S struct {
		Log state.Append[string]
	}
	b := graph.New[S]()
	b.AddNode("only", func(ctx context.Context, s S) (S, error) {
		graph.StreamWriter(ctx)("first")
		graph.StreamWriter(ctx)("second")
		return S{Log: state.Items("only")}, nil
	})
	b.AddEdge(graph.Start, "only")
	b.AddEdge("only", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	settled := abcfNoLeak(t)
	got := func() (r any) {
		defer func() { r = recover() }()
		for ev, err := range g.Stream(context.Background(), S{}, graph.WithStreamModes(graph.ModeCustom)) {
			require.NoError(t, err)
			panic(fmt.Sprintf("consumer gave up at %v", ev.Payload))
		}
		return nil
	}()
	require.Equal(t, "consumer gave up at first", got)
	settled()
}
