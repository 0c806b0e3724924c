package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type chatState struct {
	Messages state.Messages
	Log      state.Append[string]
	Turns    state.Value[int]
}

// UpdateAs gives an updates event's writes as a state a user reads with the
// fields' getters: the messages a node added, not an empty list.
func TestUpdateAsGivesTheMessagesANodeAdded(t *testing.T) {
	b := graph.New[chatState]()
	b.AddNode("greet", func(ctx context.Context, s chatState) (chatState, error) {
		var out chatState
		out.Messages.Append(state.AI("hello"))
		out.Log.Append("greet")
		return out, nil
	})
	b.AddNode("count", func(ctx context.Context, s chatState) (chatState, error) {
		var out chatState
		out.Turns.Set(s.Messages.Len())
		return out, nil
	})
	b.AddEdge(graph.Start, "greet").AddEdge("greet", "count")
	g, err := b.Compile()
	require.NoError(t, err)

	var in chatState
	in.Messages.Append(state.Human("hi"))
	got := map[string]chatState{}
	for ev, err := range g.Stream(t.Context(), in) {
		require.NoError(t, err)
		upd, err := graph.UpdateAs[chatState](ev)
		require.NoError(t, err)
		got[ev.Node] = upd
	}
	require.Len(t, got["greet"].Messages.List(), 1, "only the message the node added")
	require.Equal(t, "hello", got["greet"].Messages.List()[0].Text())
	require.Equal(t, []string{"greet"}, got["greet"].Log.Get())
	require.Equal(t, 0, got["greet"].Turns.Get())
	require.Empty(t, got["count"].Messages.List())
	require.Equal(t, 2, got["count"].Turns.Get())
}

func TestUpdateAsRefusesAnotherEventOrStateType(t *testing.T) {
	_, err := graph.UpdateAs[chatState](graph.Event{Mode: graph.ModeValues, Payload: chatState{}})
	require.ErrorContains(t, err, "needs an updates event")
	_, err = graph.UpdateAs[chatState](graph.Event{Mode: graph.ModeUpdates, Node: "n", Payload: deadEndState{}})
	require.ErrorContains(t, err, "carries a graph_test.deadEndState, not a graph_test.chatState")
}
