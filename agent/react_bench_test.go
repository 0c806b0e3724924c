package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// fanOutModel asks for calls tool calls of "add" when the last message is
// the human's, and answers once it sees their results.
type fanOutModel struct{ calls int }

func (m fanOutModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	if last := msgs[len(msgs)-1]; last.Role == llms.ChatMessageTypeTool {
		return &llm.Response{Message: state.AI("done")}, nil
	}
	calls := make([]llms.ToolCall, m.calls)
	for i := range calls {
		calls[i] = state.ToolCall(fmt.Sprint("call_", i), "add", `{"a":1,"b":2}`)
	}
	return &llm.Response{Message: state.AI("", calls...)}, nil
}

// BenchmarkReActToolTurn runs a ReAct turn of model call, N tool calls and
// model answer, with no checkpointer and with the in-memory one.
func BenchmarkReActToolTurn(b *testing.B) {
	for _, calls := range []int{1, 4, 16} {
		for _, saver := range []string{"none", "memory"} {
			b.Run(fmt.Sprintf("calls=%d/saver=%s", calls, saver), func(b *testing.B) {
				var opts []agent.Option
				var run []graph.RunOption
				if saver == "memory" {
					opts = append(opts, agent.WithCheckpointer(checkpoint.NewMemory()))
				}
				g, err := agent.NewReAct(fanOutModel{calls: calls}, []tools.Tool{(&adder{}).tool()}, opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if saver == "memory" {
						run = []graph.RunOption{graph.WithThread(fmt.Sprint("t", i))}
						i++
					}
					out, err := g.Invoke(context.Background(), input("sum"), run...)
					if err != nil {
						b.Fatal(err)
					}
					if out.Messages.Len() != calls+3 {
						b.Fatalf("got %d messages", out.Messages.Len())
					}
				}
			})
		}
	}
}
