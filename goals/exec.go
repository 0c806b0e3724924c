package goals

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/internal/process"
	"github.com/agentgraph/agentgraph/tools"
)

// maxLine cuts the lines passed to program.lines.
const maxLine = 64 << 10

// program describes one program run.
type program struct {
	goal    string // for errors
	dir     string
	name    string // program, looked up on PATH
	args    []string
	timeout time.Duration
	// stdout, when set, receives stdout; the result's output then holds
	// stderr only.
	stdout io.Writer
	// lines, when set, is called with each line of stdout and of stderr
	// (without its terminator, cut at maxLine bytes), one line at a time.
	lines func(line string)
}

// processResult is the outcome of a program that ran.
type processResult struct {
	exitCode int    // -1 if killed
	timedOut bool   // killed at p.timeout
	output   string // stdout and stderr, at most MaxOutputChars characters
}

// runProcess runs p in its own process group with stdin empty and this
// process's environment less its secrets (tools.ScrubEnv) and less the
// PATH entries inside p.dir (tools.PathListOutside). A non-zero
// exit is a normal result, and so is being killed at p.timeout. It returns
// a *ToolNotFoundError if the program is missing and an error wrapping
// ctx.Err() if ctx is done.
func runProcess(ctx context.Context, p program) (processResult, error) {
	if err := ctx.Err(); err != nil {
		return processResult{}, fmt.Errorf("goals: %s: %w", p.goal, err)
	}
	// The program and every program it runs by name come from PATH
	// without its entries inside the project: a bin/go the agent planted
	// there is never the toolchain.
	searchPath := tools.PathListOutside(os.Getenv("PATH"), p.dir)
	path, err := tools.LookPathOutside(searchPath, p.dir, p.name)
	if err != nil {
		return processResult{}, &ToolNotFoundError{Goal: p.goal, Tool: p.name, Err: err}
	}
	out := newCapBuffer(4 * MaxOutputChars)
	// The command runs code the agent wrote (a test, a harness, the
	// project): this process's secrets stay out of its environment.
	env := slices.DeleteFunc(tools.ScrubEnv(os.Environ()), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	env = append(env, "PATH="+searchPath)
	c := process.Command{Name: path, Args: p.args, Dir: p.dir, Env: env, ClearEnv: true,
		Timeout: p.timeout, Stdout: out, Stderr: out}
	if p.stdout != nil {
		c.Stdout = p.stdout
	}
	if p.lines != nil {
		var mu sync.Mutex
		fn := func(line string) {
			mu.Lock()
			defer mu.Unlock()
			p.lines(line)
		}
		outLines, errLines := tools.NewLineWriter(maxLine, fn), tools.NewLineWriter(maxLine, fn)
		defer outLines.Flush()
		defer errLines.Flush()
		c.Stdout = io.MultiWriter(c.Stdout, outLines)
		c.Stderr = io.MultiWriter(c.Stderr, errLines)
	}
	r, err := process.Run(ctx, c)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return processResult{}, fmt.Errorf("goals: %s: %w", p.goal, ctxErr)
	}
	if err != nil {
		return processResult{}, fmt.Errorf("goals: %s: %w", p.goal, err)
	}
	return processResult{exitCode: r.ExitCode, timedOut: r.TimedOut, output: out.String(MaxOutputChars)}, nil
}

// shellProcess returns the process running command with bash -c, or sh -c
// where bash is missing.
func shellProcess(goal, dir, command string, timeout time.Duration) program {
	shell := "bash"
	if _, err := tools.LookPathOutside(os.Getenv("PATH"), dir, shell); err != nil {
		shell = "sh"
	}
	return program{goal: goal, dir: dir, name: shell, args: []string{"-c", command}, timeout: timeout}
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
