package codur_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/state"
)

func TestPruningPolicy(t *testing.T) {
	// task, then 10 iterations of: attempt, tool results, failure.
	msgs := []state.Message{state.Human("the task")}
	for i := 1; i <= 10; i++ {
		msgs = append(msgs,
			state.Human(fmt.Sprintf("Tool results %d", i)),
			state.AI(fmt.Sprintf("attempt %d", i)),
			state.Human(fmt.Sprintf("%s %d", codur.VerificationHeader, i)))
	}
	texts := func(ms []state.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Text())
		}
		return out
	}
	cases := []struct {
		name   string
		policy codur.PruningPolicy
		want   []string
	}{
		{"defaults: 8 errors, 3 attempts, 4 recent", codur.PruningPolicy{}, []string{
			"the task",
			"Verification failed 3", "Verification failed 4", "Verification failed 5", "Verification failed 6",
			"Verification failed 7", "attempt 8", "Verification failed 8", "attempt 9",
			"Verification failed 9", "Tool results 10", "attempt 10", "Verification failed 10",
		}},
		{"the original Codur: 4 errors, no attempts, nothing else", codur.PruningPolicy{KeepErrors: 4, KeepAttempts: -1, KeepRecent: -1}, []string{
			"the task", "Verification failed 7", "Verification failed 8", "Verification failed 9", "Verification failed 10",
		}},
		{"only the task", codur.PruningPolicy{KeepErrors: -1, KeepAttempts: -1, KeepRecent: -1}, []string{"the task"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Empty(t, cmp.Diff(c.want, texts(c.policy.Prune(msgs))))
		})
	}
	require.Equal(t, codur.PruningPolicy{KeepErrors: 8, KeepAttempts: 3, KeepRecent: 4}, codur.DefaultPruning())
}

func TestPruningKeepsAShortConversationWhole(t *testing.T) {
	msgs := []state.Message{state.Human("task"), state.AI("a"), state.Human(codur.VerificationHeader + " 1")}
	require.Len(t, codur.DefaultPruning().Prune(msgs), 3)
	require.Empty(t, codur.DefaultPruning().Prune(nil))
}
