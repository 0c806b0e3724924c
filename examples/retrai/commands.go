package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// goalDescriptions describe the built-in goals in a few words.
var goalDescriptions = map[string]string{
	goals.GoalPytest:       "every pytest test passes",
	goals.GoalPyright:      "pyright reports no type errors",
	goals.GoalBunTest:      "every `bun test` test passes",
	goals.GoalNpmTest:      "every `npm test` test passes",
	goals.GoalCargoTest:    "every `cargo test` test passes",
	goals.GoalGoTest:       "every `go test ./...` test passes",
	goals.GoalMakeTest:     "`make test` exits 0",
	goals.GoalShell:        "the command of .retrai.yml exits 0",
	goals.GoalPerfCheck:    "a command runs within a time limit (.retrai.yml perf:)",
	goals.GoalSQLBenchmark: "a SQL query runs within a time limit (.retrai.yml sql:)",
	goals.GoalAIEval:       "an eval harness written from an objective passes (.retrai.yml eval:)",
}

// goalsCommand is `retrai goals`.
func goalsCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retrai goals", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cwd := fs.String("cwd", ".", "project directory whose goal to detect")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAchieved
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "retrai goals: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	dir := *cwd
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if fi, err := os.Stat(dir); err != nil {
		fmt.Fprintf(stderr, "retrai goals: --cwd: %v\n", err)
		return exitNotDone
	} else if !fi.IsDir() {
		fmt.Fprintf(stderr, "retrai goals: --cwd: %s is not a directory\n", dir)
		return exitNotDone
	}
	fmt.Fprintln(stdout, "Goals (pick one with --goal, or let retrai detect it):")
	for _, name := range goals.Names() {
		fmt.Fprintf(stdout, "  %-14s %s\n", name, goalDescriptions[name])
	}
	name, why, err := goals.Detect(dir)
	switch {
	case errors.Is(err, goals.ErrNoGoalDetected):
		fmt.Fprintf(stdout, "\nNo goal detected for %s: pass --goal.\n", dir)
	case err != nil:
		fmt.Fprintln(stderr, "retrai:", err)
		return exitNotDone
	default:
		fmt.Fprintf(stdout, "\nDetected for %s: %s (%s)\n", dir, name, why)
	}
	return exitAchieved
}

// graphCommand is `retrai graph`.
func graphCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retrai graph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAchieved
		}
		return exitUsage
	}
	m, err := runs.Mermaid()
	if err != nil {
		fmt.Fprintln(stderr, "retrai:", err)
		return exitNotDone
	}
	fmt.Fprint(stdout, m)
	return exitAchieved
}

// runsCommand is `retrai runs`: the runs of the database, or one run.
func runsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retrai runs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "SQLite file or postgres:// URL of the runs (default "+runs.DefaultDB()+")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: retrai runs [--db FILE|URL] [RUN_ID]\n\nLists the runs, newest first, or shows the run RUN_ID.\n\nFlags:")
		fs.PrintDefaults()
	}
	// Flags may come before or after the run ID (retrai runs ID --db F).
	var ids []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitAchieved
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		ids = append(ids, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(ids) > 1 {
		fmt.Fprintf(stderr, "retrai runs: one run ID at most, not %q\n", ids)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "retrai:", err)
		if errors.As(err, new(usageError)) {
			return exitUsage
		}
		return exitNotDone
	}
	opts, err := managerOptions(*db, false, tools.SandboxAuto) // runs no run
	if err != nil {
		return fail(err)
	}
	m, err := runs.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer m.Close()
	if len(ids) == 1 {
		run, err := m.Get(ctx, ids[0])
		if err != nil {
			return fail(err)
		}
		showRun(ctx, stdout, m, run)
		return exitAchieved
	}
	list, err := m.List(ctx)
	if err != nil {
		return fail(err)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "No runs in %s.\n", displayDB(m.DB()))
		return exitAchieved
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tGOAL\tITERATIONS\tTOKENS\tUPDATED\tPROJECT")
	resumable := false
	for _, r := range list {
		resumable = resumable || r.Resumable()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Goal, r.Iteration, r.MaxIterations,
			r.TotalTokens, r.UpdatedAt.Local().Format(time.DateTime), r.Cwd)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d run(s) in %s; retrai runs RUN_ID shows one", len(list), displayDB(m.DB()))
	if resumable {
		fmt.Fprint(stdout, "; retrai run --resume RUN_ID continues an interrupted, error or waiting one")
	}
	fmt.Fprintln(stdout, ".")
	return exitAchieved
}

// showRun prints the details of run.
func showRun(ctx context.Context, w io.Writer, m *runs.Manager, run runs.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(key, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{key}, args...)...)
	}
	fmt.Fprintf(tw, "run %s\n", run.ID)
	status := string(run.Status)
	switch {
	case run.Status == runs.StatusRunning:
		if err := m.CheckIdle(ctx, run.ID); err != nil {
			status += ": " + err.Error()
		}
	case run.Resumable():
		status += fmt.Sprintf(" (resume with: retrai run --resume %s --db %s)", run.ID, displayDB(m.DB()))
	}
	line("status", "%s", status)
	line("goal", "%s", run.Goal)
	line("project", "%s", run.Cwd)
	line("model", "%s", displayModel(run.Model))
	line("iterations", "%d of %d", run.Iteration, run.MaxIterations)
	line("human checks", "%t", run.HITL)
	line("tokens", "%d", run.TotalTokens)
	if run.Reason != "" {
		line("reason", "%s", clip(oneLine(run.Reason), 300))
	}
	if run.Error != "" {
		line("error", "%s", clip(oneLine(run.Error), 500))
	}
	if run.Question != "" {
		line("question", "%s", run.Question)
	}
	line("created", "%s", run.CreatedAt.Local().Format(time.DateTime))
	line("updated", "%s", run.UpdatedAt.Local().Format(time.DateTime))
	tw.Flush()
}

// version is retrai's version. Release builds set it with
// -ldflags "-X main.version=v1.2.3"; otherwise it is the module version of
// the build (for go install …@version) or "(devel)".
var version = ""

// versionCommand is `retrai --version`.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "retrai version: unexpected arguments %q\n", args)
		return exitUsage
	}
	fmt.Fprintln(stdout, versionString())
	return exitAchieved
}

// versionString describes the build: "retrai v1.2.3 (commit 0123abcd4567,
// go1.26.0)".
func versionString() string {
	v, details := version, []string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			rev = "commit " + rev[:min(len(rev), 12)]
			if modified == "true" {
				rev += " with local changes"
			}
			details = append(details, rev)
		}
	}
	if v == "" {
		v = "(devel)"
	}
	details = append(details, runtime.Version())
	return fmt.Sprintf("retrai %s (%s)", v, strings.Join(details, ", "))
}
