// Command agentgraph-temporal runs a research agent on Temporal: workers
// carry its runs, a starter starts them, and a human approves each run's
// plan from another terminal, hours later if need be, while any worker —
// not necessarily the one that asked — carries the run on.
//
//	agentgraph-temporal worker  [--addr HOST:PORT] [--queue Q] [--db FILE] [--model SPEC]
//	agentgraph-temporal start   [--addr HOST:PORT] [--queue Q] [--db FILE] [--thread T] "question"
//	agentgraph-temporal status  [--addr HOST:PORT] --thread T
//	agentgraph-temporal approve [--addr HOST:PORT] --thread T [--answer TEXT] [--timeout D]
//	agentgraph-temporal wait    [--addr HOST:PORT] [--db FILE] --thread T
//
// The agent is a graph of three nodes: plan (the model proposes a plan),
// approve (graph.Interrupt asks a human to approve it; the run waits on
// Temporal, in no process, for the answer) and research (the
// plan-and-execute agent of package agent/planexec, as a subgraph, with
// two tools over a few bundled team notes: search_notes and read_note).
//
// `worker` registers the agent with a Temporal worker of task queue
// --queue and runs until interrupted. The state of every run lives in the
// SQLite checkpointer --db (checkpoint/sqlite), which all the workers of a
// machine share; Temporal carries references to it. Start several
// workers: each superstep of a run goes to whichever is free.
//
// `start` starts a run answering the question on thread --thread (default:
// a new one) and prints the workflow ID, which is the thread. `status`
// prints where the run stands: its next nodes and its pending interrupt,
// with the plan to approve. `approve` waits until the run asks for its
// approval (at most --timeout) and answers with --answer through an
// update (temporal.AnswerChecked), which the run refuses when it does not
// wait on that interrupt: "approve" (the default), "yes" or "ok" approve
// the plan; "reject" or "no" end the run; any other text approves the
// plan and is given to the research agent as the reviewer's note. `wait`
// waits for the run's end and prints its answer.
//
// The model comes from the worker's --model, a spec of llm.New
// ("openai:gpt-4o", "anthropic:claude-sonnet-4-5", "ollama:qwen3", …).
// Without one the worker runs OFFLINE on a scripted model, and says so:
// its plans and decisions are canned, but its tool calls run for real and
// its answer quotes the note the tools returned. Unlike llm.Scripted its
// replies depend on the messages only, so that two worker processes carry
// on each other's runs.
//
// --addr defaults to $AGENTGRAPH_TEMPORAL_ADDR, else localhost:7233.
// scripts/temporal-dev.sh starts a dev server; see the README.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/llm"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0 // the command succeeded
	exitError = 1 // the command failed
	exitUsage = 2 // bad command line
)

// Defaults of the flags.
const (
	envAddr      = "AGENTGRAPH_TEMPORAL_ADDR"
	defaultAddr  = "localhost:7233"
	defaultQueue = "agentgraph-research"
	defaultDB    = "agentgraph-temporal.db"
)

const usage = `agentgraph-temporal — a research agent on Temporal, with a human approving its plan.

Usage:
  agentgraph-temporal worker  [--addr HOST:PORT] [--queue Q] [--db FILE] [--model SPEC]
  agentgraph-temporal start   [--addr HOST:PORT] [--queue Q] [--db FILE] [--thread T] "question"
  agentgraph-temporal status  [--addr HOST:PORT] --thread T
  agentgraph-temporal approve [--addr HOST:PORT] --thread T [--answer TEXT] [--timeout D]
  agentgraph-temporal wait    [--addr HOST:PORT] [--db FILE] --thread T

--addr defaults to $AGENTGRAPH_TEMPORAL_ADDR, else localhost:7233; --queue to
agentgraph-research; --db (the SQLite checkpointer the workers share) to
agentgraph-temporal.db. Without --model the worker runs offline on a scripted
model. Try: start "How long are application logs kept?"
`

// run runs the command line args (without the program name) and returns
// the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	var f func(context.Context, *options, io.Writer, io.Writer) error
	switch cmd {
	case "worker":
		f = workerCommand
	case "start":
		f = startCommand
	case "status":
		f = statusCommand
	case "approve":
		f = approveCommand
	case "wait":
		f = waitCommand
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "agentgraph-temporal: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	o, err := parseFlags(cmd, rest, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentgraph-temporal %s: %v\n", cmd, err)
		return exitUsage
	}
	if err := f(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "agentgraph-temporal %s: %v\n", cmd, err)
		return exitError
	}
	return exitOK
}

// options are the parsed flags and arguments of a command.
type options struct {
	addr, queue, db, model, thread, answer string
	timeout                                time.Duration
	question                               string
}

// parseFlags parses the flags of cmd, which may come before or after its
// positional argument.
func parseFlags(cmd string, args []string, stderr io.Writer) (*options, error) {
	addr := os.Getenv(envAddr)
	if addr == "" {
		addr = defaultAddr
	}
	o := &options{}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", addr, "`HOST:PORT` of the Temporal frontend")
	switch cmd {
	case "worker", "start":
		fs.StringVar(&o.queue, "queue", defaultQueue, "Temporal task `queue` of the workers")
	}
	switch cmd {
	case "worker", "start", "wait":
		fs.StringVar(&o.db, "db", defaultDB, "SQLite `file` of the checkpointer the workers share")
	}
	switch cmd {
	case "worker":
		fs.StringVar(&o.model, "model", "", "model `spec` of llm.New (default: the offline scripted model)")
	case "start":
		fs.StringVar(&o.thread, "thread", "", "`thread` (and workflow ID) of the run (default: a new one)")
	case "status", "approve", "wait":
		fs.StringVar(&o.thread, "thread", "", "`thread` (workflow ID) of the run")
	}
	if cmd == "approve" {
		fs.StringVar(&o.answer, "answer", "approve", "the reviewer's `answer`: approve, reject, or a note that approves")
		fs.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for the run to ask for approval")
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case cmd == "start" && len(pos) != 1:
		return nil, fmt.Errorf("want one question, got %d arguments", len(pos))
	case cmd == "start" && strings.TrimSpace(pos[0]) == "":
		return nil, errors.New("the question is empty")
	case cmd != "start" && len(pos) > 0:
		return nil, fmt.Errorf("unexpected argument %q", pos[0])
	case cmd != "worker" && cmd != "start" && o.thread == "":
		return nil, errors.New("--thread is required")
	case o.addr == "":
		return nil, errors.New("--addr is empty")
	case (cmd == "worker" || cmd == "start") && o.queue == "":
		return nil, errors.New("--queue is empty")
	case (cmd == "worker" || cmd == "start" || cmd == "wait") && o.db == "":
		return nil, errors.New("--db is empty")
	case cmd == "approve" && o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	}
	if cmd == "start" {
		o.question = pos[0]
		if o.thread == "" {
			o.thread = fmt.Sprintf("research-%d", time.Now().UnixNano())
		}
	}
	return o, nil
}

// dial connects to the Temporal frontend at addr, logging warnings and
// errors only.
func dial(addr string, stderr io.Writer) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.Dial(client.Options{HostPort: addr, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", addr, err)
	}
	return c, nil
}

// agentWorkflow returns the agent's workflow on model, with its state in
// the SQLite file db; close closes the checkpointer.
func agentWorkflow(ctx context.Context, model llm.Model, db string) (w *agtemporal.Workflow[State], close func(), err error) {
	saver, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the checkpointer: %w", err)
	}
	g, err := newAgent(model, saver)
	if err == nil {
		w, err = agtemporal.New(workflowName, g)
	}
	if err != nil {
		saver.Close()
		return nil, nil, err
	}
	return w, func() { saver.Close() }, nil
}

// workerCommand runs a worker until ctx is done.
func workerCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	var model llm.Model = newOfflineModel()
	if o.model != "" {
		m, err := llm.New(ctx, o.model)
		if err != nil {
			return err
		}
		model = m
	} else {
		fmt.Fprintln(stderr, "No --model: this worker runs OFFLINE on a scripted model. Its plans and decisions are canned;")
		fmt.Fprintln(stderr, "its tool calls run for real on the bundled notes and its answer quotes what they returned.")
		fmt.Fprintln(stderr, `Give a real model with --model, e.g. --model openai:gpt-4o (OPENAI_API_KEY) or --model ollama:qwen3.`)
	}
	w, closeSaver, err := agentWorkflow(ctx, model, o.db)
	if err != nil {
		return err
	}
	defer closeSaver()
	c, err := dial(o.addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	wk := worker.New(c, o.queue, worker.Options{})
	w.Register(wk)
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	fmt.Fprintf(stdout, "worker %d: serving task queue %s at %s (checkpoints in %s)\n", os.Getpid(), o.queue, o.addr, o.db)
	return wk.Run(stop)
}

// startCommand starts a run and prints its workflow ID.
func startCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	w, closeSaver, err := agentWorkflow(ctx, newOfflineModel(), o.db)
	if err != nil {
		return err
	}
	defer closeSaver()
	c, err := dial(o.addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	// Without WorkflowExecutionErrorWhenAlreadyStarted, a start on a
	// thread with an open run would return that run, and drop the question.
	run, err := w.Start(ctx, c, o.thread, input(o.question), client.StartWorkflowOptions{
		TaskQueue: o.queue, WorkflowExecutionErrorWhenAlreadyStarted: true,
	})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return fmt.Errorf("thread %s has an open run already: finish it (approve, wait) or start on another thread: %w", o.thread, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, run.GetID())
	return nil
}

// statusCommand prints where a run stands.
func statusCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	c, err := dial(o.addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := agtemporal.Query(ctx, c, o.thread)
	if err != nil {
		return err
	}
	return printStatus(stdout, st)
}

// printStatus prints st for a human.
func printStatus(out io.Writer, st agtemporal.Status) error {
	switch {
	case st.Done:
		fmt.Fprintf(out, "thread %s: done after step %d (wait prints the answer)\n", st.Thread, st.Step)
	case st.Paused():
		fmt.Fprintf(out, "thread %s: step %d, waiting for approval\n", st.Thread, st.Step)
	default:
		fmt.Fprintf(out, "thread %s: step %d, running\n", st.Thread, st.Step)
	}
	if len(st.Next) > 0 {
		fmt.Fprintf(out, "next: %s\n", strings.Join(st.Next, ", "))
	}
	for _, in := range st.Interrupts {
		fmt.Fprintf(out, "interrupt %s at node %s\n", in.ID, in.Node)
		var r PlanReview
		if err := json.Unmarshal(in.Value, &r); err != nil {
			fmt.Fprintf(out, "  value: %s\n", in.Value)
			continue
		}
		fmt.Fprintf(out, "  question: %s\n  plan:\n", r.Question)
		for i, step := range r.Plan {
			fmt.Fprintf(out, "    %d. %s\n", i+1, step)
		}
	}
	return nil
}

// approveCommand waits until the run asks for approval and answers it.
func approveCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	c, err := dial(o.addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := waitPaused(ctx, c, o.thread, o.timeout)
	if err != nil {
		return err
	}
	for _, in := range st.Interrupts {
		if in.Node != approveNode {
			continue
		}
		if err := agtemporal.AnswerChecked(ctx, c, o.thread, in.ID, o.answer); err != nil {
			return err
		}
		verb := "approved"
		if !approves(o.answer) {
			verb = "rejected"
		}
		fmt.Fprintf(stdout, "%s the plan of thread %s (interrupt %s)\n", verb, o.thread, in.ID)
		return nil
	}
	return fmt.Errorf("thread %s waits on no approval", o.thread)
}

// ErrNotWaiting is returned by approve when the run finished without
// asking for approval, or did not ask within the timeout.
var ErrNotWaiting = errors.New("the run does not wait for approval")

// waitPaused queries the run of thread until it waits for answers, and
// returns its status.
func waitPaused(ctx context.Context, c client.Client, thread string, timeout time.Duration) (agtemporal.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := agtemporal.Query(ctx, c, thread)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			return st, fmt.Errorf("thread %s: no run: %w", thread, err)
		case err == nil && st.Paused():
			return st, nil
		case err == nil && st.Done:
			return st, fmt.Errorf("thread %s: %w: it finished", thread, ErrNotWaiting)
		}
		// Other query errors (a run whose first workflow task has not
		// run yet, a worker restarting) may pass: try again.
		select {
		case <-ctx.Done():
			if ctx.Err() != context.DeadlineExceeded {
				return st, ctx.Err()
			}
			if err != nil {
				return st, fmt.Errorf("thread %s: %w within %s: %w", thread, ErrNotWaiting, timeout, err)
			}
			return st, fmt.Errorf("thread %s: %w within %s", thread, ErrNotWaiting, timeout)
		case <-tick.C:
		}
	}
}

// waitCommand waits for the run's end and prints its answer.
func waitCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	w, closeSaver, err := agentWorkflow(ctx, newOfflineModel(), o.db)
	if err != nil {
		return err
	}
	defer closeSaver()
	c, err := dial(o.addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	var st agtemporal.Status
	if err := c.GetWorkflow(ctx, o.thread, "").Get(ctx, &st); err != nil {
		return err
	}
	s, err := w.Values(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, s.Answer.Get())
	return nil
}
