package graph_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type joinState struct {
	Route  state.Value[string]
	Ran    state.Append[string]
	Joined state.Value[int]
}

// A join's progress belongs to its run: a run that ran some of the join's
// sources leaves nothing for the next run of the same graph (whose loop
// the engine may reuse), and a join of more than 64 sources counts every
// one of them.
func TestAJoinsProgressDoesNotOutliveItsRun(t *testing.T) {
	const width = 130
	b := graph.New[joinState]()
	var names []string
	for i := range width {
		name := "s" + strconv.Itoa(i)
		names = append(names, name)
		b.AddNode(name, func(context.Context, joinState) (joinState, error) {
			return joinState{Ran: state.Items(name)}, nil
		})
	}
	b.AddNode("route", func(context.Context, joinState) (joinState, error) { return joinState{}, nil })
	b.AddNode("join", func(_ context.Context, s joinState) (joinState, error) {
		return joinState{Joined: state.Set(s.Joined.Get() + 1)}, nil
	})
	b.AddEdge(graph.Start, "route")
	b.AddBranch("route", func(_ context.Context, s joinState) (graph.Route[joinState], error) {
		switch s.Route.Get() {
		case "even", "odd":
			var r graph.Route[joinState]
			for i, n := range names {
				if (i%2 == 0) == (s.Route.Get() == "even") {
					r.Nodes = append(r.Nodes, n)
				}
			}
			return r, nil
		}
		return graph.To[joinState](names...), nil
	}, graph.WithDestinations(names...))
	b.AddJoin(names, "join")
	b.AddEdge("join", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	for range 3 {
		out, err := g.Invoke(t.Context(), joinState{Route: state.Set("even")})
		require.NoError(t, err)
		require.Len(t, out.Ran.Get(), width/2)
		require.Zero(t, out.Joined.Get(), "half the sources ran: the join waits")
		out, err = g.Invoke(t.Context(), joinState{Route: state.Set("odd")})
		require.NoError(t, err)
		require.Len(t, out.Ran.Get(), width/2)
		require.Zero(t, out.Joined.Get(), "the other half ran, in another run: the join still waits")
		out, err = g.Invoke(t.Context(), joinState{Route: state.Set("all")})
		require.NoError(t, err)
		require.Len(t, out.Ran.Get(), width)
		require.Equal(t, 1, out.Joined.Get(), "all the sources ran: the join fires once")
	}
}
