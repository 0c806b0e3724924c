package tools

import (
	"context"
	"io"
	"time"

	"github.com/agentgraph/agentgraph/internal/process"
)

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

// runCommand runs c in its own process group (see package process): a
// timeout is reported as timedOut, a done ctx as ctx.Err(), and a non-zero
// exit status is not an error.
func runCommand(ctx context.Context, c command) (commandResult, error) {
	res, err := process.Run(ctx, process.Command{Name: c.name, Args: c.args, Dir: c.dir, Env: c.env,
		Timeout: c.timeout, Stdout: c.stdout, Stderr: c.stderr})
	return commandResult{exitCode: res.ExitCode, timedOut: res.TimedOut}, err
}
