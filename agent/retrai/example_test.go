package retrai_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// secondCheckGoal is reached at its second check.
type secondCheckGoal struct{ checks int }

func (g *secondCheckGoal) Name() string         { return "example" }
func (g *secondCheckGoal) SystemPrompt() string { return "Make the example pass." }
func (g *secondCheckGoal) Check(context.Context, goals.State, string) (goals.Result, error) {
	g.checks++
	if g.checks < 2 {
		return goals.Result{Reason: "1 of 1 tests failed", Details: goals.Details{Failed: 1}}, nil
	}
	return goals.Result{Achieved: true, Reason: "all 1 tests passed", Details: goals.Details{Passed: 1}}, nil
}

// The agent's events come from its run's stream, through events.Bridge,
// as those of any graph do.
func Example_events() {
	model := llm.NewScripted(
		llm.Reply{Text: "Let me look.", ToolCalls: []llms.ToolCall{state.ToolCall("c1", "look", `{}`)}, Usage: llm.Usage{TotalTokens: 100}},
		llm.Reply{Text: "Fixed.", Usage: llm.Usage{TotalTokens: 50}},
	)
	look := tools.New("look", "Look at the project.", func(context.Context, struct{}) (string, error) { return "a failing test", nil })
	g, err := retrai.New(model, &secondCheckGoal{},
		retrai.WithTools(func(string) ([]tools.Tool, error) { return []tools.Tool{look}, nil }))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	bus := events.NewBus()
	sub := bus.Subscribe(ctx)
	stream := g.Stream(ctx, retrai.Input(retrai.Run{RunID: "run-1", Cwd: "/project", MaxIterations: 5}),
		graph.WithStreamModes(events.StreamModes))
	if err := events.Bridge(ctx, bus, "run-1", stream); err != nil {
		fmt.Println(err)
	}
	bus.Close()

	for ev := range sub.Events() {
		switch p := ev.Data.(type) {
		case retrai.IterationStarted:
			fmt.Printf("iteration %d of %d\n", p.Iteration, p.MaxIterations)
		case events.ModelCall:
			fmt.Printf("  model: %s (%d tokens)\n", p.Text, p.TotalTokens)
		case events.ToolResult:
			fmt.Printf("  %s → %s\n", p.Name, p.Result)
		case retrai.GoalCheck:
			fmt.Printf("  goal achieved: %t, %s\n", p.Achieved, p.Reason)
		case retrai.Finished:
			fmt.Printf("%s after %d iterations, %d tokens\n", p.Outcome, p.Iteration, p.TotalTokens)
		}
	}
	// Output:
	// iteration 1 of 5
	//   model: Let me look. (100 tokens)
	//   look → a failing test
	//   goal achieved: false, 1 of 1 tests failed
	// iteration 2 of 5
	//   model: Fixed. (50 tokens)
	//   goal achieved: true, all 1 tests passed
	// achieved after 2 iterations, 150 tokens
}
