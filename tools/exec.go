package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// waitDelay is how long a finished command's output pipes are kept open for
// background processes that inherited them.
const waitDelay = 2 * time.Second

// command describes one process run.
type command struct {
	name    string
	args    []string
	dir     string
	env     []string // added to the current environment
	timeout time.Duration
	stdout  io.Writer
	stderr  io.Writer
}

// commandResult is the outcome of a process that ran.
type commandResult struct {
	exitCode int  // -1 if killed by a signal
	timedOut bool // the command's own timeout expired and it was killed
}

// runCommand runs c in its own process group with stdin closed. The group
// is killed when c.timeout expires (reported as timedOut, not as an error)
// or when ctx is done (reported as ctx.Err()). A non-zero exit status is not
// an error.
func runCommand(ctx context.Context, c command) (commandResult, error) {
	if err := ctx.Err(); err != nil {
		return commandResult{}, err
	}
	runCtx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, c.name, c.args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout = c.stdout
	cmd.Stderr = c.stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)

	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return commandResult{}, ctxErr
	}
	res := commandResult{timedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded)}
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
		return res, fmt.Errorf("run %s: %w", c.name, err)
	}
}
