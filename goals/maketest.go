package goals

import (
	"context"
	"fmt"
	"time"
)

// makeTestGoal is reached when make test exits 0, with the test counts its
// output shows no lower than at the baseline.
type makeTestGoal struct {
	baselined
	timeout time.Duration
}

func newMakeTestGoal(cfg Config) (Goal, error) {
	if err := checkTimeout(GoalMakeTest, &cfg); err != nil {
		return nil, err
	}
	return &makeTestGoal{baselined: baselined{goal: GoalMakeTest, protect: !cfg.AllowTestEdits}, timeout: cfg.timeout()}, nil
}

func (g *makeTestGoal) Name() string { return GoalMakeTest }

func (g *makeTestGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is to make the project's test suite pass, as run by its Makefile.

Success is verified by running "make test" in the project directory: the goal is achieved when it exits with status 0 within %s. Its output (the tail of it when long) is shown to you after every check.

The numbers of tests that ran and that were skipped, as the test runners print them, were recorded when the run started: fewer tests run or more tests skipped fails the goal, and so does a run whose output shows that no test ran.%s

Fix the code under test rather than the tests or the Makefile: do not delete, skip or weaken tests, and do not change the test target to hide failures.`, g.timeout, protectPrompt(g.protect))
}

// Baseline implements Baseliner: it records the test files (unless
// Config.AllowTestEdits), then runs make test and records the test counts
// of its output.
func (g *makeTestGoal) Baseline(ctx context.Context, cwd string) (*Baseline, error) {
	return g.record(ctx, cwd, g.run)
}

func (g *makeTestGoal) Check(ctx context.Context, st State, cwd string) (Result, error) {
	res, o, err := g.check(ctx, st, cwd, g.run)
	if err != nil {
		return Result{}, err
	}
	if res.Achieved && !o.counted {
		res.Reason += " (no test counts recognised in its output)"
	}
	return res, nil
}

// run runs make test, counting the tests its output shows; it runs the
// same for the baseline.
func (g *makeTestGoal) run(ctx context.Context, cwd string, _ bool) (*observation, Result, error) {
	const display = "make test"
	start := time.Now()
	var counter testCounter
	p := program{goal: GoalMakeTest, dir: cwd, name: "make", args: []string{"test"}, timeout: g.timeout, lines: counter.line}
	pr, err := runProcess(ctx, p)
	if err != nil {
		return nil, Result{}, err
	}
	passed, failed, skipped, counted := counter.counts()
	d := Details{
		Command:  display,
		Passed:   passed,
		Failed:   failed,
		Skipped:  skipped,
		ExitCode: pr.exitCode,
		TimedOut: pr.timedOut,
		Output:   pr.output,
		Duration: time.Since(start),
	}
	ok := pr.exitCode == 0 && !pr.timedOut
	if !ok {
		d.Failed = max(d.Failed, 1)
		d.Failures = []Failure{{Name: display, Output: tail(pr.output, MaxFailureOutputChars)}}
	}
	res := Result{Achieved: ok, Reason: GoalMakeTest + ": " + exitReason(display, pr, g.timeout), Details: d}
	o := &observation{counted: counted, ran: passed + failed, skipped: skipped, passed: ok, reason: res.Reason}
	return o, res, nil
}
