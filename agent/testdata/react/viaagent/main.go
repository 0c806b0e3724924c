// Command viaagent is a ReAct agent built with package agent: a model with
// one tool, in a loop until it answers. TestReAct* in package agent list
// its dependencies and compare its binary with that of byhand, the same
// loop built from packages graph and tools.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"required"`
}

func main() {
	ctx := context.Background()
	model, err := llm.New(ctx, "openai:gpt-4o-mini")
	if err != nil {
		log.Fatal(err)
	}
	weather := tools.New("get_weather", "Current weather of a city.",
		func(ctx context.Context, a weatherArgs) (string, error) {
			return "sunny in " + a.City, nil
		})
	g, err := agent.NewReAct(model, []tools.Tool{weather})
	if err != nil {
		log.Fatal(err)
	}
	out, err := g.Invoke(ctx, agent.ReActState{Messages: state.Msgs(state.Human("Weather in Paris?"))})
	if err != nil {
		log.Fatal(err)
	}
	answer, _ := out.Messages.Last()
	fmt.Println(answer.Text())
}
