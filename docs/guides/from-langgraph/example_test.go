package fromlanggraph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// State is the TypedDict: a field's type is its reducer.
type State struct {
	Topic    state.Value[string]   // topic: str
	Sections state.Value[[]string] // sections: list[str]
	Drafts   state.Append[string]  // drafts: Annotated[list[str], operator.add]
	Approved state.Value[bool]     // approved: bool
}

// Section is the write node's own input, the dict its Send carries.
type Section struct {
	Name string `json:"name"`
}

func plan(ctx context.Context, s State) (State, error) {
	s.Sections.Set([]string{"intro", "body"})
	return s, nil
}

func fanOut(ctx context.Context, s State) (graph.Route[State], error) {
	var r graph.Route[State]
	for _, name := range s.Sections.Get() {
		r.Sends = append(r.Sends, graph.SendInput[State]("write", Section{Name: name}))
	}
	return r, nil
}

func write(ctx context.Context, in Section) (State, error) {
	return State{Drafts: state.Items(in.Name + " draft")}, nil
}

func review(ctx context.Context, s State) (State, error) {
	ok, err := graph.InterruptAs[bool](ctx, fmt.Sprintf("publish %d drafts?", s.Drafts.Len()))
	if err != nil {
		return s, err
	}
	s.Approved.Set(ok)
	return s, nil
}

func Example() {
	builder := graph.New[State]()
	builder.AddNode("plan", plan)
	graph.AddNodeWithInput(builder, "write", write)
	builder.AddNode("review", review)
	builder.AddEdge(graph.Start, "plan")
	builder.AddBranch("plan", fanOut, graph.WithDestinations("write"))
	builder.AddEdge("write", "review")
	builder.AddEdge("review", graph.End)
	g, err := builder.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	config := graph.WithThread("t1")
	for chunk, err := range g.Stream(ctx, State{Topic: state.Set("Go")}, config) {
		if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
			fmt.Println("paused:", intr.Interrupts[0].Value)
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if chunk.Mode == graph.ModeUpdates {
			fmt.Println(chunk.Node, chunk.Writes)
		}
	}
	out, err := g.Resume(ctx, graph.Command[State]{Resume: true}, config)
	fmt.Println(out.Drafts.Get(), out.Approved.Get(), err)
	// The two write tasks run in parallel and their updates stream in the
	// order they finish, so this output is compared without its order.
	// Drafts keep the order of the Sends, whichever finished first.

	// Unordered output:
	// plan {Sections: ["intro","body"]}
	// write {Drafts: {"updates":["intro draft"]}}
	// write {Drafts: {"updates":["body draft"]}}
	// paused: publish 2 drafts?
	// [intro draft body draft] true <nil>
}
