// Command approval is the program of the guide "Human approval across
// processes with SQLite" (docs/guides/approval-sqlite.md): a refund
// workflow that pauses for a manager's approval in one process and goes
// on in another, the thread kept in a SQLite file between them.
//
//	approval -db refunds.db -thread r-1 request 120 "the parcel never came"
//	approval -db refunds.db -thread r-1 status
//	approval -db refunds.db -thread r-1 answer yes "known carrier problem"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Refund is the state of one refund request.
type Refund struct {
	Amount   state.Value[int] // euros
	Reason   state.Value[string]
	Decision state.Value[Decision]
	Log      state.Append[string]
}

// Question is what the run asks the approver: the payload of Interrupt,
// saved in the checkpoint as JSON.
type Question struct {
	Amount int    `json:"amount"`
	Reason string `json:"reason"`
}

// Decision is the approver's answer, the resume value.
type Decision struct {
	Approve bool   `json:"approve"`
	Note    string `json:"note,omitempty"`
}

// autoApproveBelow is the amount under which no human is asked.
const autoApproveBelow = 50

// build compiles the refund workflow. Every process compiles the same
// graph (a changed one resumes a waiting thread only when it still has
// the nodes that thread waits in).
func build(saver *sqlite.Saver) (*graph.Graph[Refund], error) {
	b := graph.New[Refund]()
	b.AddNode("check", func(ctx context.Context, r Refund) (Refund, error) {
		return Refund{Log: state.Items(fmt.Sprintf("request: %d EUR, %q", r.Amount.Get(), r.Reason.Get()))}, nil
	})
	b.AddNode("approval", func(ctx context.Context, r Refund) (Refund, error) {
		d, err := graph.InterruptAs[Decision](ctx, Question{Amount: r.Amount.Get(), Reason: r.Reason.Get()})
		if err != nil {
			return r, err // the run pauses here; a later Resume re-runs this node with the answer
		}
		r.Decision.Set(d)
		r.Log.Append(strings.TrimSpace(fmt.Sprintf("decision: approve=%v %s", d.Approve, d.Note)))
		return r, nil
	})
	b.AddNode("pay", func(ctx context.Context, r Refund) (Refund, error) {
		return Refund{Log: state.Items(fmt.Sprintf("paid %d EUR", r.Amount.Get()))}, nil
	})
	b.AddNode("refuse", func(ctx context.Context, r Refund) (Refund, error) {
		return Refund{Log: state.Items("refused")}, nil
	})
	b.AddEdge(graph.Start, "check")
	b.AddConditionalEdges("check", func(ctx context.Context, r Refund) (string, error) {
		if r.Amount.Get() < autoApproveBelow {
			return "pay", nil
		}
		return "approval", nil
	}, graph.WithDestinations("pay", "approval"))
	b.AddConditionalEdges("approval", func(ctx context.Context, r Refund) (string, error) {
		if r.Decision.Get().Approve {
			return "pay", nil
		}
		return "refuse", nil
	}, graph.WithDestinations("pay", "refuse"))
	return b.Compile(graph.WithCheckpointer(saver))
}

func main() {
	db := flag.String("db", "refunds.db", "the SQLite file holding the threads")
	thread := flag.String("thread", "", "the refund's thread ID")
	flag.Parse()
	if err := run(context.Background(), *db, *thread, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

// run opens the file, compiles the graph and carries out one command.
func run(ctx context.Context, db, thread string, args []string) error {
	if thread == "" || len(args) == 0 {
		return errors.New("usage: approval -db FILE -thread ID request AMOUNT REASON | status | answer yes|no [NOTE]")
	}
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	defer saver.Close()
	g, err := build(saver)
	if err != nil {
		return err
	}
	on := graph.WithThread(thread)
	switch cmd := args[0]; {
	case cmd == "request" && len(args) == 3:
		amount, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("amount: %w", err)
		}
		out, err := g.Invoke(ctx, Refund{Amount: state.Set(amount), Reason: state.Set(args[2])}, on)
		return report(out, err)
	case cmd == "status" && len(args) == 1:
		return status(ctx, g, on)
	case cmd == "answer" && (len(args) == 2 || len(args) == 3):
		d := Decision{Approve: args[1] == "yes"}
		if len(args) == 3 {
			d.Note = args[2]
		}
		return answer(ctx, g, on, d)
	}
	return fmt.Errorf("unknown command %q", args)
}

// report prints how a run ended: paused for a human, or done.
func report(out Refund, err error) error {
	if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
		q, err := question(intr.Interrupts[0])
		if err != nil {
			return err
		}
		fmt.Printf("paused: %d EUR for %q needs approval\n", q.Amount, q.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range out.Log.Get() {
		fmt.Println(line)
	}
	return nil
}

// answer resumes the thread with the approver's decision. Resume of a
// thread that waits for nothing re-runs nothing and drops the answer, so
// it first checks that the thread waits; the check and the Resume are two
// steps, and an approver who answers in between still wins the race (see
// the guide).
func answer(ctx context.Context, g *graph.Graph[Refund], on graph.RunOption, d Decision) error {
	snap, err := g.GetState(ctx, on)
	if err != nil {
		return err
	}
	if len(snap.Interrupts) == 0 {
		return errors.New("this refund waits for no answer")
	}
	out, err := g.Resume(ctx, graph.Command[Refund]{Resume: d}, on)
	return report(out, err)
}

// status prints what a thread is waiting for, from its latest checkpoint.
func status(ctx context.Context, g *graph.Graph[Refund], on graph.RunOption) error {
	snap, err := g.GetState(ctx, on)
	if err != nil {
		return err
	}
	if len(snap.Interrupts) == 0 {
		fmt.Printf("not waiting (next: %v)\n", snap.Next)
		return nil
	}
	for _, in := range snap.Interrupts {
		q, err := question(in)
		if err != nil {
			return err
		}
		fmt.Printf("waiting in %s since step %d: %d EUR for %q\n", in.Node, snap.Metadata.Step, q.Amount, q.Reason)
	}
	return nil
}

// question decodes an interrupt's payload. In the process that paused it
// is the Question the node passed; read back from the file it is that
// value's JSON decoded into an any (a map), so it goes through JSON again.
func question(in graph.Interruption) (Question, error) {
	var q Question
	b, err := json.Marshal(in.Value)
	if err != nil {
		return q, err
	}
	return q, json.Unmarshal(b, &q)
}
