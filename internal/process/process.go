package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// WaitDelay bounds how long Run waits, once the command and its process
// tree were killed, for its output to drain. Only a process that escaped
// the kill can hold the output pipes that long.
const WaitDelay = 2 * time.Second

// Command describes one process run.
type Command struct {
	Name string
	Args []string
	Dir  string
	// Env is added to the current environment, or is the whole
	// environment if ClearEnv is set.
	Env []string
	// ClearEnv makes Env the command's whole environment instead of
	// additions to the current one.
	ClearEnv bool
	Timeout  time.Duration
	// Stdin is the command's standard input; nil closes it.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// ExtraFiles are passed on as file descriptors 3, 4, … (see
	// exec.Cmd.ExtraFiles).
	ExtraFiles []*os.File
}

// Result is the outcome of a process that ran.
type Result struct {
	// ExitCode is -1 if the process was killed by a signal.
	ExitCode int
	// TimedOut reports that the command's own timeout expired and its
	// process tree was killed.
	TimedOut bool
	// Signal is the signal that killed the process, 0 if it exited.
	Signal syscall.Signal
}

// Run runs c (with stdin closed unless c.Stdin is set) and kills its whole
// process tree when c exits, when c.Timeout expires (reported as TimedOut, not as an error) or
// when ctx is done (reported as ctx.Err()). Background processes left by
// a command that exited normally are killed too. A non-zero exit status is
// not an error.
func Run(ctx context.Context, c Command) (Result, error) {
	return run(ctx, c, true)
}

// run is Run; useCgroup false makes it use the environment marker even
// where a cgroup is available.
func run(ctx context.Context, c Command, useCgroup bool) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	out, err := newOutputs(c.Stdout, c.Stderr)
	if err != nil {
		return Result{}, fmt.Errorf("run %s: %w", c.Name, err)
	}
	defer out.close()

	t := newTree(useCgroup)
	defer t.release()
	cmd, err := t.start(func() *exec.Cmd {
		cmd := exec.CommandContext(runCtx, c.Name, c.Args...)
		cmd.Dir = c.Dir
		env := c.Env
		if !c.ClearEnv {
			env = append(os.Environ(), c.Env...)
		}
		cmd.Env = append(env[:len(env):len(env)], t.env()...)
		cmd.Stdin = c.Stdin
		cmd.ExtraFiles = c.ExtraFiles
		cmd.Stdout = out.stdoutW
		cmd.Stderr = out.stderrW
		cmd.WaitDelay = WaitDelay
		cmd.Cancel = func() error {
			t.kill(cmd.Process.Pid)
			return nil
		}
		return cmd
	})
	if err != nil {
		return Result{}, fmt.Errorf("run %s: %w", c.Name, err)
	}
	out.started()

	err = t.wait(cmd)
	out.wait(WaitDelay)

	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, ctxErr
	}
	res := Result{TimedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded)}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(interface {
			Signaled() bool
			Signal() syscall.Signal
		}); ok && ws.Signaled() {
			res.Signal = ws.Signal()
		}
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
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

// outputs are the pipes that carry a command's stdout and stderr to the
// caller's writers. Run owns the pipes, rather than leaving them to
// os/exec, so that it can kill the process tree as soon as the command
// exits instead of waiting for background processes to close them.
type outputs struct {
	stdoutW, stderrW *os.File // the command's ends; nil for no output
	readers          []*os.File
	writers          []*os.File
	copies           sync.WaitGroup
	sinks            []io.Writer
}

// newOutputs creates one pipe per distinct non-nil writer: like os/exec,
// a writer given as both stdout and stderr receives both through one pipe
// and is never written concurrently.
func newOutputs(stdout, stderr io.Writer) (*outputs, error) {
	o := &outputs{}
	pipe := func(w io.Writer) (*os.File, error) {
		if w == nil {
			return nil, nil
		}
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		o.readers = append(o.readers, r)
		o.writers = append(o.writers, pw)
		o.sinks = append(o.sinks, w)
		return pw, nil
	}
	var err error
	if o.stdoutW, err = pipe(stdout); err != nil {
		o.close()
		return nil, err
	}
	if stdout != nil && sameWriter(stdout, stderr) {
		o.stderrW = o.stdoutW
		return o, nil
	}
	if o.stderrW, err = pipe(stderr); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// sameWriter reports whether a and b are the same comparable writer.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// started closes the command's pipe ends in this process and starts
// copying the output.
func (o *outputs) started() {
	for _, w := range o.writers {
		_ = w.Close()
	}
	o.writers = nil
	for i, r := range o.readers {
		o.copies.Add(1)
		go func() {
			defer o.copies.Done()
			_, _ = io.Copy(o.sinks[i], r)
		}()
	}
}

// wait waits for the copies to reach the end of the output, at most
// delay; then it closes the pipes, which ends the copies.
func (o *outputs) wait(delay time.Duration) {
	done := make(chan struct{})
	go func() {
		o.copies.Wait()
		close(done)
	}()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		o.close()
		<-done
	}
}

// close closes every pipe end still open.
func (o *outputs) close() {
	for _, f := range o.writers {
		_ = f.Close()
	}
	o.writers = nil
	for _, f := range o.readers {
		_ = f.Close()
	}
}
