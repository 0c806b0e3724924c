package modelcall_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/internal/modelcall"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

type st struct{ Answer state.Value[string] }

func TestGenerateReportsTheCallAsAModelCallEvent(t *testing.T) {
	model := llm.NewScripted(llm.Reply{Text: strings.Repeat("x", 200), Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3}})
	b := graph.New[st]()
	b.AddNode("n", func(ctx context.Context, s st) (st, error) {
		resp, err := modelcall.Generate(ctx, model, "m", 50, []state.Message{state.Human("hi")})
		if err != nil {
			return s, err
		}
		s.Answer.Set(resp.Message.Text())
		return s, nil
	})
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	var calls []events.ModelCall
	for ev, err := range g.Stream(t.Context(), st{}, graph.WithStreamModes(graph.ModeCustom)) {
		require.NoError(t, err)
		if c, ok := ev.Payload.(events.ModelCall); ok {
			calls = append(calls, c)
		}
	}
	require.Len(t, calls, 1)
	c := calls[0]
	require.Equal(t, "m", c.Model)
	require.Equal(t, 10, c.TotalTokens, "the total is the sum when the provider gives none")
	require.LessOrEqual(t, len([]rune(c.Text)), 50)
	require.Contains(t, c.Text, "characters truncated")
}

func TestGenerateWrapsTheModelsError(t *testing.T) {
	model := llm.NewScripted()
	_, err := modelcall.Generate(t.Context(), model, "", 0, []state.Message{state.Human("hi")})
	var exhausted *llm.ScriptExhaustedError
	require.ErrorAs(t, err, &exhausted)
	require.ErrorContains(t, err, "model call: ")
}
