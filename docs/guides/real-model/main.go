// Command assistant is the program of the guide "A ReAct agent on a real
// model" (docs/guides/real-model.md): a ReAct agent with one typed tool,
// on the model named by -model, streaming its answer as it is generated.
//
//	OPENAI_API_KEY=… assistant -model openai:gpt-4o-mini "Weather in Paris?"
//	ANTHROPIC_API_KEY=… assistant -model anthropic:claude-sonnet-4-5 "Weather in Oslo?"
//	assistant -model ollama:llama3.1 "Weather in Lima?"
//	assistant -model openai-compatible:qwen3@http://127.0.0.1:8000/v1 "Weather in Rome?"
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// weatherArgs are the arguments of the get_weather tool; the tags make its
// JSON schema, which the model sees.
type weatherArgs struct {
	City string `json:"city" jsonschema:"required,description=The city, in English"`
}

// weather is the agent's tool. A real one would call a weather service.
var weather = tools.New("get_weather", "The current weather of a city.",
	func(ctx context.Context, a weatherArgs) (string, error) {
		forecast := map[string]string{"Paris": "sunny, 24°C", "Oslo": "snow, -3°C"}
		if f, ok := forecast[a.City]; ok {
			return f, nil
		}
		return "", fmt.Errorf("no forecast for %q", a.City) // the model sees the error and may try again
	})

func main() {
	spec := flag.String("model", "openai:gpt-4o-mini", `the model: "provider:model", e.g. anthropic:claude-sonnet-4-5, or openai-compatible:MODEL@BASE_URL`)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *spec, strings.Join(flag.Args(), " "), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "assistant:", err)
		os.Exit(1)
	}
}

// run asks the agent question on the model spec names and writes the
// answer's tokens, the tool calls and the token usage to w.
func run(ctx context.Context, spec, question string, w io.Writer) error {
	model, err := llm.New(ctx, spec) // keys and base URLs from the environment
	if err != nil {
		return err
	}
	g, err := agent.NewReAct(model, []tools.Tool{weather},
		agent.WithSystemPrompt("You answer in one short sentence. Use get_weather for the weather."),
		agent.WithCallOptions(llm.WithTemperature(0)))
	if err != nil {
		return err
	}
	var meter llm.Meter
	ctx = llm.ContextWithMeter(ctx, &meter)
	input := agent.ReActState{Messages: state.Msgs(state.Human(question))}
	modes := graph.WithStreamModes(graph.ModeMessages | graph.ModeValues)
	shown, answering := 0, false // messages looked at; text printed on the current line
	for ev, err := range g.Stream(ctx, input, modes) {
		if err != nil {
			return err
		}
		switch p := ev.Payload.(type) {
		case graph.MessageChunk: // the model's answer, token by token
			fmt.Fprint(w, p.Text)
			answering = answering || p.Text != ""
			if p.Done && answering {
				fmt.Fprintln(w)
				answering = false
			}
		case agent.ReActState: // the conversation after a step: show the new tool calls and results
			msgs := p.Messages.List()
			for _, m := range msgs[min(shown, len(msgs)):] {
				for _, c := range m.ToolCalls() {
					fmt.Fprintf(w, "→ %s %s\n", c.FunctionCall.Name, c.FunctionCall.Arguments)
				}
				for _, r := range m.ToolResults() {
					fmt.Fprintf(w, "← %s\n", r.Content)
				}
			}
			shown = len(msgs)
		}
	}
	t := meter.Totals()
	fmt.Fprintf(w, "(%d model calls, %d tokens)\n", t.Calls, t.Usage.TotalTokens)
	return nil
}
