package llm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// A script by turn answers the conversation where it is, so a second
// process (a new value) continues a conversation the first one began.
func TestScriptedByTurnAnswersWhereTheConversationIsAfterARestart(t *testing.T) {
	script := []llm.Reply{{Text: "one"}, {Text: "two"}, {Text: "three"}}
	first := llm.NewScriptedByTurn(script...)
	conv := []state.Message{state.Human("hi")}
	r, err := first.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Equal(t, "one", r.Message.Text())
	conv = append(conv, r.Message, state.Human("and?"))

	restarted := llm.NewScriptedByTurn(script...)
	r, err = restarted.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Equal(t, "two", r.Message.Text(), "the second turn, not the first reply")

	again, err := restarted.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Equal(t, "two", again.Message.Text(), "a re-run of the same turn gets the same reply")
	require.Equal(t, 1, restarted.Remaining())

	conv = append(conv, r.Message, state.Human("more"), state.AI("extra"))
	_, err = restarted.Generate(t.Context(), conv)
	var ex *llm.ScriptExhaustedError
	require.ErrorAs(t, err, &ex)
}
