// Package modelcall calls a model from a graph node and reports the call
// as an events.ModelCall, the way every agent of package agent does.
package modelcall

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/agent/internal/prompt"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// Generate calls model with msgs and opts through llm.GenerateToGraph
// (so that its tokens stream as the node's messages) and writes an
// events.ModelCall to the node's custom stream: name is the model's name
// for the event ("" when unknown), and the event's text is cut to
// maxText characters, its beginning kept (0: not cut).
func Generate(ctx context.Context, model llm.Model, name string, maxText int, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	resp, err := llm.GenerateToGraph(ctx, model, msgs, opts...)
	if err != nil {
		return nil, fmt.Errorf("model call: %w", err)
	}
	u := resp.Usage
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	text := prompt.TruncateHead(strings.TrimSpace(resp.Message.Text()), maxText)
	graph.StreamWriter(ctx)(events.ModelCall{
		Model:            name,
		Text:             text,
		ToolCalls:        len(resp.Message.ToolCalls()),
		StopReason:       resp.StopReason,
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      total,
	})
	return resp, nil
}
