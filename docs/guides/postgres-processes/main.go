// Command worker is the program of the guide "PostgreSQL with several
// processes" (docs/guides/postgres-processes.md): a job of several items,
// one item per superstep, checkpointed in PostgreSQL so that any process
// can start it, watch it or take it over after a crash.
//
//	worker -db postgres://app@db/app -thread job-1 start 5
//	worker -db postgres://app@db/app -thread job-1 status
//	worker -db postgres://app@db/app -thread job-1 resume
//	worker -db postgres://app@db/app -thread job-1 -wait resume
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Job is the state of a job: how many items it has, and those done.
type Job struct {
	Items state.Value[int]
	Done  state.Append[int]
}

// config is what the flags set.
type config struct {
	db, schema, thread string
	lease              time.Duration // the thread lease's time to live
	delay              time.Duration // how long an item takes
	crashAt            int           // the item during which the process kills itself, to show a crash
	wait               bool          // wait for a busy thread instead of giving up
}

// exitBusy is the exit status of a process that found its thread in use.
const exitBusy = 2

func main() {
	var c config
	flag.StringVar(&c.db, "db", os.Getenv("DATABASE_URL"), "the PostgreSQL URL")
	flag.StringVar(&c.schema, "schema", "agentgraph", "the schema of the checkpoint tables")
	flag.StringVar(&c.thread, "thread", "", "the job's thread ID")
	flag.DurationVar(&c.lease, "lease", graph.DefaultLeaseTTL, "how long a dead process keeps the thread")
	flag.DurationVar(&c.delay, "delay", 100*time.Millisecond, "how long an item takes")
	flag.IntVar(&c.crashAt, "crash-at", 0, "kill this process while it processes this item (a demonstration)")
	flag.BoolVar(&c.wait, "wait", false, "when another process holds the thread, wait for its lease to expire")
	flag.Parse()
	err := run(context.Background(), c, flag.Args())
	if held, ok := errors.AsType[*checkpoint.LeaseHeldError](err); ok {
		fmt.Printf("thread %s is busy: in use by %s\n", held.ThreadID, held.Holder)
		os.Exit(exitBusy)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// build compiles the job's graph: "process" handles the next item, and
// runs again until every item is done.
func build(saver checkpoint.Saver, c config) (*graph.Graph[Job], error) {
	b := graph.New[Job]()
	b.AddNode("process", func(ctx context.Context, j Job) (Job, error) {
		item := j.Done.Len() + 1
		// A side effect: a re-run of this task after a crash has the same
		// task ID, the key that makes the effect idempotent.
		fmt.Printf("item %d of %d (task %s)\n", item, j.Items.Get(), graph.TaskID(ctx))
		if item == c.crashAt {
			crash()
		}
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return j, ctx.Err()
		}
		return Job{Done: state.Items(item)}, nil
	})
	b.AddEdge(graph.Start, "process")
	b.AddConditionalEdges("process", func(ctx context.Context, j Job) (string, error) {
		if j.Done.Len() < j.Items.Get() {
			return "process", nil
		}
		return graph.End, nil
	}, graph.WithDestinations("process", graph.End))
	return b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(c.lease))
}

// crash kills this process at once, as kill -9 would: no deferred call
// runs, and the thread's lease is not released.
func crash() {
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Kill()
	select {} // until the signal arrives
}

// run carries out one command: start N, resume or status.
func run(ctx context.Context, c config, args []string) error {
	if c.db == "" || c.thread == "" || len(args) == 0 {
		return errors.New("usage: worker -db URL -thread ID [flags] start N | resume | status")
	}
	saver, err := postgres.Open(ctx, c.db, postgres.WithSchema(c.schema))
	if err != nil {
		return err
	}
	defer saver.Close()
	g, err := build(saver, c)
	if err != nil {
		return err
	}
	on := graph.WithThread(c.thread)
	switch {
	case args[0] == "start" && len(args) == 2:
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("items: %w", err)
		}
		snap, err := g.GetState(ctx, on)
		if err != nil {
			return err
		}
		if snap.CheckpointID != "" {
			return fmt.Errorf("thread %s exists: resume it", c.thread)
		}
		return report(g.Invoke(ctx, Job{Items: state.Set(n)}, on))
	case args[0] == "resume" && len(args) == 1:
		for {
			out, err := g.Resume(ctx, graph.Command[Job]{}, on)
			held, busy := errors.AsType[*checkpoint.LeaseHeldError](err)
			if !busy || !c.wait {
				return report(out, err)
			}
			wait := time.Until(held.Expires) + 100*time.Millisecond
			fmt.Printf("thread %s is busy: in use by %s; waiting %s\n", c.thread, held.Holder, wait.Round(100*time.Millisecond))
			time.Sleep(wait)
		}
	case args[0] == "status" && len(args) == 1:
		snap, err := g.GetState(ctx, on)
		if err != nil {
			return err
		}
		fmt.Printf("%d of %d items done, next %v\n", snap.Values.Done.Len(), snap.Values.Items.Get(), snap.Next)
		return nil
	}
	return fmt.Errorf("unknown command %q", args)
}

// report prints the end of a run.
func report(out Job, err error) error {
	if err != nil {
		return err
	}
	fmt.Printf("done: %v\n", out.Done.Get())
	return nil
}
