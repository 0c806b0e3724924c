package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type deadEndState struct {
	Log state.Append[string]
}

func logNode(name string) graph.NodeFunc[deadEndState] {
	return func(ctx context.Context, s deadEndState) (deadEndState, error) {
		var out deadEndState
		out.Log.Append(name)
		return out, nil
	}
}

// In LangGraph a node without outgoing edges compiles and ends its branch
// of the run: the common shapes are a node reached only by a Command's
// Goto, and the last node of a chain.
func TestNodeWithoutOutgoingEdgeEndsItsBranch(t *testing.T) {
	t.Run("reached by Goto", func(t *testing.T) {
		b := graph.New[deadEndState]()
		b.AddCommandNode("route", func(ctx context.Context, s deadEndState) (graph.Command[deadEndState], error) {
			var c graph.Command[deadEndState]
			c.Update.Log.Append("route")
			c.Goto = []string{"finish"}
			return c, nil
		}, graph.WithDestinations("finish"))
		b.AddNode("finish", logNode("finish"))
		b.AddEdge(graph.Start, "route")
		g, err := b.Compile()
		require.NoError(t, err)
		out, err := g.Invoke(t.Context(), deadEndState{})
		require.NoError(t, err)
		require.Equal(t, []string{"route", "finish"}, out.Log.Get())
	})
	t.Run("end of a chain beside a longer branch", func(t *testing.T) {
		b := graph.New[deadEndState]()
		b.AddNode("a", logNode("a"))
		b.AddNode("short", logNode("short"))
		b.AddNode("long1", logNode("long1"))
		b.AddNode("long2", logNode("long2"))
		b.AddEdge(graph.Start, "a")
		b.AddEdge("a", "short")
		b.AddEdge("a", "long1")
		b.AddEdge("long1", "long2")
		g, err := b.Compile()
		require.NoError(t, err)
		out, err := g.Invoke(t.Context(), deadEndState{})
		require.NoError(t, err)
		require.Equal(t, []string{"a", "long1", "short", "long2"}, out.Log.Get())
	})
	t.Run("unreachable is still refused", func(t *testing.T) {
		b := graph.New[deadEndState]()
		b.AddNode("a", logNode("a"))
		b.AddNode("island", logNode("island"))
		b.AddEdge(graph.Start, "a")
		_, err := b.Compile()
		require.ErrorContains(t, err, `node "island" is unreachable from graph.Start`)
	})
}
