package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Ticket is the state of the example's graph.
type Ticket struct {
	Request  state.Value[string]
	Approved state.Value[bool]
}

// ticketGraph asks a human to approve a request, checkpointing in saver.
func ticketGraph(saver checkpoint.Saver) (*graph.Graph[Ticket], error) {
	b := graph.New[Ticket]()
	b.AddNode("review", func(ctx context.Context, t Ticket) (Ticket, error) {
		ok, err := graph.InterruptAs[bool](ctx, "approve "+t.Request.Get()+"?")
		if err != nil {
			return t, err
		}
		t.Approved.Set(ok)
		return t, nil
	})
	b.AddEdge(graph.Start, "review")
	return b.Compile(graph.WithCheckpointer(saver))
}

// Two workers share one database, as two processes would: the first starts
// a thread, which pauses for a human; the second resumes it, once nobody
// else runs it. It needs a server: DATABASE_URL names it, and the tables
// go to the schema agentgraph_example (created if missing). go test runs
// this code in TestExample when AGENTGRAPH_TEST_POSTGRES_URL is set.
func Example() {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	open := func() (*postgres.Saver, *graph.Graph[Ticket], error) {
		saver, err := postgres.Open(ctx, url, postgres.WithSchema("agentgraph_example"))
		if err != nil {
			return nil, nil, err
		}
		g, err := ticketGraph(saver)
		if err != nil {
			saver.Close()
			return nil, nil, err
		}
		return saver, g, nil
	}
	saver1, g1, err := open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver1.Close()
	saver2, g2, err := open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver2.Close()
	thread := graph.WithThread("ticket-7")

	_, err = g1.Invoke(ctx, Ticket{Request: state.Set("a new laptop")}, thread)
	if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
		fmt.Println("worker 1 paused:", intr.Interrupts[0].Value)
	}

	// While a run holds the thread's lease (taken by hand here, as a run
	// takes it), any other run of the thread fails at once, naming the
	// holder.
	lease, err := saver1.AcquireLease(ctx, "ticket-7", "worker 1", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = g2.Resume(ctx, graph.Command[Ticket]{Resume: true}, thread)
	if held, ok := errors.AsType[*checkpoint.LeaseHeldError](err); ok {
		fmt.Println("worker 2 refused: thread in use by", held.Holder)
	}
	if err := saver1.ReleaseLease(ctx, lease); err != nil {
		fmt.Println(err)
		return
	}

	out, err := g2.Resume(ctx, graph.Command[Ticket]{Resume: true}, thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("worker 2 resumed: approved =", out.Approved.Get())
}
