package goals

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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

// testGoal runs a framework's tests through tools.RunTests.
type testGoal struct {
	name    string
	spec    testGoalSpec
	timeout time.Duration
}

// newTestGoalFactory returns the factory of the test-based goal name, which
// must be a key of testGoalSpecs.
func newTestGoalFactory(name string) Factory {
	spec := testGoalSpecs[name]
	return func(cfg Config) (Goal, error) {
		if err := checkTimeout(name, &cfg); err != nil {
			return nil, err
		}
		return &testGoal{name: name, spec: spec, timeout: cfg.timeout()}, nil
	}
}

func (g *testGoal) Name() string { return g.name }

func (g *testGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is to make every test of this %s pass.

Success is verified by running "%s" in the project directory (time limit %s): the goal is achieved when the run exits with status 0 and no test fails. A test that does not compile, errors during setup or is killed by the time limit counts as failed. After every check you are shown the failing tests with their output.

Fix the code under test, not the tests: do not delete, skip or weaken tests, and do not change the test configuration to hide failures. Run the tests yourself to confirm a fix before moving on.`,
		g.spec.project, g.spec.command, g.timeout)
}

func (g *testGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := time.Now()
	ws, err := tools.NewWorkspace(cwd)
	if err != nil {
		return Result{}, fmt.Errorf("goals: %s: %w", g.name, err)
	}
	report, err := tools.RunTests(ctx, ws, g.spec.framework,
		tools.WithTestTimeout(g.timeout), tools.WithOutputLimit(MaxOutputChars))
	if err != nil {
		var execErr *exec.Error
		if ctx.Err() == nil && errors.As(err, &execErr) && errors.Is(err, exec.ErrNotFound) {
			return Result{}, &ToolNotFoundError{Goal: g.name, Tool: execErr.Name, Err: err}
		}
		return Result{}, fmt.Errorf("goals: %s: %w", g.name, err)
	}
	elapsed := time.Since(start)
	return testResult(g.name, g.spec.command, report, elapsed, report.ExitCode == -1 && elapsed >= g.timeout), nil
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
