package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func ExampleWrapModel() {
	overloaded := &llm.Error{Model: "primary", StatusCode: 503, Retryable: true, Err: errors.New("overloaded")}
	primary := llm.NewScripted(llm.Reply{Err: overloaded}, llm.Reply{Err: overloaded})
	backup := llm.NewScripted(llm.Reply{Text: "Paris."})

	model := middleware.WrapModel(primary,
		middleware.Trim(20),         // outermost: every model of the chain gets the trimmed conversation
		middleware.Fallback(backup), // then the backup, once the primary's retries are spent
		middleware.ModelRetry(middleware.WithMaxAttempts(2), middleware.WithBackoff(time.Millisecond, time.Millisecond)))

	resp, err := model.Generate(context.Background(), []state.Message{state.Human("Capital of France?")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Text())
	fmt.Println("primary calls:", len(primary.Calls()))
	// Output:
	// Paris.
	// primary calls: 2
}

func ExampleModelCallLimit() {
	model := middleware.WrapModel(llm.NewScripted(llm.Reply{Text: "one"}, llm.Reply{Text: "two"}),
		middleware.ModelCallLimit(middleware.WithRunLimit(1)))

	// In a graph, compile it with middleware.RunScope() instead.
	ctx := middleware.ContextWithRun(context.Background(), "")
	resp, _ := model.Generate(ctx, []state.Message{state.Human("hi")})
	fmt.Println(resp.Message.Text())
	_, err := model.Generate(ctx, []state.Message{state.Human("again")})
	var limit *middleware.CallLimitError
	fmt.Println(errors.As(err, &limit), limit.Scope, limit.Limit)
	// Output:
	// one
	// true run 1
}

func ExampleToolCallLimit() {
	search := tools.New("search", "Search the web.", func(ctx context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return "results for " + a.Query, nil
	})
	limited := middleware.WrapTools([]tools.Tool{search},
		middleware.ToolCallLimit(middleware.WithRunLimit(1), middleware.WithMessageOnLimit()))

	ctx := middleware.ContextWithRun(context.Background(), "")
	for range 2 {
		out, _ := limited[0].Call(ctx, []byte(`{"query":"go"}`))
		fmt.Println(out)
	}
	// Output:
	// results for go
	// Error: the limit of 1 tool calls per run was reached; search was not run.
}

func ExampleHandleErrors() {
	type State struct {
		Messages state.Messages
		Memory   state.Reduced[middleware.WorkingMemory, middleware.MemoryReducer]
	}
	b := graph.New[State]()
	b.Use(middleware.HandleErrors(
		func(s State) middleware.WorkingMemory { return s.Memory.Get() },
		func(u *State, d middleware.WorkingMemory) { u.Memory.Update(d) },
		func(ctx context.Context, s State, f middleware.NodeFailure) State {
			return State{Messages: state.Msgs(state.AI(f.Message()))}
		}))
	b.AddNode("edit", func(ctx context.Context, s State) (State, error) {
		return State{}, errors.New("patch does not apply")
	})
	b.AddEdge(graph.Start, "edit")
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), State{})
	fmt.Println("run failed:", err != nil)
	answer, _ := out.Messages.Last()
	fmt.Println(answer.Text())
	fmt.Println("retries of edit:", out.Memory.Get().RetryCount["edit"])
	// Output:
	// run failed: false
	// Sorry, I could not complete the step "edit": it failed 3 times. The last error was: patch does not apply
	// retries of edit: 3
}
