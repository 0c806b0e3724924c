package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type threadState struct {
	Seen state.Append[string] `json:"seen"`
}

func TestThreadIDIsTheRunsThreadInNodesAndSubgraphNodes(t *testing.T) {
	record := func(ctx context.Context, s threadState) (threadState, error) {
		s.Seen.Append(graph.ThreadID(ctx))
		return s, nil
	}
	sb := graph.New[threadState]()
	sb.AddNode("inner", record)
	sb.AddEdge(graph.Start, "inner")
	sb.AddEdge("inner", graph.End)
	sub, err := sb.Compile()
	require.NoError(t, err)

	b := graph.New[threadState]()
	b.AddNode("outer", record)
	b.AddCommandNode("sub", graph.Subgraph[threadState, threadState](sub, nil, nil))
	b.AddEdge(graph.Start, "outer")
	b.AddEdge("outer", "sub")
	b.AddEdge("sub", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), threadState{}, graph.WithThread("t-1"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-1", "t-1"}, out.Seen.Get())

	require.Empty(t, graph.ThreadID(t.Context()), "outside a node")
}
