package llm

import (
	"context"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// GenerateToGraph calls m.Generate from inside a graph node and streams the
// answer's text to the run's messages stream ([graph.ModeMessages]): every
// token becomes a [graph.MessageChunk] written with [graph.MessageWriter],
// and a chunk with Done set follows the last one when the call succeeds.
// The chunks carry the ID of the returned message: the one given with
// [WithMessageID], else a new one, which the response's Message.ID is set
// to as well. A token sink given with [WithTokenSink] still receives every
// token.
//
// Outside a graph node it is m.Generate. Inside one it always sets a token
// sink, so the provider is called in streaming mode even when the run does
// not stream messages.
func GenerateToGraph(ctx context.Context, m Model, msgs []state.Message, opts ...CallOption) (*Response, error) {
	if graph.NodeName(ctx) == "" {
		return m.Generate(ctx, msgs, opts...)
	}
	cfg := NewCallOptions(opts...)
	id := cfg.MessageID
	if id == "" {
		id = state.NewID()
	}
	write := graph.MessageWriter(ctx)
	user := cfg.TokenSink
	sink := func(ctx context.Context, token string) {
		write(graph.MessageChunk{MessageID: id, Text: token})
		if user != nil {
			user(ctx, token)
		}
	}
	opts = append(opts[:len(opts):len(opts)], WithMessageID(id), WithTokenSink(sink))
	resp, err := m.Generate(ctx, msgs, opts...)
	if err != nil {
		return nil, err
	}
	write(graph.MessageChunk{MessageID: id, Done: true})
	return resp, nil
}
