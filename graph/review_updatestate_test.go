package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// UpdateState as a node runs the node's router with a context that names
// that node (also when the name was built at run time) at the update's
// step, and a context the router keeps reads so afterwards.
func TestARouterRunByUpdateStateSeesTheNodeItUpdatesAs(t *testing.T) {
	type S struct {
		L state.Append[string]
	}
	var kept []context.Context
	var seen []reviewReading
	b := graph.New[S]()
	for _, n := range []string{"a", "m", "z"} {
		b.AddNode(n, func(context.Context, S) (S, error) { return S{L: state.Items(n)}, nil })
		b.AddBranch(n, func(ctx context.Context, _ S) (graph.Route[S], error) {
			seen = append(seen, readIdentity(ctx))
			kept = append(kept, ctx)
			return graph.Route[S]{Nodes: []string{graph.End}}, nil
		})
	}
	b.AddEdge(graph.Start, "a")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("u")
	_, err = g.Invoke(t.Context(), S{}, th)
	require.NoError(t, err)
	for _, as := range []string{"z", fmt.Sprint("m"), "a"} {
		seen, kept = nil, nil
		snap, err := g.GetState(t.Context(), th)
		require.NoError(t, err)
		_, err = g.UpdateState(t.Context(), S{L: state.Items("upd")}, as, th)
		require.NoError(t, err)
		require.Len(t, seen, 1)
		require.Equal(t, as, seen[0].name)
		require.Equal(t, snap.Metadata.Step+1, seen[0].step)
		require.NotEmpty(t, seen[0].id)
		require.Equal(t, seen[0], readIdentity(kept[0]))
	}
}
