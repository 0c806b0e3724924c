package graph_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type bubbleState struct {
	Ran state.Append[string]
}

// A compiled graph serves runs inside testing/synctest bubbles and outside
// them, in any order: nothing a run made in one (a timer of a concurrent
// step's scheduler, say) is used by a run in another, which the runtime
// refuses with a fatal error ("reset of synctest timer from outside
// bubble").
func TestAGraphRunsInsideAndOutsideSynctestBubbles(t *testing.T) {
	b := graph.New[bubbleState]()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(context.Context, bubbleState) (bubbleState, error) {
			return bubbleState{Ran: state.Items(n)}, nil
		})
		b.AddEdge(graph.Start, n)
	}
	g, err := b.Compile()
	require.NoError(t, err)
	invoke := func(t *testing.T) {
		out, err := g.Invoke(context.Background(), bubbleState{})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"a", "b", "c"}, out.Ran.Get())
	}
	// Many rounds: the pool a graph keeps its loops in may drop one.
	for range 20 {
		synctest.Test(t, invoke)
		invoke(t)
		synctest.Test(t, invoke)
		synctest.Test(t, invoke)
	}
	t.Run("bubbles at once", func(t *testing.T) {
		for i := range 8 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				for range 10 {
					synctest.Test(t, invoke)
					invoke(t)
				}
			})
		}
	})
}
