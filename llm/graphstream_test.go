package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

type chatState struct {
	Messages state.Messages
}

// chatGraph is a one-node graph whose node calls fn and appends the answer.
func chatGraph(t *testing.T, fn func(ctx context.Context, msgs []state.Message) (*llm.Response, error)) *graph.Graph[chatState] {
	t.Helper()
	b := graph.New[chatState]()
	b.AddNode("chat", func(ctx context.Context, s chatState) (chatState, error) {
		resp, err := fn(ctx, s.Messages.List())
		if err != nil {
			return chatState{}, err
		}
		return chatState{Messages: state.Msgs(resp.Message)}, nil
	})
	b.AddEdge(graph.Start, "chat")
	b.AddEdge("chat", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

// chunks runs g streaming messages and returns the chunks and the final
// messages.
func chunks(t *testing.T, g *graph.Graph[chatState]) ([]graph.MessageChunk, []state.Message) {
	t.Helper()
	var got []graph.MessageChunk
	var last chatState
	for ev, err := range g.Stream(t.Context(), chatState{Messages: state.Msgs(state.Human("hi"))},
		graph.WithStreamModes(graph.ModeMessages|graph.ModeValues)) {
		require.NoError(t, err)
		switch ev.Mode {
		case graph.ModeMessages:
			require.Equal(t, "chat", ev.Node)
			got = append(got, ev.Payload.(graph.MessageChunk))
		case graph.ModeValues:
			last = ev.Payload.(chatState)
		}
	}
	return got, last.Messages.List()
}

func TestGenerateToGraphStreamsTokensWithTheMessageID(t *testing.T) {
	m := llm.NewScripted(llm.Reply{Text: "Hello there, Ada."})
	g := chatGraph(t, func(ctx context.Context, msgs []state.Message) (*llm.Response, error) {
		return llm.GenerateToGraph(ctx, m, msgs)
	})
	got, msgs := chunks(t, g)
	require.Len(t, msgs, 2)
	id := msgs[1].ID
	require.NotEmpty(t, id)
	want := []graph.MessageChunk{
		{MessageID: id, Text: "Hello"},
		{MessageID: id, Text: " there,"},
		{MessageID: id, Text: " Ada."},
		{MessageID: id, Done: true},
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestGenerateToGraphKeepsTheCallersSinkAndMessageID(t *testing.T) {
	m := llm.NewScripted(llm.Reply{Text: "a b"})
	var mu sync.Mutex
	var own []string
	g := chatGraph(t, func(ctx context.Context, msgs []state.Message) (*llm.Response, error) {
		return llm.GenerateToGraph(ctx, m, msgs, llm.WithMessageID("m-1"), llm.WithTokenSink(func(_ context.Context, tok string) {
			mu.Lock()
			defer mu.Unlock()
			own = append(own, tok)
		}))
	})
	got, msgs := chunks(t, g)
	require.Equal(t, "m-1", msgs[1].ID)
	require.Empty(t, cmp.Diff([]graph.MessageChunk{{MessageID: "m-1", Text: "a"}, {MessageID: "m-1", Text: " b"}, {MessageID: "m-1", Done: true}}, got))
	require.Equal(t, []string{"a", " b"}, own)
}

func TestGenerateToGraphOutsideANodeDoesNotStream(t *testing.T) {
	m := llm.NewScripted(llm.Reply{Text: "plain"})
	resp, err := llm.GenerateToGraph(t.Context(), m, []state.Message{state.Human("hi")})
	require.NoError(t, err)
	require.Equal(t, "plain", resp.Message.Text())
	require.Empty(t, resp.Message.ID)
	require.Nil(t, m.Calls()[0].Options.TokenSink)
}

func TestGenerateToGraphReturnsTheModelError(t *testing.T) {
	boom := errors.New("boom")
	m := llm.NewScripted(llm.Reply{Err: boom})
	g := chatGraph(t, func(ctx context.Context, msgs []state.Message) (*llm.Response, error) {
		return llm.GenerateToGraph(ctx, m, msgs)
	})
	var got []graph.MessageChunk
	var runErr error
	for ev, err := range g.Stream(t.Context(), chatState{Messages: state.Msgs(state.Human("hi"))}, graph.WithStreamModes(graph.ModeMessages)) {
		if err != nil {
			runErr = err
			continue
		}
		got = append(got, ev.Payload.(graph.MessageChunk))
	}
	require.ErrorIs(t, runErr, boom)
	require.Empty(t, got)
}
