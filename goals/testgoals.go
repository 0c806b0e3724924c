package goals

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/agentgraph/agentgraph/tools"
)

// testGoalSpec describes a goal reached when a test framework's tests all
// pass.
type testGoalSpec struct {
	framework string // tools.Framework*
	command   string // as shown
	project   string // the kind of project, for the prompt
}

var testGoalSpecs = map[string]testGoalSpec{
	GoalGoTest:    {tools.FrameworkGo, "go test -json ./...", "Go module"},
	GoalPytest:    {tools.FrameworkPytest, "pytest -rA", "Python project"},
	GoalCargoTest: {tools.FrameworkCargo, "cargo test", "Rust crate"},
	GoalNpmTest:   {tools.FrameworkNpm, "npm test", "JavaScript/TypeScript package"},
	GoalBunTest:   {tools.FrameworkBun, "bun test", "Bun project"},
}

// testGoal runs a framework's tests through tools.RunTestsRecorded.
type testGoal struct {
	baselined
	spec    testGoalSpec
	timeout time.Duration
	opts    []tools.Option // Config.TestOptions
}

// newTestGoalFactory returns the factory of the test-based goal name, which
// must be a key of testGoalSpecs.
func newTestGoalFactory(name string) Factory {
	spec := testGoalSpecs[name]
	return func(cfg Config) (Goal, error) {
		if err := checkTimeout(name, &cfg); err != nil {
			return nil, err
		}
		return &testGoal{baselined: baselined{goal: name, protect: !cfg.AllowTestEdits}, spec: spec, timeout: cfg.timeout(), opts: cfg.TestOptions}, nil
	}
}

func (g *testGoal) Name() string { return g.goal }

func (g *testGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is to make every test of this %s pass.

Success is verified by running "%s" in the project directory (time limit %s): the goal is achieved when the run exits with status 0 and no test fails. A test that does not compile, errors during setup or is killed by the time limit counts as failed. After every check you are shown the failing tests with their output.

The tests of the project were recorded when the run started. A recorded test that is deleted, renamed, skipped or no longer run counts as failing, and a run in which no test runs never achieves the goal.%s

Fix the code under test, not the tests: do not delete, skip or weaken tests, and do not change the test configuration to hide failures. Adding tests is fine. Run the tests yourself to confirm a fix before moving on.`,
		g.spec.project, g.spec.command, g.timeout, protectPrompt(g.protect))
}

// protectPrompt is the sentence of the prompts about protected test
// files (see Config.AllowTestEdits).
func protectPrompt(protect bool) string {
	if !protect {
		return ""
	}
	return " Test files are protected: changing a test file that existed when the run started in any way (an expected value, an assertion, a test body) or deleting it fails the goal, so restore any test file you changed (test files: *_test.go, test_*.py, *_test.py, conftest.py, *.test.* and *.spec.* scripts, and everything under tests, test, __tests__, spec and testdata directories)."
}

// Baseline implements Baseliner: it records the test files (unless
// Config.AllowTestEdits), then runs the tests and records which ran. The
// run keeps going past failures where the runner can (cargo test
// --no-fail-fast, pytest --continue-on-collection-errors), so that the
// record is complete.
func (g *testGoal) Baseline(ctx context.Context, cwd string) (*Baseline, error) {
	return g.record(ctx, cwd, g.run)
}

func (g *testGoal) Check(ctx context.Context, st State, cwd string) (Result, error) {
	res, _, err := g.check(ctx, st, cwd, g.run)
	return res, err
}

// run runs the tests and returns what they showed and the Result of the
// run on its own.
func (g *testGoal) run(ctx context.Context, cwd string, baseline bool) (*observation, Result, error) {
	start := time.Now()
	ws, err := tools.NewWorkspace(cwd)
	if err != nil {
		return nil, Result{}, fmt.Errorf("goals: %s: %w", g.goal, err)
	}
	opts := append(slices.Clip(g.opts), tools.WithTestTimeout(g.timeout), tools.WithOutputLimit(MaxOutputChars))
	report, record, err := tools.RunTestsRecorded(ctx, ws, g.spec.framework, tools.RecordOptions{KeepGoing: baseline}, opts...)
	if err != nil {
		var execErr *exec.Error
		if ctx.Err() == nil && errors.As(err, &execErr) && errors.Is(err, exec.ErrNotFound) {
			return nil, Result{}, &ToolNotFoundError{Goal: g.goal, Tool: execErr.Name, Err: err}
		}
		return nil, Result{}, fmt.Errorf("goals: %s: %w", g.goal, err)
	}
	elapsed := time.Since(start)
	res := testResult(g.goal, g.spec.command, report, elapsed, report.ExitCode == -1 && elapsed >= g.timeout)
	o := &observation{
		framework: g.spec.framework,
		record:    record,
		counted:   true,
		ran:       report.Passed + report.Failed,
		skipped:   report.Skipped,
		passed:    res.Achieved,
		reason:    res.Reason,
	}
	return o, res, nil
}

// testResult turns a test report into a Result: achieved when the run
// exited 0 and no test failed.
func testResult(goal, command string, r *tools.TestReport, elapsed time.Duration, timedOut bool) Result {
	failures := make([]Failure, len(r.Failures))
	for i, f := range r.Failures {
		failures[i] = Failure{Name: f.Name, Output: f.Output}
	}
	d := Details{
		Command:   command,
		Framework: r.Framework,
		Passed:    r.Passed,
		Failed:    r.Failed,
		Skipped:   r.Skipped,
		Failures:  capFailures(failures),
		ExitCode:  r.ExitCode,
		TimedOut:  timedOut,
		Output:    truncateMiddle(r.Output, MaxOutputChars),
		Duration:  elapsed,
	}
	res := Result{Details: d, Achieved: r.ExitCode == 0 && r.Failed == 0}
	skipped := ""
	if r.Skipped > 0 {
		skipped = fmt.Sprintf(" (%d skipped)", r.Skipped)
	}
	switch {
	case res.Achieved && r.Passed == 0:
		res.Reason = fmt.Sprintf("%s: no test failed, but none ran%s", goal, skipped)
	case res.Achieved:
		res.Reason = fmt.Sprintf("%s: all %d tests passed%s", goal, r.Passed, skipped)
	case timedOut:
		res.Reason = fmt.Sprintf("%s: the test run was killed after the time limit", goal)
	case r.Failed > 0:
		res.Reason = fmt.Sprintf("%s: %d of %d tests failed: %s", goal, r.Failed, r.Passed+r.Failed, nameList(d.Failures, r.Failed))
	case r.Framework == tools.FrameworkPytest && r.ExitCode == 5:
		res.Reason = fmt.Sprintf("%s: pytest collected no tests", goal)
	default:
		res.Reason = fmt.Sprintf("%s: %s exited with status %d", goal, command, r.ExitCode)
	}
	return res
}

// withIntegrity adds the findings of in to res, the Result of a run on its
// own: a run that passed reaches the goal only when in has no findings. A
// run that failed keeps its reason, followed by the findings; that no test
// ran is news only for a run that passed.
func withIntegrity(goal string, res Result, in *integrity) Result {
	if res.Details.TimedOut {
		return res
	}
	if !res.Achieved {
		in.zero = false
	}
	if in.ok() {
		return res
	}
	failures := append(slices.Clip(res.Details.Failures), in.failures()...)
	res.Details.Failures = capFailures(failures)
	if res.Achieved {
		res.Achieved = false
		res.Reason = goal + ": " + in.reason()
	} else {
		res.Reason += "; " + in.reason()
	}
	return res
}
