package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
)

type hookKey string

// Two WithHooks options both observe: starts in order, each seeing the
// context the one before returned; ends in reverse order.
func TestSeveralWithHooksAllRunInOrder(t *testing.T) {
	var calls []string
	hooks := func(name string) graph.Hooks {
		return graph.Hooks{
			RunStart: func(ctx context.Context, _ graph.RunInfo) context.Context {
				calls = append(calls, name+".RunStart")
				return context.WithValue(ctx, hookKey(name), true)
			},
			RunEnd: func(ctx context.Context, _ graph.RunInfo, err error) {
				require.Equal(t, true, ctx.Value(hookKey("a")), "the end hook sees the first start's context")
				calls = append(calls, name+".RunEnd")
			},
			TaskStart: func(ctx context.Context, tr graph.TaskRun) context.Context {
				calls = append(calls, name+".TaskStart")
				return ctx
			},
		}
	}
	b := graph.New[deadEndState]()
	b.AddNode("n", logNode("n"))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile(graph.WithHooks(hooks("a")), graph.WithHooks(hooks("b")))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), deadEndState{})
	require.NoError(t, err)
	require.Equal(t, []string{"a.RunStart", "b.RunStart", "a.TaskStart", "b.TaskStart", "b.RunEnd", "a.RunEnd"}, calls)
}
