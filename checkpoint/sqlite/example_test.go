package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Ticket is the state of the example's graph.
type Ticket struct {
	Request  state.Value[string]
	Approved state.Value[bool]
	Log      state.Append[string]
}

// ticketGraph asks a human to approve a request, checkpointing in saver.
func ticketGraph(saver *sqlite.Saver) (*graph.Graph[Ticket], error) {
	b := graph.New[Ticket]()
	b.AddNode("review", func(ctx context.Context, t Ticket) (Ticket, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve "+t.Request.Get()+"?")
		if err != nil {
			return t, err
		}
		t.Approved.Set(ok)
		t.Log.Append(fmt.Sprintf("reviewed: approved=%v", ok))
		return t, nil
	})
	b.AddEdge(graph.Start, "review")
	return b.Compile(graph.WithCheckpointer(saver))
}

// A run paused for a human survives the process: the first Saver is
// closed while the run waits, and a second one on the same file — as a
// later run of the program would open it — resumes the thread.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.db")
	thread := graph.WithThread("ticket-7")

	// The first process: the run pauses at the review.
	saver, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := ticketGraph(saver)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = g.Invoke(ctx, Ticket{Request: state.Set("a new laptop")}, thread)
	if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
		fmt.Println("paused:", intr.Interrupts[0].Value)
	}
	_ = saver.Close()

	// The second process: open the file again and resume with the answer.
	saver, err = sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver.Close()
	g, err = ticketGraph(saver)
	if err != nil {
		fmt.Println(err)
		return
	}
	snap, err := g.GetState(ctx, thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("waiting in:", snap.Next)
	out, err := g.Resume(ctx, graph.Command[Ticket]{Resume: true}, thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Log.Get())

	// Every step is on file, newest first.
	for snap, err := range g.History(ctx, "ticket-7") {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("step %d (%s), next %v\n", snap.Metadata.Step, snap.Metadata.Source, snap.Next)
	}
	// Output:
	// paused: approve a new laptop?
	// waiting in: [review]
	// [reviewed: approved=true]
	// step 1 (loop), next []
	// step 0 (loop), next [review]
	// step -1 (input), next [__start__]
}
