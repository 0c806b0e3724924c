package planexec_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// searchTool stands for a real search tool.
var searchTool = tools.New("search", "Search the documentation.",
	func(ctx context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return "Cache guide, Eviction: entries are evicted least recently used first", nil
	})

// scriptedModel stands for a real model, from llm.New(ctx,
// "openai:gpt-4o-mini") for example.
func scriptedModel() *llm.Scripted {
	return llm.NewScripted(
		llm.Reply{Text: `["Find how the cache evicts entries"]`},                                            // planner
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "search", `{"query":"cache eviction"}`)}}, // executor
		llm.Reply{Text: "The cache evicts the least recently used entry."},                                  // executor
		llm.Reply{Text: `{"decision": "FINISH", "reason": "the eviction policy is documented"}`},            // refinery
		llm.Reply{Text: "## Eviction\nLeast recently used first (cache guide, Eviction)."},                  // synthesizer
	)
}

func Example() {
	g, err := planexec.New(scriptedModel(), []tools.Tool{searchTool}, planexec.WithMaxIterations(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), planexec.Input("How does the cache evict entries?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Response.Get())
	// Output:
	// ## Eviction
	// Least recently used first (cache guide, Eviction).
}

// The agent's events come from its run's stream, through events.Bridge,
// as those of any graph do.
func Example_events() {
	g, err := planexec.New(scriptedModel(), []tools.Tool{searchTool}, planexec.WithMaxIterations(3))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	bus := events.NewBus()
	sub := bus.Subscribe(ctx)
	stream := g.Stream(ctx, planexec.Input("How does the cache evict entries?"),
		graph.WithStreamModes(events.StreamModes))
	if err := events.Bridge(ctx, bus, "run-1", stream); err != nil {
		fmt.Println(err)
	}
	bus.Close()

	for ev := range sub.Events() {
		switch p := ev.Data.(type) {
		case planexec.PlanMade:
			fmt.Printf("plan %d of %d: %q\n", p.Iteration, p.MaxIterations, p.Steps)
		case planexec.StepStarted:
			fmt.Printf("step %d/%d: %s\n", p.Index, p.Total, p.Step)
		case events.ToolCall:
			fmt.Printf("  %s %s\n", p.Name, p.Args)
		case planexec.FindingRecorded:
			fmt.Printf("finding %q\n", p.Key)
		case planexec.DecisionMade:
			fmt.Printf("%s: %s\n", p.Decision, p.Reason)
		}
	}
	// Output:
	// plan 1 of 3: ["Find how the cache evicts entries"]
	// step 1/1: Find how the cache evicts entries
	//   search {"query":"cache eviction"}
	// finding "step_1: Find how the cache evicts entries"
	// FINISH: the eviction policy is documented
}
