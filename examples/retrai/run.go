package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// demoPrefix marks the model spec of the offline demo's runs: "demo:<sample>".
const demoPrefix = "demo:"

// Environment variables of retrai.
const (
	// modelEnv supplies the model when --model is not given.
	modelEnv = "RETRAI_MODEL"
	// allowEndpointEnv, set to 1 (or true), lets .retrai.yml name the
	// model's endpoint, as --allow-config-endpoint does.
	allowEndpointEnv = "RETRAI_ALLOW_CONFIG_ENDPOINT"
	// leaseTTLEnv sets the time to live of a run's thread lease (a Go
	// duration; default graph.DefaultLeaseTTL): how long a run whose
	// process died still counts as live. It is meant for tests, which
	// cannot wait half a minute; a short one makes a run that misses a
	// renewal lose its lease.
	leaseTTLEnv = "RETRAI_LEASE_TTL"
)

// runFlags are the flags of `retrai run`.
type runFlags struct {
	goal, model, cwd, db, resume string
	sandbox                      tools.SandboxMode
	maxIterations                int
	hitl                         bool
	allowConfigEndpoint          bool
	set                          map[string]bool // the flags given
}

// settingFlags are the flags that configure a new run, which --resume
// refuses: a run keeps the settings it was created with.
var settingFlags = []string{"goal", "model", "cwd", "max-iterations", "hitl"}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	return parseRunFlagsOf("run", "With no model configured, runs the offline demo on a bundled sample project.", args, stderr)
}

// parseRunFlagsOf parses the flags of `retrai run` for the command cmd,
// whose usage says about.
func parseRunFlagsOf(cmd, about string, args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{set: map[string]bool{}}
	fs := flag.NewFlagSet("retrai "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.goal, "goal", "", "goal to pursue (default: .retrai.yml's, else detected; in the demo: the sample, one of "+strings.Join(samples.Names(), ", ")+")")
	fs.StringVar(&f.model, "model", "", "model, e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, openai-compatible:<model>@<url> (default: $"+modelEnv+", else .retrai.yml's; none: the offline demo)")
	fs.IntVar(&f.maxIterations, "max-iterations", 0, "iteration limit (default: .retrai.yml's, else 50)")
	fs.BoolVar(&f.hitl, "hitl", false, "ask a human to approve every iteration (answers read from standard input)")
	fs.StringVar(&f.cwd, "cwd", ".", "project directory")
	fs.StringVar(&f.db, "db", "", "SQLite file or postgres:// URL for runs and checkpoints (default "+runs.DefaultDB()+")")
	fs.StringVar(&f.resume, "resume", "", "resume the run with this ID (see retrai runs) instead of starting one; it keeps its settings")
	fs.BoolVar(&f.allowConfigEndpoint, "allow-config-endpoint", false, "let the project's "+goals.ConfigFile+" choose the model's endpoint (a base URL in its model), where your API key is sent; also $"+allowEndpointEnv+"=1")
	fs.Func("sandbox", "auto|required|off: how the agent's commands, tests and goal checks are confined; auto runs them unconfined, with a warning, where there is no sandbox (default auto)", func(v string) error {
		mode, err := tools.ParseSandboxMode(v)
		f.sandbox = mode
		return err
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: retrai %s [flags]\n\n%s\n\nFlags:\n", cmd, about)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "retrai %s: unexpected arguments %q\n", cmd, fs.Args())
		fs.Usage()
		return nil, errors.New("unexpected arguments")
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.set["max-iterations"] && f.maxIterations <= 0 {
		fmt.Fprintf(stderr, "retrai %s: --max-iterations must be positive, not %d\n", cmd, f.maxIterations)
		return nil, errors.New("bad --max-iterations")
	}
	if f.resume != "" {
		for _, name := range settingFlags {
			if f.set[name] {
				fmt.Fprintf(stderr, "retrai %s: --%s cannot be used with --resume: a resumed run keeps the settings it was created with (see retrai runs %s); start a new run to change them\n", cmd, name, f.resume)
				return nil, errors.New("setting with --resume")
			}
		}
	}
	if v := strings.TrimSpace(os.Getenv(allowEndpointEnv)); v == "1" || strings.EqualFold(v, "true") {
		f.allowConfigEndpoint = true
	}
	return f, nil
}

// managerOptions returns the options of the runs manager of db, whose
// runs' commands are confined by sandbox; it reads $RETRAI_LEASE_TTL.
func managerOptions(db string, allowConfigEndpoint bool, sandbox tools.SandboxMode) (runs.Options, error) {
	opts := runs.Options{DB: db, Models: models, AllowConfigEndpoint: allowConfigEndpoint, Sandbox: sandbox}
	if v := strings.TrimSpace(os.Getenv(leaseTTLEnv)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return opts, usageError{fmt.Sprintf("$%s=%q: want a positive Go duration such as 30s", leaseTTLEnv, v)}
		}
		opts.LeaseTTL = d
	}
	return opts, nil
}

// models builds the model of a run: the demo's scripted model for "demo:"
// specs, llm.New otherwise.
func models(ctx context.Context, spec string) (llm.Model, error) {
	if name, ok := strings.CutPrefix(spec, demoPrefix); ok {
		return samples.Model(name)
	}
	return llm.New(ctx, spec)
}

// runCommand is `retrai run`.
func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseRunFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitAchieved
	}
	if err != nil {
		return exitUsage
	}
	m, run, demo, code := openRun(ctx, f, stdout, stderr)
	if m == nil {
		return code
	}
	defer m.Close()
	if f.resume != "" {
		if name, ok := strings.CutPrefix(run.Model, demoPrefix); ok {
			printDemoNotice(stdout, name, run.Cwd, displayDB(m.DB()), true)
		}
		fmt.Fprintf(stdout, "resuming run %s (%s after %d iteration(s))\n", run.ID, run.Status, run.Iteration)
	} else if demo != "" {
		printDemoNotice(stdout, demo, run.Cwd, displayDB(m.DB()), false)
	}
	printHeader(stdout, run, displayModel(run.Model), displayDB(m.DB()))
	fmt.Fprint(stdout, sandboxnote.Lines(tools.SandboxStatus(), f.sandbox)+"\n")

	final, err := drive(ctx, m, run, f.resume != "", bufio.NewReader(stdin), !isTerminal(stdin), stdout)
	if err != nil {
		fmt.Fprintln(stderr, "retrai:", err)
		return exitNotDone
	}
	return finish(stdout, m, final)
}

// finish prints the summary of the run and returns the exit code; for a run
// of the offline demo that has ended, it removes the demo's copy of the
// sample project.
func finish(w io.Writer, m *runs.Manager, run runs.Run) int {
	code := summary(w, m, run)
	if !strings.HasPrefix(run.Model, demoPrefix) || !isDemoDir(run.Cwd) {
		return code
	}
	if !run.Status.Final() {
		fmt.Fprintf(w, "  the demo's project copy stays in %s until the run ends\n", run.Cwd)
		return code
	}
	if err := os.RemoveAll(run.Cwd); err != nil {
		fmt.Fprintf(w, "  could not remove the demo's project copy %s: %v\n", run.Cwd, err)
	} else {
		fmt.Fprintf(w, "  removed the demo's project copy %s\n", run.Cwd)
	}
	return code
}

// demoDirPrefix starts the names of the temporary directories that hold the
// offline demo's copies of the sample projects.
const demoDirPrefix = "retrai-demo-"

// isDemoDir reports whether dir is a temporary directory made for the
// offline demo by this user (and so may be removed).
func isDemoDir(dir string) bool {
	return strings.HasPrefix(filepath.Base(dir), demoDirPrefix) && filepath.Dir(dir) == filepath.Clean(os.TempDir())
}

// openRun opens the manager of the flags' database and returns it with the
// run that `retrai run` or `retrai tui` drives: the run of --resume, or a
// new one; demo names the sample of a new offline demo run. When there is
// nothing to drive — an error, or a resumed run that has already ended,
// whose summary it prints — it returns a nil manager and the exit code.
func openRun(ctx context.Context, f *runFlags, stdout, stderr io.Writer) (m *runs.Manager, run runs.Run, demo string, code int) {
	fail := func(err error) (*runs.Manager, runs.Run, string, int) {
		fmt.Fprintln(stderr, "retrai:", err)
		if errors.As(err, new(usageError)) {
			return nil, runs.Run{}, "", exitUsage
		}
		return nil, runs.Run{}, "", exitNotDone
	}
	var cfg runs.Config
	if f.resume == "" {
		var err error
		if cfg, demo, err = newRunConfig(f); err != nil {
			return fail(err)
		}
	}
	opts, err := managerOptions(f.db, f.allowConfigEndpoint, f.sandbox)
	if err != nil {
		return fail(err)
	}
	m, err = runs.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	if f.resume != "" {
		run, err = m.Get(ctx, f.resume)
		if err == nil && run.Status == runs.StatusRunning {
			// Live in another process: a second execution would run
			// every tool call again.
			err = m.CheckIdle(ctx, run.ID)
		}
	} else {
		run, err = createRun(ctx, m, cfg, demo)
		if errors.Is(err, runs.ErrConfigEndpoint) {
			err = fmt.Errorf("%w\n  pass --model to choose the model yourself, or, if you trust this project, --allow-config-endpoint (or $%s=1)", err, allowEndpointEnv)
		}
	}
	if err != nil {
		m.Close()
		return fail(err)
	}
	if f.resume != "" && run.Status.Final() {
		fmt.Fprintf(stdout, "run %s has already ended (%s).\n", run.ID, run.Status)
		code := finish(stdout, m, run)
		m.Close()
		return nil, run, "", code
	}
	return m, run, demo, exitAchieved
}

// usageError is a problem with the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// newRunConfig returns the configuration of a new run from the flags, the
// environment and .retrai.yml, and the demo's sample name when no model is
// configured.
func newRunConfig(f *runFlags) (runs.Config, string, error) {
	cfg := runs.Config{Goal: f.goal, Cwd: f.cwd, Model: f.model, MaxIterations: f.maxIterations, HITL: f.hitl}
	if cfg.Model == "" {
		cfg.Model = strings.TrimSpace(os.Getenv(modelEnv))
	}
	if cfg.Model != "" {
		return cfg, "", nil
	}
	fileCfg, _, err := goals.LoadConfig(f.cwd)
	if err != nil {
		return cfg, "", err
	}
	if fileCfg != nil && strings.TrimSpace(fileCfg.Model) != "" {
		return cfg, "", nil // the manager takes the model from .retrai.yml
	}
	if f.set["cwd"] {
		return cfg, "", usageError{fmt.Sprintf("no model configured for %s: pass --model (e.g. --model openai:gpt-4o-mini), set $%s, or set model in %s; without --cwd, retrai runs the offline demo",
			f.cwd, modelEnv, goals.ConfigFile)}
	}
	sample := f.goal
	if sample == "" {
		sample = samples.GoTest
	}
	if !slices.Contains(samples.Names(), sample) {
		return cfg, "", usageError{fmt.Sprintf("no model configured, so this would be the offline demo, which has no %q sample (samples: %s); pass --model to use a real model",
			sample, strings.Join(samples.Names(), ", "))}
	}
	cfg.Goal, cfg.Model = sample, demoPrefix+sample
	return cfg, sample, nil
}

// createRun records the run of cfg; for the offline demo (demo names its
// sample) on a fresh copy of the sample project in a temporary directory.
func createRun(ctx context.Context, m *runs.Manager, cfg runs.Config, demo string) (runs.Run, error) {
	if demo != "" {
		dir, err := os.MkdirTemp("", demoDirPrefix+demo+"-")
		if err != nil {
			return runs.Run{}, err
		}
		if err := samples.Copy(demo, dir); err != nil {
			_ = os.RemoveAll(dir)
			return runs.Run{}, err
		}
		cfg.Cwd = dir
		run, err := m.Create(ctx, cfg)
		if err != nil {
			_ = os.RemoveAll(dir)
		}
		return run, err
	}
	return m.Create(ctx, cfg)
}

// printDemoNotice tells what the offline demo is: which sample, where its
// copy is, and where the run is kept (db).
func printDemoNotice(w io.Writer, sample, dir, db string, resumed bool) {
	what := fmt.Sprintf("It fixes a bundled %s sample project with a failing check, copied to %s\n  (removed when the run ends).", sample, dir)
	if resumed {
		what = fmt.Sprintf("This run of the offline demo works on the %s sample in %s.", sample, dir)
	}
	fmt.Fprintf(w, `retrai: OFFLINE DEMO — no model is configured (no --model flag, no $%s).
  The model is SCRIPTED: its answers are canned, no LLM is called, and its token counts are made up.
  %s
  Its run is recorded, like every run, in %s (see retrai runs; --db to use another).
  To use a real model on your project:
    retrai run --cwd DIR --model openai:gpt-4o-mini                 (needs OPENAI_API_KEY)
    retrai run --cwd DIR --model anthropic:claude-sonnet-4-5        (needs ANTHROPIC_API_KEY)
    retrai run --cwd DIR --model openai-compatible:<model>@<base URL>

`, modelEnv, what, db)
}

// printHeader prints the run's configuration; model and db are shown as
// given.
func printHeader(w io.Writer, run runs.Run, model, db string) {
	hitl := ""
	if run.HITL {
		hitl = ", human check after every iteration"
	}
	fmt.Fprintf(w, "run %s: goal %s in %s\n  model %s, up to %d iterations%s; db %s\n\n",
		run.ID, run.Goal, run.Cwd, model, run.MaxIterations, hitl, db)
}

// displayModel marks the scripted model of the offline demo.
func displayModel(model string) string {
	if strings.HasPrefix(model, demoPrefix) {
		return model + " (scripted)"
	}
	return model
}

// displayDB hides the password of a database URL.
func displayDB(db string) string {
	if !runs.IsPostgresURL(db) {
		return db
	}
	if i, j := strings.Index(db, "://"), strings.LastIndex(db, "@"); i >= 0 && j > i {
		if k := strings.Index(db[i+3:j], ":"); k >= 0 {
			return db[:i+3+k] + ":***" + db[j:]
		}
	}
	return db
}

// drive starts (or resumes) the run, renders its events, asks the human
// checks on in, and returns the run once it has stopped for good: ended,
// or interrupted (ctx done, or no answer to a human check).
func drive(ctx context.Context, m *runs.Manager, run runs.Run, resume bool, in *bufio.Reader, echo bool, out io.Writer) (runs.Run, error) {
	// The subscription outlives ctx, so that the end of an interrupted run
	// is still shown.
	subCtx, unsubscribe := context.WithCancel(context.WithoutCancel(ctx))
	defer unsubscribe()
	sub := m.Bus().Subscribe(subCtx, events.FilterRunIDs(run.ID), events.QueueSize(1<<14))
	stopWatch := context.AfterFunc(ctx, func() { _ = m.Cancel(run.ID) })
	defer stopWatch()
	answers := newLineReader(in, echo)

	var err error
	switch {
	case !resume:
		err = m.Start(ctx, run.ID)
	case run.Status == runs.StatusWaiting:
		fmt.Fprintf(out, "  ? %s\n", run.Question)
		var decision string
		if decision, err = ask(ctx, answers, out); err == nil {
			err = m.Resume(ctx, run.ID, decision)
		}
	default:
		err = m.Resume(ctx, run.ID, "")
	}
	if errors.Is(err, errNoAnswer) {
		return m.Get(context.WithoutCancel(ctx), run.ID)
	}
	if err != nil {
		r, gerr := m.Get(context.WithoutCancel(ctx), run.ID)
		if gerr == nil && r.Status == runs.StatusError && r.Error != "" && !errors.Is(err, runs.ErrLive) {
			return r, nil // the run recorded the error; the summary shows it
		}
		return run, err
	}

	r := newRenderer(out, run.MaxIterations)
	for ev, err := range sub.Events() {
		if lost, ok := errors.AsType[*events.LostError](err); ok {
			fmt.Fprintf(out, "  (%d events not shown)\n", lost.N)
			continue
		}
		r.render(ev)
		switch p := ev.Data.(type) {
		case runs.Ended:
			if p.Live {
				// Another process took the run over: its record is that
				// process's.
				return run, errors.New(p.Error)
			}
			return m.Wait(context.WithoutCancel(ctx), run.ID)
		case retrai.HumanCheck:
			cur, err := m.Wait(context.WithoutCancel(ctx), run.ID)
			if err != nil {
				return cur, err
			}
			if cur.Status != runs.StatusWaiting {
				continue
			}
			decision, err := ask(ctx, answers, out)
			if errors.Is(err, errNoAnswer) {
				return cur, nil
			}
			if err != nil {
				return cur, err
			}
			if err := m.Resume(ctx, run.ID, decision); err != nil {
				return cur, err
			}
		}
	}
	return m.Wait(context.WithoutCancel(ctx), run.ID)
}

// errNoAnswer reports that no answer to a human check came: the input
// ended or ctx was done.
var errNoAnswer = errors.New("no answer")

// lineReader reads answers line by line in the background, so that waiting
// for one can be abandoned when the context is done.
type lineReader struct {
	in      *bufio.Reader
	echo    bool // print the answers read (when they do not come from a terminal)
	pending chan lineResult
}

type lineResult struct {
	line string
	err  error
}

func newLineReader(in *bufio.Reader, echo bool) *lineReader {
	return &lineReader{in: in, echo: echo}
}

// readLine returns the next line, io.EOF at the end of the input, or
// ctx.Err(); a line still being read when ctx is done is returned by the
// next call.
func (lr *lineReader) readLine(ctx context.Context) (string, error) {
	if lr.pending == nil {
		ch := make(chan lineResult, 1)
		lr.pending = ch
		go func() {
			line, err := lr.in.ReadString('\n')
			ch <- lineResult{line, err}
		}()
	}
	select {
	case r := <-lr.pending:
		lr.pending = nil
		if r.err != nil && r.line == "" {
			return "", r.err
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ask prompts for a human check's decision until it gets one, and returns
// runs.DecisionApprove or runs.DecisionAbort; errNoAnswer when the input
// ends (the run then stays waiting) or ctx is done.
func ask(ctx context.Context, lr *lineReader, out io.Writer) (string, error) {
	for {
		fmt.Fprint(out, "    approve or abort? [Approve/abort] > ")
		line, err := lr.readLine(ctx)
		if err != nil {
			fmt.Fprintln(out)
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(out, "    (no answer: the input ended)")
			}
			return "", errNoAnswer
		}
		if lr.echo {
			fmt.Fprintln(out, line)
		}
		if d, ok := decision(line); ok {
			return d, nil
		}
		fmt.Fprintf(out, "    %q is neither approve nor abort\n", line)
	}
}

// decision maps an answer to a decision; ok is false for an answer it does
// not understand.
func decision(answer string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "", "a", "approve", "approved", "y", "yes", "c", "continue", "ok":
		return runs.DecisionApprove, true
	case "abort", "n", "no", "q", "quit", "stop", "x":
		return runs.DecisionAbort, true
	}
	return "", false
}

// summary prints how the run ended and returns the exit code.
func summary(w io.Writer, m *runs.Manager, run runs.Run) int {
	fmt.Fprintln(w)
	resume := fmt.Sprintf("retrai run --resume %s --db %s", run.ID, displayDB(m.DB()))
	switch {
	case run.Status == runs.StatusAchieved:
		fmt.Fprintf(w, "✓ GOAL ACHIEVED after %d iteration(s): %s\n", run.Iteration, run.Reason)
	case run.Status == runs.StatusAborted:
		fmt.Fprintf(w, "■ ABORTED by a human after %d iteration(s): %s\n", run.Iteration, run.Reason)
	case run.Status == runs.StatusFailed:
		fmt.Fprintf(w, "✗ GOAL NOT ACHIEVED: %s\n", run.Reason)
	case run.Status == runs.StatusError:
		fmt.Fprintf(w, "✗ STOPPED ON AN ERROR after %d iteration(s): %s\n  resume with: %s\n", run.Iteration, run.Error, resume)
	case run.Status == runs.StatusWaiting:
		fmt.Fprintf(w, "… WAITING for a human check after %d iteration(s): %s\n  answer it with: %s\n", run.Iteration, run.Question, resume)
	default:
		fmt.Fprintf(w, "… INTERRUPTED after %d iteration(s) (%s)\n  resume with: %s\n", run.Iteration, run.Status, resume)
	}
	fmt.Fprintf(w, "  run %s · goal %s · model %s · %d tokens\n  project %s\n", run.ID, run.Goal, run.Model, run.TotalTokens, run.Cwd)
	if run.Status == runs.StatusAchieved {
		return exitAchieved
	}
	return exitNotDone
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
