// Command byhand is the ReAct loop of viaagent built from packages graph
// and tools, without package agent: the "agent" node calls the model with
// the tools bound, and each tool call of its answer is a "tools" task.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"required"`
}

// State is the conversation.
type State struct {
	Messages state.Messages
}

func getMessages(s State) state.Messages { return s.Messages }

func setMessages(m []state.Message) State { return State{Messages: state.Msgs(m...)} }

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
	tn, err := tools.NewToolNode([]tools.Tool{weather})
	if err != nil {
		log.Fatal(err)
	}
	b := graph.New[State]()
	b.AddNode("agent", func(ctx context.Context, s State) (State, error) {
		resp, err := llm.GenerateToGraph(ctx, model, s.Messages.List(), llm.WithTools(tn.Definitions()))
		if err != nil {
			return State{}, err
		}
		return State{Messages: state.Msgs(resp.Message)}, nil
	})
	b.AddNode("tools", tools.Node(tn, getMessages, setMessages))
	b.AddEdge(graph.Start, "agent")
	b.AddBranch("agent", tools.SendCondition(getMessages, setMessages, "tools"), graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "agent")
	g, err := b.Compile()
	if err != nil {
		log.Fatal(err)
	}
	out, err := g.Invoke(ctx, State{Messages: state.Msgs(state.Human("Weather in Paris?"))})
	if err != nil {
		log.Fatal(err)
	}
	answer, _ := out.Messages.Last()
	fmt.Println(answer.Text())
}
