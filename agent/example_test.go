package agent_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func ExampleNewReAct() {
	type weatherArgs struct {
		City string `json:"city" jsonschema:"required,description=City name"`
	}
	weather := tools.New("get_weather", "Current weather of a city.",
		func(ctx context.Context, a weatherArgs) (string, error) {
			return "sunny, 24°C in " + a.City, nil
		})

	// A scripted model stands in for a real one (llm.New(ctx, "openai:gpt-4o-mini")):
	// it asks for the tool, then answers with its result.
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "get_weather", `{"city":"Paris"}`)}},
		llm.Reply{Text: "It is sunny and 24°C in Paris."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{weather}, agent.WithSystemPrompt("You are terse."))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), agent.ReActState{Messages: state.Msgs(state.Human("Weather in Paris?"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out.Messages.List() {
		switch {
		case len(m.ToolCalls()) > 0:
			c := m.ToolCalls()[0]
			fmt.Printf("%s: calls %s %s\n", m.Role, c.FunctionCall.Name, c.FunctionCall.Arguments)
		case len(m.ToolResults()) > 0:
			fmt.Printf("%s: %s\n", m.Role, m.ToolResults()[0].Content)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Text())
		}
	}
	// Output:
	// human: Weather in Paris?
	// ai: calls get_weather {"city":"Paris"}
	// tool: sunny, 24°C in Paris
	// ai: It is sunny and 24°C in Paris.
}
