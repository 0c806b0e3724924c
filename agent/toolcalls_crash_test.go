//go:build unix

package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// A ReAct agent killed inside the second of three tool calls of a turn
// runs, once resumed, only the calls whose results were not saved, and the
// model then gets the three results in call order.
func TestToolCallsRunOnceAfterAKill(t *testing.T) {
	thread := graph.WithThread(agenttest.CrashThread)
	agenttest.Crash{
		Test: "TestToolCallsRunOnceAfterAKill",
		New: func(t *testing.T, saver checkpoint.Saver, model llm.Model, effect tools.Tool, opts ...graph.CompileOption) agenttest.Agent {
			g, err := agent.NewReAct(model, []tools.Tool{effect}, agent.WithCheckpointer(saver), agent.WithCompileOptions(opts...))
			require.NoError(t, err)
			return agenttest.Agent{
				Start: func(ctx context.Context) error {
					_, err := g.Invoke(ctx, input("do three things"), thread)
					return err
				},
				Resume: func(ctx context.Context) ([]state.Message, error) {
					out, err := g.Resume(ctx, graph.Command[agent.ReActState]{}, thread)
					return out.Messages.List(), err
				},
			}
		},
		Resume: []llm.Reply{{Text: "All three done.", Expect: func(msgs []state.Message) error {
			if got := agenttest.Summary(msgs[len(msgs)-3:]); !slices.Equal(got, []string{
				"tool:  result(c1 effect did one)", "tool:  result(c2 effect did two)", "tool:  result(c3 effect did three)",
			}) {
				return errors.New("the model did not get the three results in call order: " + strings.Join(got, "; "))
			}
			return nil
		}}},
	}.Run(t)
}
