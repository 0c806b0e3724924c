package goals

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// pyrightReport is the part of `pyright --outputjson` the goal reads.
type pyrightReport struct {
	Version     string `json:"version"`
	Diagnostics []struct {
		File     string `json:"file"`
		Severity string `json:"severity"`
		Message  string `json:"message"`
		Rule     string `json:"rule"`
		Range    *struct {
			Start struct {
				Line      int `json:"line"`
				Character int `json:"character"`
			} `json:"start"`
		} `json:"range"`
	} `json:"generalDiagnostics"`
	Summary *struct {
		FilesAnalyzed int `json:"filesAnalyzed"`
		ErrorCount    int `json:"errorCount"`
		WarningCount  int `json:"warningCount"`
	} `json:"summary"`
}

// maxPyrightJSON bounds the JSON report read from pyright.
const maxPyrightJSON = 32 << 20

// limitedBuffer keeps the first max bytes written to it and discards the
// rest (reporting them as written, so that the writer goes on).
type limitedBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - len(b.buf); n > room {
		b.truncated = true
		p = p[:max(room, 0)]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// pyrightGoal is reached when pyright reports no errors.
type pyrightGoal struct {
	timeout time.Duration
}

func newPyrightGoal(cfg Config) (Goal, error) {
	if err := checkTimeout(GoalPyright, &cfg); err != nil {
		return nil, err
	}
	return &pyrightGoal{timeout: cfg.timeout()}, nil
}

func (g *pyrightGoal) Name() string { return GoalPyright }

func (g *pyrightGoal) SystemPrompt() string {
	return fmt.Sprintf(`Your goal is to make this Python project free of type errors.

Success is verified by running "pyright --outputjson" in the project directory (time limit %s): the goal is achieved when pyright reports 0 errors. Warnings do not count. After every check you are shown each error with its file, line, column, message and rule.

Fix the types and the code: do not silence errors with "# type: ignore" or "# pyright: ignore" comments, casts to Any, or by changing pyrightconfig.json or the [tool.pyright] settings.`, g.timeout)
}

func (g *pyrightGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := time.Now()
	stdout := &limitedBuffer{max: maxPyrightJSON}
	p := program{goal: GoalPyright, dir: cwd, name: "pyright", args: []string{"--outputjson"}, timeout: g.timeout, stdout: stdout}
	res, err := runProcess(ctx, p)
	if err != nil {
		return Result{}, err
	}
	d := Details{
		Command:  "pyright --outputjson",
		ExitCode: res.exitCode,
		TimedOut: res.timedOut,
		Duration: time.Since(start),
	}
	var report pyrightReport
	if stdout.truncated || json.Unmarshal(stdout.buf, &report) != nil || report.Summary == nil {
		// Pyright failed before producing a report (exit 2: fatal error,
		// 3: bad configuration, 4: bad command line) or was killed.
		d.Output = truncateMiddle(strings.TrimSpace(string(stdout.buf)+"\n"+res.output), MaxOutputChars)
		d.Failed = 1
		d.Failures = []Failure{{Name: "pyright", Output: tail(d.Output, MaxFailureOutputChars)}}
		return Result{Reason: GoalPyright + ": no JSON report: " + exitReason("pyright", res, g.timeout), Details: d}, nil
	}

	var failures []Failure
	var lines []string
	dirs := dirAliases(cwd)
	for _, diag := range report.Diagnostics {
		if diag.Severity != "error" {
			continue
		}
		name := relPath(dirs, diag.File)
		if diag.Range != nil {
			name = fmt.Sprintf("%s:%d:%d", name, diag.Range.Start.Line+1, diag.Range.Start.Character+1)
		}
		msg := "error: " + diag.Message
		if diag.Rule != "" {
			msg += " (" + diag.Rule + ")"
		}
		failures = append(failures, Failure{Name: name, Output: msg})
		lines = append(lines, name+" - "+msg)
	}
	d.Failed = max(report.Summary.ErrorCount, len(failures))
	d.Warnings = report.Summary.WarningCount
	d.Failures = capFailures(failures)
	d.Output = truncateMiddle(strings.Join(lines, "\n"), MaxOutputChars)
	if d.Failed == 0 {
		return Result{
			Achieved: true,
			Reason: fmt.Sprintf("%s: 0 errors in %d files (%d warnings)", GoalPyright,
				report.Summary.FilesAnalyzed, report.Summary.WarningCount),
			Details: d,
		}, nil
	}
	return Result{
		Reason:  fmt.Sprintf("%s: %d errors: %s", GoalPyright, d.Failed, nameList(d.Failures, d.Failed)),
		Details: d,
	}, nil
}

// dirAliases returns dir and, when its path goes through a symlink, its
// real path.
func dirAliases(dir string) []string {
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		dirs = append(dirs, real)
	}
	return dirs
}

// relPath returns file relative to the first of dirs (see dirAliases) it
// lies below, else file.
func relPath(dirs []string, file string) string {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, file); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return file
}
