package graph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// A chain of two nodes: each appends to a list field.
func Example_chain() {
	type State struct {
		Steps state.Append[string]
	}
	b := graph.New[State]()
	b.AddNode("first", func(ctx context.Context, s State) (State, error) {
		return State{Steps: state.Items("first")}, nil
	})
	b.AddNode("second", func(ctx context.Context, s State) (State, error) {
		return State{Steps: state.Items("second")}, nil
	})
	b.AddEdge(graph.Start, "first")
	b.AddEdge("first", "second")
	b.AddEdge("second", graph.End)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	out, err := g.Invoke(context.Background(), State{Steps: state.Items("input")})
	fmt.Println(out.Steps.Get(), err)
	// Output: [input first second] <nil>
}

// A loop with a conditional edge: count to three.
func Example_loop() {
	type State struct {
		Count state.Value[int]
	}
	b := graph.New[State]()
	b.AddNode("inc", func(ctx context.Context, s State) (State, error) {
		s.Count.Set(s.Count.Get() + 1)
		return s, nil
	})
	b.AddEdge(graph.Start, "inc")
	b.AddConditionalEdges("inc", func(ctx context.Context, s State) (string, error) {
		if s.Count.Get() < 3 {
			return "again", nil
		}
		return "stop", nil
	}, graph.WithPathMap(map[string]string{"again": "inc", "stop": graph.End}))
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	out, err := g.Invoke(context.Background(), State{Count: state.Set(0)})
	fmt.Println(out.Count.Get(), err)
	// Output: 3 <nil>
}

// Map-reduce with Send: one worker task per item, results merged in Send
// order.
func Example_mapReduce() {
	type State struct {
		Words   state.Value[[]string]
		Word    state.Value[string] // a worker's input
		Lengths state.Append[int]
	}
	b := graph.New[State]()
	b.AddNode("split", func(ctx context.Context, s State) (State, error) {
		return State{}, nil
	})
	b.AddNode("measure", func(ctx context.Context, s State) (State, error) {
		return State{Lengths: state.Items(len(s.Word.Get()))}, nil
	})
	b.AddEdge(graph.Start, "split")
	b.AddBranch("split", func(ctx context.Context, s State) (graph.Route[State], error) {
		var r graph.Route[State]
		for _, w := range s.Words.Get() {
			r.Sends = append(r.Sends, graph.Send[State]{Node: "measure", Arg: State{Word: state.Set(w)}})
		}
		return r, nil
	}, graph.WithDestinations("measure"))
	b.AddEdge("measure", graph.End)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	out, err := g.Invoke(context.Background(), State{Words: state.Set([]string{"go", "graph", "agent"})})
	fmt.Println(out.Lengths.Get(), err)
	// Output: [2 5 5] <nil>
}

// Human in the loop: a node asks for approval with Interrupt; the run
// pauses, and Resume answers.
func Example_humanInTheLoop() {
	type State struct {
		Plan     state.Value[string]
		Approved state.Value[bool]
	}
	b := graph.New[State]()
	b.AddNode("review", func(ctx context.Context, s State) (State, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve plan "+s.Plan.Get()+"?")
		if err != nil {
			return s, err
		}
		s.Approved.Set(ok)
		return s, nil
	})
	b.AddEdge(graph.Start, "review")
	b.AddEdge("review", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = g.Invoke(ctx, State{Plan: state.Set("A")}, graph.WithThread("t1"))
	var intr *graph.Interrupted
	if errors.As(err, &intr) {
		fmt.Println("paused:", intr.Interrupts[0].Value)
	}
	out, err := g.Resume(ctx, graph.Command[State]{Resume: true}, graph.WithThread("t1"))
	fmt.Println("approved:", out.Approved.Get(), err)
	// Output:
	// paused: approve plan A?
	// approved: true <nil>
}

// Streaming several modes at once: the state after each step, and each
// node's writes as it finishes.
func Example_stream() {
	type State struct {
		Log state.Append[string]
	}
	b := graph.New[State]()
	b.AddNode("hello", func(ctx context.Context, s State) (State, error) {
		graph.StreamWriter(ctx)("working on it")
		return State{Log: state.Items("hello")}, nil
	})
	b.AddEdge(graph.Start, "hello")
	b.AddEdge("hello", graph.End)
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	for ev, err := range g.Stream(context.Background(), State{}, graph.WithStreamModes(graph.ModeValues|graph.ModeCustom)) {
		if err != nil {
			panic(err)
		}
		switch ev.Mode {
		case graph.ModeCustom:
			fmt.Println("custom:", ev.Payload)
		case graph.ModeValues:
			fmt.Println("values:", ev.Payload.(State).Log.Get())
		}
	}
	// Output:
	// custom: working on it
	// values: [hello]
}

// Middleware around every node: it logs each node's name and turns a
// failure into an answer instead of failing the run.
func ExampleBuilder_Use() {
	type State struct {
		Answer state.Value[string]
	}
	b := graph.New[State]()
	b.Use(func(next graph.CommandFunc[State]) graph.CommandFunc[State] {
		return func(ctx context.Context, s State) (graph.Command[State], error) {
			fmt.Println("running", graph.NodeName(ctx))
			c, err := next(ctx, s)
			if err != nil && !graph.IsInterrupt(err) {
				return graph.Command[State]{Update: State{Answer: state.Set("sorry, that failed")}}, nil
			}
			return c, err
		}
	})
	b.AddNode("lookup", func(ctx context.Context, s State) (State, error) {
		return s, errors.New("the service is down")
	})
	b.AddEdge(graph.Start, "lookup")
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	out, err := g.Invoke(context.Background(), State{})
	fmt.Println(out.Answer.Get(), err)
	// Output:
	// running lookup
	// sorry, that failed <nil>
}
