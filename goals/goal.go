package goals

import (
	"context"
	"time"

	"github.com/agentgraph/agentgraph/state"
)

// Limits on what a Result carries, so that it fits in an LLM's context.
const (
	// MaxOutputChars caps Details.Output; longer output keeps its head and
	// tail around a marker.
	MaxOutputChars = 8000
	// MaxFailureOutputChars caps the Output of each Failure.
	MaxFailureOutputChars = 2000
	// MaxFailures caps the number of entries in Details.Failures.
	MaxFailures = 50
)

// DefaultTimeout is how long one check may run when Config.Timeout is zero.
// A command-based check that runs longer is killed and reported as not
// achieved.
const DefaultTimeout = 10 * time.Minute

// DefaultRuns is the number of measured runs of perf-check and
// sql-benchmark when the configuration gives none.
const DefaultRuns = 5

// Goal is an objective the agent works towards, and the check that tells
// whether it has been reached.
//
// Implementations must be safe for concurrent use. Checks of the same
// directory that run at the same time may still interfere with each other
// through the files and processes they share.
type Goal interface {
	// Name returns the name the goal is registered under, e.g. "go-test".
	Name() string
	// Check runs the goal's check on the project in the directory cwd.
	//
	// A goal that is not (yet) reached is a normal result with
	// Achieved false; Reason and Details say why. An error means the
	// check could not be carried out at all: a missing toolchain
	// (*ToolNotFoundError), an unusable setting (*SettingError), an
	// unreachable database, or a done ctx (the error then satisfies
	// errors.Is(err, ctx.Err())).
	Check(ctx context.Context, st State, cwd string) (Result, error)
	// SystemPrompt returns the part of the agent's system prompt that
	// describes the objective and how its success is verified.
	SystemPrompt() string
}

// State is the read-only view of the agent's run that Check receives.
// Goals must not modify it, Messages included.
type State struct {
	// RunID identifies the run.
	RunID string
	// Iteration is the number of the current iteration, from 1.
	Iteration int
	// MaxIterations is the run's iteration limit.
	MaxIterations int
	// Messages is the conversation so far.
	Messages []state.Message
	// Baseline is what the goal recorded at the start of the run (see
	// [Baseliner]), kept by the caller with the run's state; nil when the
	// goal records none or the caller kept none. A test goal given no
	// Baseline takes one from its first check of the run (see
	// [Baseliner] for what that misses).
	Baseline *Baseline
}

// Result is the outcome of one Check.
type Result struct {
	// Achieved reports whether the goal is reached.
	Achieved bool `json:"achieved"`
	// Reason is a one-line human-readable summary, such as
	// "go-test: 2 of 14 tests failed: example.com/m.TestA, example.com/m.TestB".
	Reason string `json:"reason"`
	// Details is the structured evidence behind Reason.
	Details Details `json:"details"`
}

// Details is the structured evidence of a check. Each goal fills the fields
// that apply to it; the others stay zero. It encodes to JSON.
type Details struct {
	// Command is what the check ran, e.g. "go test -json ./..." or the
	// query of sql-benchmark.
	Command string `json:"command,omitempty"`
	// Framework is the test framework of test-based goals (go, pytest,
	// cargo, npm, bun).
	Framework string `json:"framework,omitempty"`
	// Passed, Failed and Skipped count tests. For pyright Failed counts
	// type errors; for ai-eval they count the harness's PASS and FAIL
	// lines.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Warnings counts pyright warnings.
	Warnings int `json:"warnings,omitempty"`
	// Failures describes what failed (tests, type errors, harness
	// checks), at most MaxFailures entries. The test goals add what fell
	// short of the baseline after the failed tests: tests that did not
	// run or were skipped, protected test files that changed (see
	// [Baseliner]).
	Failures []Failure `json:"failures,omitempty"`
	// ExitCode is the exit code of the command the check ran, -1 if it
	// was killed, 0 when no command ran.
	ExitCode int `json:"exit_code"`
	// TimedOut reports that the command was killed at the time limit.
	TimedOut bool `json:"timed_out,omitempty"`
	// Output is the command's output, at most MaxOutputChars characters.
	Output string `json:"output,omitempty"`
	// Duration is the wall time of the whole check.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Runs are the measured durations of perf-check and sql-benchmark, in
	// the order they ran.
	Runs []time.Duration `json:"runs_ns,omitempty"`
	// Median is the median of Runs and Limit the largest median that
	// reaches the goal.
	Median time.Duration `json:"median_ns,omitempty"`
	Limit  time.Duration `json:"limit_ns,omitempty"`
	// Rows is the number of rows the sql-benchmark query returned.
	Rows int `json:"rows,omitempty"`
	// Harness is the path of the ai-eval harness, relative to the
	// project directory.
	Harness string `json:"harness,omitempty"`
}

// Failure is one thing that failed: a test, a type error, a harness check.
type Failure struct {
	// Name identifies it, e.g. "example.com/m.TestBad",
	// "tests/test_x.py::test_y" or "app.py:3:5".
	Name string `json:"name"`
	// Output is its output or message, at most MaxFailureOutputChars
	// characters.
	Output string `json:"output"`
}
