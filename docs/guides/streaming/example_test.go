package streaming_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// Essay is the state of the examples' graphs.
type Essay struct {
	Topic    state.Value[string]
	Outline  state.Append[string]
	Draft    state.Value[string]
	Approved state.Value[bool]
}

// outline is a node: it writes the Outline field.
func outline(ctx context.Context, e Essay) (Essay, error) {
	return Essay{Outline: state.Items("why", "how")}, nil
}

// write is a node that reports its progress on the custom stream.
func write(ctx context.Context, e Essay) (Essay, error) {
	progress := graph.StreamWriter(ctx)
	var parts []string
	for i, point := range e.Outline.Get() {
		progress(fmt.Sprintf("section %d of %d", i+1, e.Outline.Len()))
		parts = append(parts, point+" "+e.Topic.Get())
	}
	e.Draft.Set(strings.Join(parts, "; "))
	return e, nil
}

// essayGraph compiles outline → write.
func essayGraph() (*graph.Graph[Essay], error) {
	b := graph.New[Essay]()
	b.AddNode("outline", outline)
	b.AddNode("write", write)
	b.AddEdge(graph.Start, "outline")
	b.AddEdge("outline", "write")
	return b.Compile()
}

// The default mode, updates: one event per task as it finishes, with the
// fields it wrote.
func Example_updates() {
	g, err := essayGraph()
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range g.Stream(context.Background(), Essay{Topic: state.Set("Go")}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("step %d, %s wrote %v\n", ev.Step, ev.Node, ev.Writes.Fields())
		fmt.Println("  ", ev.Writes)
	}
	// Output:
	// step 1, outline wrote [Outline]
	//    {Outline: {"updates":["why","how"]}}
	// step 2, write wrote [Draft]
	//    {Draft: "why Go; how Go"}
}

// Modes combine: the state after each step (values) and what nodes write
// with StreamWriter (custom), as they write it.
func Example_valuesAndCustom() {
	g, err := essayGraph()
	if err != nil {
		fmt.Println(err)
		return
	}
	modes := graph.WithStreamModes(graph.ModeValues | graph.ModeCustom)
	for ev, err := range g.Stream(context.Background(), Essay{Topic: state.Set("Go")}, modes) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Mode {
		case graph.ModeCustom:
			fmt.Printf("%s says: %v\n", ev.Node, ev.Payload)
		case graph.ModeValues:
			e := ev.Payload.(Essay)
			fmt.Printf("after step %d: outline %v, draft %q\n", ev.Step, e.Outline.Get(), e.Draft.Get())
		}
	}
	// Output:
	// after step 0: outline [], draft ""
	// after step 1: outline [why how], draft ""
	// write says: section 1 of 2
	// write says: section 2 of 2
	// after step 2: outline [why how], draft "why Go; how Go"
}

// A model's tokens reach the messages stream when the node calls it with
// llm.GenerateToGraph. A scripted model stands in for a real one; it
// streams its text word by word.
func Example_tokens() {
	model := llm.NewScripted(llm.Reply{Text: "Go is simple and fast."})
	b := graph.New[Essay]()
	b.AddNode("write", func(ctx context.Context, e Essay) (Essay, error) {
		resp, err := llm.GenerateToGraph(ctx, model, []state.Message{state.Human("One line on " + e.Topic.Get())})
		if err != nil {
			return e, err
		}
		e.Draft.Set(resp.Message.Text())
		return e, nil
	})
	b.AddEdge(graph.Start, "write")
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	modes := graph.WithStreamModes(graph.ModeMessages | graph.ModeUpdates)
	for ev, err := range g.Stream(context.Background(), Essay{Topic: state.Set("Go")}, modes) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch p := ev.Payload.(type) {
		case graph.MessageChunk:
			if p.Done {
				fmt.Println("|")
			} else {
				fmt.Printf("%s|", p.Text)
			}
		case Essay:
			fmt.Println("update:", ev.Writes)
		}
	}
	// Output:
	// Go| is| simple| and| fast.||
	// update: {Draft: "Go is simple and fast."}
}

// review asks a human to approve the draft.
func review(ctx context.Context, e Essay) (Essay, error) {
	ok, err := graph.InterruptAs[bool](ctx, "publish "+e.Draft.Get()+"?")
	if err != nil {
		return e, err
	}
	e.Approved.Set(ok)
	return e, nil
}

// A pause streams as an interrupts event, one per task that interrupts, as
// it does; the stream then ends with a *graph.Interrupted error, and
// StreamResume continues it.
func Example_interrupts() {
	b := graph.New[Essay]()
	b.AddNode("write", write)
	b.AddNode("review", review)
	b.AddEdge(graph.Start, "write")
	b.AddEdge("write", "review")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	thread := graph.WithThread("essay-1")
	input := Essay{Topic: state.Set("Go"), Outline: state.Items("why")}
	for ev, err := range g.Stream(ctx, input, thread) {
		if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
			fmt.Println("stream ended: paused at", intr.Interrupts[0].Node)
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev.Mode {
		case graph.ModeUpdates:
			fmt.Println("update from", ev.Node)
		case graph.ModeInterrupts:
			fmt.Printf("%s asks: %v\n", ev.Node, ev.Interrupts[0].Value)
		}
	}
	for ev, err := range g.StreamResume(ctx, graph.Command[Essay]{Resume: true}, thread) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("after resume:", ev.Node, ev.Writes)
	}
	// Output:
	// update from write
	// review asks: publish why Go?
	// stream ended: paused at review
	// after resume: review {Approved: true}
}

// Leaving the loop stops the run: here a loop that would count to a
// thousand stops after three updates.
func Example_stopEarly() {
	type Counter struct{ N state.Value[int] }
	b := graph.New[Counter]()
	b.AddNode("inc", func(ctx context.Context, c Counter) (Counter, error) {
		c.N.Set(c.N.Get() + 1)
		return c, nil
	})
	b.AddEdge(graph.Start, "inc")
	b.AddConditionalEdges("inc", func(ctx context.Context, c Counter) (string, error) {
		if c.N.Get() < 1000 {
			return "inc", nil
		}
		return graph.End, nil
	})
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	seen := 0
	for ev, err := range g.Stream(context.Background(), Counter{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		seen++
		fmt.Println(ev)
		if seen == 3 {
			break
		}
	}
	// Output:
	// updates step=1 node=inc writes={N: 1}
	// updates step=2 node=inc writes={N: 2}
	// updates step=3 node=inc writes={N: 3}
}
