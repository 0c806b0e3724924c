package graph_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type orderState struct {
	Item state.Value[int]
	Log  state.Append[string]
}

// TestMaxConcurrencyOneRunsSendsInSendOrder checks the order promised by
// WithMaxConcurrency(1), given at Compile through WithRunDefaults: each
// Send task finishes before the next starts, in the order they were sent,
// although earlier tasks take longer.
func TestMaxConcurrencyOneRunsSendsInSendOrder(t *testing.T) {
	const n = 8
	b := graph.New[orderState]()
	running := make(chan struct{}, 1)
	b.AddNode("fan", func(ctx context.Context, s orderState) (orderState, error) { return orderState{}, nil })
	b.AddNode("work", func(ctx context.Context, s orderState) (orderState, error) {
		select {
		case running <- struct{}{}:
		default:
			t.Error("two tasks ran at once")
		}
		defer func() { <-running }()
		time.Sleep(time.Duration(n-s.Item.Get()) * time.Millisecond) // earlier tasks are slower
		var out orderState
		out.Log.Append("start " + strconv.Itoa(s.Item.Get()))
		return out, nil
	})
	b.AddEdge(graph.Start, "fan")
	b.AddBranch("fan", func(ctx context.Context, s orderState) (graph.Route[orderState], error) {
		var r graph.Route[orderState]
		for i := range n {
			var arg orderState
			arg.Item.Set(i)
			r.Sends = append(r.Sends, graph.Send[orderState]{Node: "work", Arg: arg})
		}
		return r, nil
	}, graph.WithDestinations("work"))
	b.AddEdge("work", graph.End)
	g, err := b.Compile(graph.WithRunDefaults(graph.WithMaxConcurrency(1)))
	require.NoError(t, err)

	var want []string
	for i := range n {
		want = append(want, "start "+strconv.Itoa(i))
	}
	for _, stream := range []bool{false, true} {
		var out orderState
		if stream {
			for ev, err := range g.Stream(t.Context(), orderState{}, graph.WithStreamModes(graph.ModeValues)) {
				require.NoError(t, err)
				out = ev.Payload.(orderState)
			}
		} else {
			out, err = g.Invoke(t.Context(), orderState{})
			require.NoError(t, err)
		}
		require.Equal(t, want, out.Log.Get())
	}
}
