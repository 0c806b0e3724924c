package llm_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

func ExampleScripted() {
	model := llm.NewScripted(
		llm.Reply{
			ToolCalls: []llms.ToolCall{state.ToolCall("", "get_weather", `{"city":"Paris"}`)},
			Usage:     llm.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17},
		},
		llm.Reply{
			Text:  "It is sunny in Paris.",
			Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36},
			Expect: func(msgs []state.Message) error {
				if last := msgs[len(msgs)-1]; last.Role != llms.ChatMessageTypeTool {
					return fmt.Errorf("want a tool result last, got %s", last.Role)
				}
				return nil
			},
		},
	)

	var meter llm.Meter
	ctx := llm.ContextWithMeter(context.Background(), &meter)
	conv := []state.Message{state.Human("Weather in Paris?")}

	resp, _ := model.Generate(ctx, conv)
	call := resp.Message.ToolCalls()[0]
	fmt.Println("tool call:", call.ID, call.FunctionCall.Name, call.FunctionCall.Arguments)

	conv = append(conv, resp.Message, state.Tool(call.ID, "get_weather", "sunny"))
	resp, _ = model.Generate(ctx, conv, llm.WithTokenSink(func(_ context.Context, tok string) {
		fmt.Printf("token: %q\n", tok)
	}))
	fmt.Println("answer:", resp.Message.Text())

	_, err := model.Generate(ctx, conv)
	fmt.Println(err)
	fmt.Printf("%+v\n", meter.Totals())
	// Output:
	// tool call: call_1_1 get_weather {"city":"Paris"}
	// token: "It"
	// token: " is"
	// token: " sunny"
	// token: " in"
	// token: " Paris."
	// answer: It is sunny in Paris.
	// llm: scripted model exhausted: 2 replies scripted, call 3 has none; last message (tool) tool result call_1_1 "sunny"
	// {Calls:2 Usage:{PromptTokens:42 CompletionTokens:11 TotalTokens:53}}
}
