package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// WaitDelay is how long a finished command's output pipes stay open for
// background processes that inherited them.
const WaitDelay = 2 * time.Second

// Command describes one process run.
type Command struct {
	Name    string
	Args    []string
	Dir     string
	Env     []string // added to the current environment
	Timeout time.Duration
	Stdout  io.Writer
	Stderr  io.Writer
}

// Result is the outcome of a process that ran.
type Result struct {
	// ExitCode is -1 if the process was killed by a signal.
	ExitCode int
	// TimedOut reports that the command's own timeout expired and the
	// process group was killed.
	TimedOut bool
}

// Run runs c in its own process group with stdin closed. The group is
// killed when c.Timeout expires (reported as TimedOut, not as an error) or
// when ctx is done (reported as ctx.Err()). A non-zero exit status is not
// an error.
func Run(ctx context.Context, c Command) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout = c.Stdout
	cmd.Stderr = c.Stderr
	cmd.WaitDelay = WaitDelay
	setProcessGroup(cmd)

	err := cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, ctxErr
	}
	res := Result{TimedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded)}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return res, nil
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		return res, nil
	case res.TimedOut && cmd.ProcessState != nil:
		return res, nil
	default:
		return res, fmt.Errorf("run %s: %w", c.Name, err)
	}
}
