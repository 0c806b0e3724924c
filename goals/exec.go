package goals

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// waitDelay is how long a finished command's output pipes stay open for
// background processes that inherited them.
const waitDelay = 2 * time.Second

// process describes one program run.
type process struct {
	goal    string // for errors
	dir     string
	name    string // program, looked up on PATH
	args    []string
	timeout time.Duration
	// stdout, when set, receives stdout; the result's output then holds
	// stderr only.
	stdout io.Writer
}

// processResult is the outcome of a program that ran.
type processResult struct {
	exitCode int    // -1 if killed
	timedOut bool   // killed at p.timeout
	output   string // stdout and stderr, at most MaxOutputChars characters
}

// runProcess runs p in its own process group with stdin empty. A non-zero
// exit is a normal result, and so is being killed at p.timeout. It returns
// a *ToolNotFoundError if the program is missing and an error wrapping
// ctx.Err() if ctx is done.
func runProcess(ctx context.Context, p process) (processResult, error) {
	if err := ctx.Err(); err != nil {
		return processResult{}, fmt.Errorf("goals: %s: %w", p.goal, err)
	}
	path, err := exec.LookPath(p.name)
	if err != nil {
		return processResult{}, &ToolNotFoundError{Goal: p.goal, Tool: p.name, Err: err}
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if p.timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, p.timeout)
	}
	defer cancel()
	out := newCapBuffer(4 * MaxOutputChars)
	cmd := exec.CommandContext(runCtx, path, p.args...)
	cmd.Dir = p.dir
	cmd.Env = os.Environ()
	cmd.Stdout = out
	if p.stdout != nil {
		cmd.Stdout = p.stdout
	}
	cmd.Stderr = out
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)

	err = cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return processResult{}, fmt.Errorf("goals: %s: %w", p.goal, ctxErr)
	}
	res := processResult{
		timedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded),
		output:   out.String(MaxOutputChars),
	}
	if cmd.ProcessState != nil {
		res.exitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return res, nil
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
		return res, nil
	case res.timedOut && cmd.ProcessState != nil:
		return res, nil
	default:
		return processResult{}, fmt.Errorf("goals: %s: run %s: %w", p.goal, p.name, err)
	}
}

// shellProcess returns the process running command with bash -c, or sh -c
// where bash is missing.
func shellProcess(goal, dir, command string, timeout time.Duration) process {
	shell := "bash"
	if _, err := exec.LookPath(shell); err != nil {
		shell = "sh"
	}
	return process{goal: goal, dir: dir, name: shell, args: []string{"-c", command}, timeout: timeout}
}

// exitReason describes how a command ended.
func exitReason(command string, res processResult, timeout time.Duration) string {
	switch {
	case res.timedOut:
		return fmt.Sprintf("%s was killed after the time limit of %s", command, timeout)
	case res.exitCode == 0:
		return command + " exited 0"
	case res.exitCode < 0:
		return command + " was killed by a signal"
	default:
		return fmt.Sprintf("%s exited with status %d", command, res.exitCode)
	}
}
