package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/goals"
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
	fmt.Fprintln(stdout, "Goals (pick one with --goal, or let retrai detect it):")
	for _, name := range goals.Names() {
		fmt.Fprintf(stdout, "  %-14s %s\n", name, goalDescriptions[name])
	}
	dir := *cwd
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
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
