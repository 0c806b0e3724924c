package goals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// median returns the median of ds (the mean of the two middle values for
// an even count), 0 for none. ds is not modified.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return s[mid-1] + (s[mid]-s[mid-1])/2
}

// measurement decides a timed goal from its runs.
type measurement struct {
	runs  int           // runs asked for
	limit time.Duration // largest acceptable median
	times []time.Duration
	over  int // runs slower than limit
}

// add records one run. It reports whether the goal is already decided:
// once more than half of all the runs exceed the limit, the median does
// too, whatever the remaining runs measure.
func (m *measurement) add(d time.Duration) (decided bool) {
	m.times = append(m.times, d)
	if d > m.limit {
		m.over++
	}
	return m.over > m.runs/2
}

// achieved reports whether every run was measured and their median is
// within the limit.
func (m *measurement) achieved() bool {
	return len(m.times) == m.runs && median(m.times) <= m.limit
}

// reason describes the measurement.
func (m *measurement) reason(goal string) string {
	med := median(m.times)
	switch {
	case m.achieved():
		return fmt.Sprintf("%s: median of %d runs %s ≤ limit %s", goal, len(m.times), med, m.limit)
	case len(m.times) < m.runs:
		return fmt.Sprintf("%s: %d of %d runs exceeded the limit %s (median of the %d measured: %s); stopped early as the median cannot be within the limit",
			goal, m.over, m.runs, m.limit, len(m.times), med)
	default:
		return fmt.Sprintf("%s: median of %d runs %s > limit %s", goal, len(m.times), med, m.limit)
	}
}

// details fills the timing fields of d.
func (m *measurement) details(d *Details) {
	d.Runs = slices.Clone(m.times)
	d.Median = median(m.times)
	d.Limit = m.limit
}

// perfGoal is reached when the median wall time of a command is within a
// limit.
type perfGoal struct {
	command string
	limit   time.Duration
	runs    int
	timeout time.Duration
	now     func() time.Time                                             // clock
	run     func(ctx context.Context, cwd string) (processResult, error) // one run
}

func newPerfGoal(cfg Config) (Goal, error) {
	if err := checkTimeout(GoalPerfCheck, &cfg); err != nil {
		return nil, err
	}
	command := strings.TrimSpace(cfg.Perf.Command)
	if command == "" {
		command = strings.TrimSpace(cfg.Command)
	}
	if command == "" {
		return nil, &SettingError{Goal: GoalPerfCheck, Setting: "perf.command", Problem: "is required (or command)"}
	}
	if !(cfg.Perf.MaxSeconds > 0) {
		return nil, &SettingError{Goal: GoalPerfCheck, Setting: "perf.max_seconds", Problem: "must be a positive number of seconds"}
	}
	if cfg.Perf.Runs < 0 {
		return nil, &SettingError{Goal: GoalPerfCheck, Setting: "perf.runs", Problem: "must not be negative"}
	}
	g := &perfGoal{
		command: command,
		limit:   time.Duration(cfg.Perf.MaxSeconds * float64(time.Second)),
		runs:    orDefault(cfg.Perf.Runs, DefaultRuns),
		timeout: cfg.timeout(),
		now:     time.Now,
	}
	g.run = func(ctx context.Context, cwd string) (processResult, error) {
		return runProcess(ctx, shellProcess(GoalPerfCheck, cwd, g.command, g.timeout))
	}
	return g, nil
}

// orDefault returns v, or def if v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (g *perfGoal) Name() string { return GoalPerfCheck }

func (g *perfGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is to make this command fast enough:

    %s

Success is verified by running it %d times in a row with bash -c in the project directory and measuring the wall time of each run: the goal is achieved when every run exits with status 0 and the median time is at most %s. Each run is killed after %s. After every check you are shown the measured times and their median.

Make the work itself faster (algorithms, data structures, I/O, caching that stays correct); do not change what the command computes or checks, and keep its output correct.`,
		g.command, g.runs, g.limit, g.timeout)
}

func (g *perfGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := g.now()
	m := measurement{runs: g.runs, limit: g.limit}
	var last processResult
	for i := range g.runs {
		t0 := g.now()
		res, err := g.run(ctx, cwd)
		elapsed := g.now().Sub(t0)
		if err != nil {
			return Result{}, err
		}
		last = res
		if res.exitCode != 0 || res.timedOut {
			d := Details{
				Command:  g.command,
				ExitCode: res.exitCode,
				TimedOut: res.timedOut,
				Output:   res.output,
				Failed:   1,
				Failures: []Failure{{Name: fmt.Sprintf("run %d", i+1), Output: tail(res.output, MaxFailureOutputChars)}},
				Duration: g.now().Sub(start),
			}
			m.details(&d)
			return Result{
				Reason:  fmt.Sprintf("%s: run %d of %d failed: %s", GoalPerfCheck, i+1, g.runs, exitReason(g.command, res, g.timeout)),
				Details: d,
			}, nil
		}
		if m.add(elapsed) {
			break
		}
	}
	d := Details{Command: g.command, ExitCode: last.exitCode, Output: last.output}
	m.details(&d)
	d.Duration = g.now().Sub(start)
	return Result{Achieved: m.achieved(), Reason: m.reason(GoalPerfCheck), Details: d}, nil
}
