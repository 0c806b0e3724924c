//go:build unix

package retrai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// A retrAI run killed inside the second of three tool calls of a turn
// runs, once resumed, only the calls whose results were not saved, then
// checks the goal with the three results recorded in call order.
func TestToolCallsRunOnceAfterAKill(t *testing.T) {
	thread := graph.WithThread(agenttest.CrashThread)
	var final retrai.State
	agenttest.Crash{
		Test: "TestToolCallsRunOnceAfterAKill",
		New: func(t *testing.T, saver checkpoint.Saver, model llm.Model, effect tools.Tool, opts ...graph.CompileOption) agenttest.Agent {
			g, err := retrai.New(model, &retraiGoal{check: achievedAt(1)},
				retrai.WithTools(func(string) ([]tools.Tool, error) { return []tools.Tool{effect}, nil }),
				retrai.WithCheckpointer(saver),
				retrai.WithCompileOptions(opts...))
			require.NoError(t, err)
			return agenttest.Agent{
				Start: func(ctx context.Context) error {
					_, err := g.Invoke(ctx, retraiInput(0, false), thread)
					return err
				},
				Resume: func(ctx context.Context) ([]state.Message, error) {
					out, err := g.Resume(ctx, graph.Command[retrai.State]{}, thread)
					final = out
					return out.Messages.List(), err
				},
			}
		},
		Resume: nil, // the goal is reached at the first check: no model call
	}.Run(t)

	require.Equal(t, retrai.OutcomeAchieved, final.Outcome())
	var callIDs []string
	for _, r := range final.ToolResults.Get() {
		callIDs = append(callIDs, r.CallID)
	}
	require.Equal(t, []string{"c1", "c2", "c3"}, callIDs)
	require.Empty(t, final.PendingToolCalls.Get())
}
