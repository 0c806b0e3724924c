// Command agentgraph-temporal runs two agents on Temporal — a research
// agent and the retrAI coding agent — each with a human approving it from
// another terminal, hours later if need be, while any worker — not
// necessarily the one that asked — carries the run on.
//
//	agentgraph-temporal worker  [CONN] [--queue Q] [--db FILE | --postgres URL] [--model SPEC]
//	agentgraph-temporal start   [CONN] [--queue Q] [--db FILE | --postgres URL] [--thread T] [--agent research] "question"
//	agentgraph-temporal start   [CONN] [--queue Q] [--db FILE | --postgres URL] [--thread T] --agent retrai [--project DIR] ["instructions"]
//	agentgraph-temporal status  [CONN] --thread T
//	agentgraph-temporal approve [CONN] --thread T [--answer TEXT] [--timeout D]
//	agentgraph-temporal wait    [CONN] [--db FILE | --postgres URL] --thread T
//
// The research agent (--agent research, the default) is a graph of three
// nodes: plan (the model proposes a plan), approve (graph.Interrupt asks a
// human to approve it; the run waits on Temporal, in no process, for the
// answer) and research (the plan-and-execute agent of package
// agent/planexec, as a subgraph, with two tools over a few bundled team
// notes: search_notes and read_note).
//
// The retrAI agent (--agent retrai) is the coding agent of package
// agent/retrai with the goal go-test: plan (the model, with the coding
// tools) → act → evaluate (`go test ./...`), until the tests pass, with its
// human check on: after every iteration that did not reach the goal, the
// run waits on Temporal for an approve or an abort. It works on the
// project --project, by default a copy, in a new temporary directory, of a
// bundled sample Go module whose test fails. The tool calls of a model
// turn run one after the other, in call order, as in process: the
// workflow keeps to the graph's graph.WithMaxConcurrency(1).
//
// `worker` registers both agents with a Temporal worker of task queue
// --queue and runs until interrupted. The state of every run lives in the
// SQLite checkpointer --db (checkpoint/sqlite), which all the workers of a
// machine share, or in the PostgreSQL checkpointer --postgres
// (checkpoint/postgres) for workers on several machines; Temporal carries
// references to it. Start several workers: each superstep of a run goes
// to whichever is free.
//
// `start` starts a run on thread --thread (default: a new one) and prints
// the workflow ID, which is the thread; a thread that has a run already,
// open or finished, is refused. `status` prints where the run stands: its
// next nodes and its pending interrupt, with what it asks — from the run's
// memo (temporal.Describe), so it answers with every worker stopped. `approve` waits
// until the run asks for approval (at most --timeout) and answers with
// --answer through an update (temporal.AnswerChecked), which the run
// refuses when it does not wait on that interrupt: "approve" (the
// default), "yes" or "ok" approve; "reject", "abort" or "no" reject (the
// research agent ends, retrAI stops); any other text approves the
// research agent's plan and is given to it as the reviewer's note
// (retrAI takes no note, and such an answer is refused). `wait` waits for
// the run's end and prints its result. status, approve and wait find the
// agent of a thread from its workflow's type.
//
// The model comes from the worker's --model, a spec of llm.New
// ("openai:gpt-4o", "anthropic:claude-sonnet-4-5", "ollama:qwen3", …).
// Without one the worker runs OFFLINE on scripted models, and says so.
// The research agent's plans and decisions are canned, but its tool calls
// run for real and its answer quotes the note the tools returned. retrAI's
// answers are the canned fix of the bundled sample (samples.Model): its
// tools and its goal check (`go test`) run for real, on the sample only.
// Unlike llm.Scripted both models' replies depend on the messages only,
// so that two worker processes carry on each other's runs.
//
// CONN are the Temporal CLI's connection flags — --address (or --addr),
// --namespace, --api-key, --tls, --tls-cert-path, --tls-key-path,
// --tls-ca-path, their -data forms, --tls-server-name and
// --tls-disable-host-verification — each defaulting to the CLI's
// environment variable ($TEMPORAL_ADDRESS, $TEMPORAL_NAMESPACE,
// $TEMPORAL_API_KEY, $TEMPORAL_TLS_CERT, …), so that a shell set up for
// `temporal` and a Temporal Cloud namespace works as it is. --address
// falls back on $AGENTGRAPH_TEMPORAL_ADDR, else localhost:7233.
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

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
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
	defaultQueue = "agentgraph-agents"
	defaultDB    = "agentgraph-temporal.db"
	defaultAgent = workflowName
)

const usage = `agentgraph-temporal — a research agent and the retrAI coding agent on Temporal,
with a human approving them.

Usage:
  agentgraph-temporal worker  [CONN] [--queue Q] [--db FILE | --postgres URL] [--model SPEC]
  agentgraph-temporal start   [CONN] [--queue Q] [--db FILE | --postgres URL] [--thread T] [--agent research] "question"
  agentgraph-temporal start   [CONN] [--queue Q] [--db FILE | --postgres URL] [--thread T] --agent retrai [--project DIR] ["instructions"]
  agentgraph-temporal status  [CONN] --thread T
  agentgraph-temporal approve [CONN] --thread T [--answer TEXT] [--timeout D]
  agentgraph-temporal wait    [CONN] [--db FILE | --postgres URL] --thread T

CONN are the Temporal CLI's connection flags, each defaulting to its
environment variable: --address HOST:PORT ($TEMPORAL_ADDRESS, else
$AGENTGRAPH_TEMPORAL_ADDR, else localhost:7233; --addr is the same),
--namespace/-n ($TEMPORAL_NAMESPACE, else default), --api-key
($TEMPORAL_API_KEY), --tls ($TEMPORAL_TLS), --tls-cert-path ($TEMPORAL_TLS_CERT),
--tls-key-path ($TEMPORAL_TLS_KEY), --tls-ca-path ($TEMPORAL_TLS_CA),
--tls-cert-data, --tls-key-data, --tls-ca-data ($TEMPORAL_TLS_*_DATA),
--tls-server-name ($TEMPORAL_TLS_SERVER_NAME) and
--tls-disable-host-verification ($TEMPORAL_TLS_DISABLE_HOST_VERIFICATION).

A worker runs both agents. --queue defaults to agentgraph-agents. The
checkpointer the workers share is the SQLite file --db (default
agentgraph-temporal.db) for workers on one machine, or the PostgreSQL
database --postgres ($AGENTGRAPH_TEMPORAL_POSTGRES) for workers on several.
status answers with every worker stopped. Without --model the worker runs
offline on scripted models. retrAI works on --project, by default a copy of a
bundled Go module with a failing test. Try:
  start "How long are application logs kept?"
  start --agent retrai
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
	conn                                   connOptions
	postgres                               string
	addr, queue, db, model, thread, answer string
	agent, project                         string
	timeout                                time.Duration
	// question is the research agent's question, or retrAI's
	// instructions.
	question string
}

// parseFlags parses the flags of cmd, which may come before or after its
// positional argument.
func parseFlags(cmd string, args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.conn.register(fs)
	switch cmd {
	case "worker", "start":
		fs.StringVar(&o.queue, "queue", defaultQueue, "Temporal task `queue` of the workers")
	}
	switch cmd {
	case "worker", "start", "wait":
		fs.StringVar(&o.db, "db", defaultDB, "SQLite `file` of the checkpointer the workers of one machine share (see --postgres)")
		fs.StringVar(&o.postgres, "postgres", os.Getenv(envPostgres),
			"PostgreSQL `URL` of the checkpointer the workers of several machines share, instead of --db (default $"+envPostgres+")")
	}
	switch cmd {
	case "worker":
		fs.StringVar(&o.model, "model", "", "model `spec` of llm.New (default: the offline scripted models)")
	case "start":
		fs.StringVar(&o.thread, "thread", "", "`thread` (and workflow ID) of the run (default: a new one)")
		fs.StringVar(&o.agent, "agent", defaultAgent, "the `agent` to run: research or retrai")
		fs.StringVar(&o.project, "project", "", "retrai: the Go project `directory` to fix, on a disk the workers share (default: a copy of the bundled sample)")
	case "status", "approve", "wait":
		fs.StringVar(&o.thread, "thread", "", "`thread` (workflow ID) of the run")
	}
	if cmd == "approve" {
		fs.StringVar(&o.answer, "answer", "approve", "the reviewer's `answer`: approve, reject, or (research) a note that approves")
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
	research, retraiAgent := o.agent == workflowName, o.agent == retraiWorkflow
	switch {
	case cmd == "start" && !research && !retraiAgent:
		return nil, fmt.Errorf("unknown agent %q: want %s or %s", o.agent, workflowName, retraiWorkflow)
	case cmd == "start" && research && len(pos) != 1:
		return nil, fmt.Errorf("want one question, got %d arguments", len(pos))
	case cmd == "start" && research && strings.TrimSpace(pos[0]) == "":
		return nil, errors.New("the question is empty")
	case cmd == "start" && research && o.project != "":
		return nil, errors.New("--project is for --agent retrai")
	case cmd == "start" && retraiAgent && len(pos) > 1:
		return nil, fmt.Errorf("want at most one argument (retrAI's instructions), got %d", len(pos))
	case cmd != "start" && len(pos) > 0:
		return nil, fmt.Errorf("unexpected argument %q", pos[0])
	case cmd != "worker" && cmd != "start" && o.thread == "":
		return nil, errors.New("--thread is required")
	case o.conn.address == "":
		return nil, errors.New("--address is empty")
	case o.conn.namespace == "":
		return nil, errors.New("--namespace is empty")
	case (cmd == "worker" || cmd == "start") && o.queue == "":
		return nil, errors.New("--queue is empty")
	case (cmd == "worker" || cmd == "start" || cmd == "wait") && o.db == "" && o.postgres == "":
		return nil, errors.New("--db is empty")
	case cmd == "approve" && o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	}
	if err := o.conn.check(); err != nil {
		return nil, err
	}
	o.addr = o.conn.address
	if cmd == "start" {
		if len(pos) > 0 {
			o.question = pos[0]
		}
		if o.thread == "" {
			o.thread = fmt.Sprintf("%s-%d", o.agent, time.Now().UnixNano())
		}
	}
	return o, nil
}

// dial connects to the Temporal frontend of o, logging warnings and
// errors only.
func dial(o *options, stderr io.Writer) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	copts, err := o.conn.clientOptions()
	if err != nil {
		return nil, err
	}
	copts.Logger = logger
	c, err := client.Dial(copts)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", o.conn.address, o.conn.namespace, err)
	}
	return c, nil
}

// agents are the workflows of the two agents, on one saver.
type agents struct {
	saver    saver
	research *agtemporal.Workflow[State]
	retrai   *agtemporal.Workflow[retrai.State]
}

// saver is the checkpointer the workers share.
type saver interface {
	checkpoint.Saver
	Close() error
}

// openSaver opens the checkpointer of o: PostgreSQL at --postgres, for
// workers on several machines, else the SQLite file --db.
func openSaver(ctx context.Context, o *options) (saver, error) {
	if o.postgres != "" {
		s, err := postgres.Open(ctx, o.postgres)
		if err != nil {
			return nil, fmt.Errorf("opening the PostgreSQL checkpointer: %w", err)
		}
		return s, nil
	}
	s, err := sqlite.Open(ctx, o.db)
	if err != nil {
		return nil, fmt.Errorf("opening the checkpointer: %w", err)
	}
	return s, nil
}

// store names the checkpointer of o for messages (never the URL, which
// may hold a password).
func (o *options) store() string {
	if o.postgres != "" {
		return "PostgreSQL (--postgres)"
	}
	return o.db
}

// openAgents returns the agents' workflows with their state in the
// checkpointer of o: the research agent on researchModel, retrAI on
// retraiModel. Close closes the checkpointer.
func openAgents(ctx context.Context, o *options, researchModel, retraiModel llm.Model) (*agents, error) {
	sv, err := openSaver(ctx, o)
	if err != nil {
		return nil, err
	}
	a := &agents{saver: sv}
	if err := a.build(researchModel, retraiModel); err != nil {
		sv.Close()
		return nil, err
	}
	return a, nil
}

// openOfflineAgents returns the agents on their offline models, for the
// commands that run no node (start, wait).
func openOfflineAgents(ctx context.Context, o *options) (*agents, error) {
	return openAgents(ctx, o, newOfflineModel(), newRetraiOfflineModel())
}

func (a *agents) build(researchModel, retraiModel llm.Model) error {
	g, err := newAgent(researchModel, a.saver)
	if err != nil {
		return err
	}
	if a.research, err = agtemporal.New(workflowName, g); err != nil {
		return err
	}
	rg, err := newRetrai(retraiModel, a.saver)
	if err != nil {
		return err
	}
	// retrAI's workflow takes the package's defaults. Its act step has a
	// task per tool call of the model's turn, which must run one after the
	// other, in call order ("patch the file, then run the tests"); its
	// graph says so with graph.WithMaxConcurrency(1), and the workflow
	// keeps to it, starting each task activity when the one before
	// finished.
	a.retrai, err = agtemporal.New(retraiWorkflow, rg)
	return err
}

// Close closes the checkpointer.
func (a *agents) Close() error { return a.saver.Close() }

// register registers both agents with r.
func (a *agents) register(r agtemporal.Registry) {
	a.research.Register(r)
	a.retrai.Register(r)
}

// workerCommand runs a worker until ctx is done.
func workerCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	var researchModel, retraiModel llm.Model = newOfflineModel(), newRetraiOfflineModel()
	if o.model != "" {
		m, err := llm.New(ctx, o.model)
		if err != nil {
			return err
		}
		researchModel, retraiModel = m, m
	} else {
		fmt.Fprintln(stderr, "No --model: this worker runs OFFLINE on scripted models (no LLM is called).")
		fmt.Fprintln(stderr, "  research: its plans and decisions are canned; its tool calls run for real on the bundled notes")
		fmt.Fprintln(stderr, "  and its answer quotes what they returned.")
		fmt.Fprintln(stderr, "  retrai: its answers are the canned fix of the bundled sample Go module; its tools and its goal")
		fmt.Fprintln(stderr, "  check (go test) run for real. It fixes that sample only.")
		fmt.Fprintln(stderr, `Give a real model with --model, e.g. --model openai:gpt-4o (OPENAI_API_KEY) or --model ollama:qwen3.`)
	}
	a, err := openAgents(ctx, o, researchModel, retraiModel)
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := dial(o, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	wk := worker.New(c, o.queue, worker.Options{})
	a.register(wk)
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	fmt.Fprintf(stdout, "worker %d: serving agents %s and %s on task queue %s at %s, namespace %s (checkpoints in %s)\n",
		os.Getpid(), workflowName, retraiWorkflow, o.queue, o.addr, o.conn.namespace, o.store())
	return wk.Run(stop)
}

// ErrThreadUsed is returned by start for a thread that has a run already.
var ErrThreadUsed = errors.New("the thread has a run already")

// startCommand starts a run and prints its workflow ID.
func startCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	a, err := openOfflineAgents(ctx, o)
	if err != nil {
		return err
	}
	defer a.Close()
	// A thread holds one run: a new input on a finished run's thread
	// would be merged into its state, which may even be the other
	// agent's.
	_, err = a.saver.Get(ctx, checkpoint.Ref{ThreadID: o.thread})
	switch {
	case err == nil:
		return fmt.Errorf("thread %s: %w (its checkpoints are in %s): start on another thread", o.thread, ErrThreadUsed, o.store())
	case !errors.Is(err, checkpoint.ErrNotFound):
		return fmt.Errorf("reading thread %s: %w", o.thread, err)
	}
	c, err := dial(o, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	// Without WorkflowExecutionErrorWhenAlreadyStarted, a start on a
	// thread with an open run would return that run, and drop the input.
	opts := client.StartWorkflowOptions{TaskQueue: o.queue, WorkflowExecutionErrorWhenAlreadyStarted: true}
	var wr client.WorkflowRun
	switch o.agent {
	case retraiWorkflow:
		dir, created, perr := retraiProject(o.project)
		if perr != nil {
			return perr
		}
		wr, err = a.retrai.Start(ctx, c, o.thread, retraiInput(o.thread, dir, o.question), opts)
		switch {
		case err != nil && created:
			_ = os.RemoveAll(dir)
		case created:
			fmt.Fprintf(stderr, "retrai works on a copy of the bundled sample (a Go module whose test fails) in %s\n", dir)
		default:
			fmt.Fprintf(stderr, "retrai works on %s\n", dir)
		}
	default:
		wr, err = a.research.Start(ctx, c, o.thread, input(o.question), opts)
	}
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return fmt.Errorf("thread %s: %w, still open: finish it (approve, wait) or start on another thread: %w", o.thread, ErrThreadUsed, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, wr.GetID())
	return nil
}

// agentOf returns the name of the agent the run of thread runs: its
// workflow's type.
func agentOf(ctx context.Context, c client.Client, thread string) (string, error) {
	d, err := c.DescribeWorkflowExecution(ctx, thread, "")
	if err != nil {
		return "", fmt.Errorf("thread %s: no run: %w", thread, err)
	}
	name := d.GetWorkflowExecutionInfo().GetType().GetName()
	switch name {
	case workflowName, retraiWorkflow:
		return name, nil
	}
	return "", fmt.Errorf("thread %s runs workflow %q, not one of this command's agents", thread, name)
}

// statusCommand prints where a run stands. It reads the run's progress
// from its memo (temporal.Describe), which the server holds: it answers
// with every worker stopped. Only an interrupt whose payload the memo
// holds cut short is asked of a worker (a query), when one is up.
func statusCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	c, err := dial(o, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	ri, err := agtemporal.Describe(ctx, c, o.thread)
	if err != nil {
		return fmt.Errorf("thread %s: no run: %w", o.thread, err)
	}
	name := ri.WorkflowType
	if name != workflowName && name != retraiWorkflow {
		return fmt.Errorf("thread %s runs workflow %q, not one of this command's agents", o.thread, name)
	}
	if !ri.Known {
		// A run whose first workflow task has not run yet, or started by
		// an older worker: only a query can tell.
		st, err := agtemporal.Query(ctx, c, o.thread)
		if err != nil {
			return fmt.Errorf("thread %s (%s): the run has recorded no progress yet, and no worker answered: %w", o.thread, name, err)
		}
		return printStatus(stdout, name, st)
	}
	var full map[string]json.RawMessage
	for _, in := range ri.Interrupts {
		if in.Truncated && full == nil {
			full = map[string]json.RawMessage{}
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			if st, err := agtemporal.Query(qctx, c, o.thread); err == nil {
				for _, in := range st.Interrupts {
					full[in.ID] = in.Value
				}
			}
			cancel()
		}
	}
	printProgress(stdout, name, ri, full)
	return nil
}

// printProgress prints ri, the progress of a run of agent name, for a
// human; full has the whole payloads of interrupts the memo cut short,
// when a worker gave them.
func printProgress(out io.Writer, name string, ri agtemporal.RunInfo, full map[string]json.RawMessage) {
	switch {
	case ri.Status == agtemporal.ProgressFinished:
		fmt.Fprintf(out, "thread %s (%s): done after step %d (wait prints the result)\n", ri.Thread, name, ri.Step)
	case ri.Status == agtemporal.ProgressFailed:
		fmt.Fprintf(out, "thread %s (%s): failed at step %d: %s\n", ri.Thread, name, ri.Step, ri.Error)
	case ri.Execution != "Running":
		fmt.Fprintf(out, "thread %s (%s): %s at step %d\n", ri.Thread, name, strings.ToLower(ri.Execution), ri.Step)
	case ri.Status == agtemporal.ProgressWaiting:
		fmt.Fprintf(out, "thread %s (%s): step %d, waiting for approval\n", ri.Thread, name, ri.Step)
	default:
		fmt.Fprintf(out, "thread %s (%s): step %d, running\n", ri.Thread, name, ri.Step)
	}
	if len(ri.Next) > 0 && ri.Status != agtemporal.ProgressFinished {
		fmt.Fprintf(out, "next: %s\n", strings.Join(ri.Next, ", "))
	}
	for _, in := range ri.Interrupts {
		fmt.Fprintf(out, "interrupt %s at node %s\n", in.ID, in.Node)
		value := json.RawMessage(in.Summary)
		if v, ok := full[in.ID]; ok {
			value = v
		} else if in.Truncated {
			fmt.Fprintf(out, "  value (its first %d bytes; a worker shows it whole): %s…\n", len(in.Summary), in.Summary)
			continue
		}
		if name == retraiWorkflow {
			printHumanCheck(out, value)
		} else {
			printPlanReview(out, value)
		}
	}
	if ri.Omitted > 0 {
		fmt.Fprintf(out, "and %d more interrupts\n", ri.Omitted)
	}
}

// printStatus prints st, the status of a run of agent name, for a human.
func printStatus(out io.Writer, name string, st agtemporal.Status) error {
	switch {
	case st.Done:
		fmt.Fprintf(out, "thread %s (%s): done after step %d (wait prints the result)\n", st.Thread, name, st.Step)
	case st.Paused():
		fmt.Fprintf(out, "thread %s (%s): step %d, waiting for approval\n", st.Thread, name, st.Step)
	default:
		fmt.Fprintf(out, "thread %s (%s): step %d, running\n", st.Thread, name, st.Step)
	}
	if len(st.Next) > 0 {
		fmt.Fprintf(out, "next: %s\n", strings.Join(st.Next, ", "))
	}
	for _, in := range st.Interrupts {
		fmt.Fprintf(out, "interrupt %s at node %s\n", in.ID, in.Node)
		if name == retraiWorkflow {
			printHumanCheck(out, in.Value)
		} else {
			printPlanReview(out, in.Value)
		}
	}
	return nil
}

// printPlanReview prints the plan the research agent asks to approve.
func printPlanReview(out io.Writer, value json.RawMessage) {
	var r PlanReview
	if err := json.Unmarshal(value, &r); err != nil {
		fmt.Fprintf(out, "  value: %s\n", value)
		return
	}
	fmt.Fprintf(out, "  question: %s\n  plan:\n", r.Question)
	for i, step := range r.Plan {
		fmt.Fprintf(out, "    %d. %s\n", i+1, step)
	}
}

// approveCommand waits until the run asks for approval and answers it.
func approveCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	c, err := dial(o, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	name, err := agentOf(ctx, c, o.thread)
	if err != nil {
		return err
	}
	node, what := approveNode, "the plan"
	var value any = o.answer
	approved := approves(o.answer)
	if name == retraiWorkflow {
		node, what = retrai.HumanCheckNode, "the next iteration"
		if value, approved, err = retraiAnswer(o.answer); err != nil {
			return err
		}
	}
	st, err := waitPaused(ctx, c, o.thread, o.timeout)
	if err != nil {
		return err
	}
	for _, in := range st.Interrupts {
		if in.Node != node {
			continue
		}
		if err := agtemporal.AnswerChecked(ctx, c, o.thread, in.ID, value); err != nil {
			return err
		}
		verb := "approved"
		if !approved {
			verb = "rejected"
		}
		fmt.Fprintf(stdout, "%s %s of thread %s (interrupt %s)\n", verb, what, o.thread, in.ID)
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

// waitCommand waits for the run's end and prints its result.
func waitCommand(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	a, err := openOfflineAgents(ctx, o)
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := dial(o, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	name, err := agentOf(ctx, c, o.thread)
	if err != nil {
		return err
	}
	var st agtemporal.Status
	if err := c.GetWorkflow(ctx, o.thread, "").Get(ctx, &st); err != nil {
		return err
	}
	if name == retraiWorkflow {
		s, err := a.retrai.Values(ctx, st)
		if err != nil {
			return err
		}
		printRetraiResult(stdout, s)
		return nil
	}
	s, err := a.research.Values(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, s.Answer.Get())
	return nil
}
