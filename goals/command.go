package goals

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// commandGoal is reached when a command exits 0: the shell goal.
type commandGoal struct {
	name    string
	display string // the command as shown to people and models
	proc    func(cwd string) program
	timeout time.Duration
	prompt  string
}

func (g *commandGoal) Name() string         { return g.name }
func (g *commandGoal) SystemPrompt() string { return g.prompt }

func (g *commandGoal) Check(ctx context.Context, _ State, cwd string) (Result, error) {
	start := time.Now()
	res, err := runProcess(ctx, g.proc(cwd))
	if err != nil {
		return Result{}, err
	}
	d := Details{
		Command:  g.display,
		ExitCode: res.exitCode,
		TimedOut: res.timedOut,
		Output:   res.output,
		Duration: time.Since(start),
	}
	ok := res.exitCode == 0 && !res.timedOut
	if !ok {
		d.Failed = 1
		d.Failures = []Failure{{Name: g.display, Output: tail(res.output, MaxFailureOutputChars)}}
	}
	return Result{Achieved: ok, Reason: g.name + ": " + exitReason(g.display, res, g.timeout), Details: d}, nil
}

func newShellGoal(cfg Config) (Goal, error) {
	if err := checkTimeout(GoalShell, &cfg); err != nil {
		return nil, err
	}
	command := strings.TrimSpace(cfg.Command)
	if command == "" {
		return nil, &SettingError{Goal: GoalShell, Setting: "command", Problem: "is required (the command that must exit 0)"}
	}
	timeout := cfg.timeout()
	return &commandGoal{
		name:    GoalShell,
		display: command,
		timeout: timeout,
		proc: func(cwd string) program {
			return shellProcess(GoalShell, cwd, command, timeout)
		},
		prompt: fmt.Sprintf(`Your goal is to make this command succeed:

    %s

Success is verified by running it with bash -c in the project directory: the goal is achieved when it exits with status 0 within %s. Its output (the tail of it when long) is shown to you after every check.

Change the project so that the command succeeds for the right reasons; do not edit the command's own checks or the project configuration to make it pass trivially.`, command, timeout),
	}, nil
}
