package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type branchState struct {
	Items state.Append[int]
	Last  state.Value[int]
	Sum   state.Sum[int]
}

// A step whose lone task has a branch takes, as its new state, the view its
// branch saw (the state with the task's writes merged once): every field
// ends as if merged at the step's end, and a state a router kept reads the
// same values after later steps appended to the same list.
func TestALoneTasksBranchViewIsTheStepsState(t *testing.T) {
	const steps = 20
	var kept []branchState
	b := graph.New[branchState]()
	b.AddNode("inc", func(_ context.Context, s branchState) (branchState, error) {
		n := s.Items.Len()
		return branchState{Items: state.Items(n), Last: state.Set(n), Sum: state.Delta(n)}, nil
	})
	b.AddEdge(graph.Start, "inc")
	b.AddConditionalEdges("inc", func(_ context.Context, s branchState) (string, error) {
		kept = append(kept, s)
		if s.Items.Len() < steps {
			return "inc", nil
		}
		return graph.End, nil
	}, graph.WithDestinations("inc", graph.End))
	g, err := b.Compile()
	require.NoError(t, err)
	for range 3 {
		kept = kept[:0]
		out, err := g.Invoke(context.Background(), branchState{Items: state.Items(-1)}, graph.WithRecursionLimit(100))
		require.NoError(t, err)
		want := []int{-1}
		for i := 1; i < steps; i++ { // the node appends 1, 2, …; the router stops at steps items
			want = append(want, i)
		}
		require.Equal(t, want, out.Items.Get())
		require.Equal(t, steps-1, out.Last.Get())
		require.Equal(t, (steps-1)*steps/2, out.Sum.Get())
		require.Len(t, kept, steps-1)
		for i, s := range kept {
			require.Equal(t, want[:i+2], s.Items.Get(), "the state the router saw at step %d", i+1)
			require.Equal(t, (i+1)*(i+2)/2, s.Sum.Get())
			require.Equal(t, i+1, s.Last.Get())
		}
	}
}
