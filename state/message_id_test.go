package state_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

func TestMessageWithIDReplacesByID(t *testing.T) {
	var cur state.Messages
	cur = step(t, cur, appending(state.Human("hi").WithID("q"), state.AI("draft").WithID("a")))
	cur = step(t, cur, appending(state.AI("final").WithID("a")))
	got := cur.List()
	require.Len(t, got, 2)
	require.Equal(t, []string{"q", "a"}, []string{got[0].ID, got[1].ID})
	require.Equal(t, "final", got[1].Text(), "the message with the same ID was replaced")
}
