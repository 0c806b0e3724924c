package tools_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func ExampleToolNode() {
	type addArgs struct {
		A int `json:"a" jsonschema:"required"`
		B int `json:"b" jsonschema:"required"`
	}
	add := tools.New("add", "Add two integers.", func(ctx context.Context, a addArgs) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	})
	n, err := tools.NewToolNode([]tools.Tool{add})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The model asked for three calls; they run concurrently and the
	// results come back in the order of the calls.
	ai := state.AI("",
		state.ToolCall("call_1", "add", `{"a":2,"b":3}`),
		state.ToolCall("call_2", "add", `{"a":"two"}`),
		state.ToolCall("call_3", "multiply", `{"a":2,"b":3}`),
	)
	out, err := n.Run(context.Background(), []state.Message{state.Human("sums?"), ai})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		r := m.ToolResults()[0]
		fmt.Printf("%s %s: %s\n", r.ToolCallID, r.Name, strings.ReplaceAll(r.Content, "\n", `\n`))
	}
	// Output:
	// call_1 add: 5
	// call_2 add: Error invoking tool 'add' with arguments {"a":"two"}: json: cannot unmarshal string into Go struct field addArgs.a of type int\n Please fix the error and try again.
	// call_3 multiply: Error: multiply is not a valid tool, try one of [add].
}

func ExampleNode() {
	type State struct {
		Messages state.Messages
	}
	get := func(s State) state.Messages { return s.Messages }
	set := func(m []state.Message) State { return State{Messages: state.Msgs(m...)} }

	greet := tools.New("greet", "Greet someone.", func(ctx context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello " + a.Name, nil
	})
	n, err := tools.NewToolNode([]tools.Tool{greet})
	if err != nil {
		fmt.Println(err)
		return
	}

	b := graph.New[State]()
	b.AddNode("model", func(ctx context.Context, s State) (State, error) {
		// A stand-in for a model: call the tool once, then answer.
		if last, _ := s.Messages.Last(); len(last.ToolResults()) > 0 {
			return State{Messages: state.Msgs(state.AI("It said: " + last.ToolResults()[0].Content))}, nil
		}
		return State{Messages: state.Msgs(state.AI("", state.ToolCall("c1", "greet", `{"name":"Ada"}`)))}, nil
	})
	b.AddNode("tools", tools.Node(n, get, set))
	b.AddEdge(graph.Start, "model")
	b.AddConditionalEdges("model", tools.Condition(get, "tools"), graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), State{Messages: state.Msgs(state.Human("greet Ada"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	last, _ := out.Messages.Last()
	fmt.Println(out.Messages.Len(), last.Text())
	// Output:
	// 4 It said: hello Ada
}

func ExampleSendCondition() {
	type State struct {
		Messages state.Messages
	}
	get := func(s State) state.Messages { return s.Messages }
	set := func(m []state.Message) State { return State{Messages: state.Msgs(m...)} }

	add := tools.New("add", "Add two integers.", func(ctx context.Context, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	})
	n, err := tools.NewToolNode([]tools.Tool{add})
	if err != nil {
		fmt.Println(err)
		return
	}

	b := graph.New[State]()
	b.AddNode("model", func(ctx context.Context, s State) (State, error) {
		// A stand-in for a model: ask for two calls, then answer.
		if last, _ := s.Messages.Last(); len(last.ToolResults()) > 0 {
			return State{Messages: state.Msgs(state.AI("done"))}, nil
		}
		return State{Messages: state.Msgs(state.AI("",
			state.ToolCall("c1", "add", `{"a":1,"b":2}`),
			state.ToolCall("c2", "add", `{"a":3,"b":4}`)))}, nil
	})
	b.AddNode("tools", tools.Node(n, get, set))
	b.AddEdge(graph.Start, "model")
	// Each call is a task of "tools" of its own: a run resumed after a
	// crash re-runs only the calls that had not finished.
	b.AddBranch("model", tools.SendCondition(get, set, "tools"), graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), State{Messages: state.Msgs(state.Human("sums?"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out.Messages.List() {
		for _, r := range m.ToolResults() {
			fmt.Println(r.ToolCallID, r.Content)
		}
	}
	// Output:
	// c1 3
	// c2 7
}
