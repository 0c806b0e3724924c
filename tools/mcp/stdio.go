package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// exitWait bounds how long a failed call waits for a stdio server's exit
// status once the connection to it is lost.
const exitWait = 2 * time.Second

// baseEnv lists the variables a stdio server inherits by default.
var baseEnv = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER", "LANG",
	// Windows.
	"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATHEXT",
	"PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
}

// ExitError reports that a stdio server's process ended while the session
// was in use. Calls that fail because of it return it joined with the
// connection error ([ErrConnectionClosed]).
type ExitError struct {
	// Server is the name of the session.
	Server string
	// Err is the process's exit error (an *exec.ExitError, whose
	// ExitCode is the status); nil when it exited with status 0.
	Err error
	// Stderr is the end of the server's standard error (the last few
	// kilobytes).
	Stderr string
}

// Error implements error.
func (e *ExitError) Error() string {
	status := "exited"
	if e.Err != nil {
		status = "exited: " + e.Err.Error()
	}
	msg := fmt.Sprintf("mcp server %s %s", e.Server, status)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; stderr: " + s
	}
	return msg
}

// Unwrap returns the process's exit error.
func (e *ExitError) Unwrap() error { return e.Err }

// ConnectStdio starts command with args as an MCP server speaking over its
// standard input and output, and initializes the session. [WithEnv],
// [WithInheritEnv], [WithDir], [WithStderr] and [WithTerminateTimeout]
// configure the process. The server runs in its own process group (on
// Unix), which [Session.Close] terminates.
//
// ctx and the connect time limit ([WithConnectTimeout], default
// [DefaultConnectTimeout]) bound the start and the initialization only —
// a server that never answers the handshake fails with a [*TimeoutError]
// — and the server runs until the session is closed or it exits. When the connect fails, the server's
// process group is killed at once (not after [WithTerminateTimeout]) and
// the error quotes the start of what the server wrote on its standard
// output and the end of its standard error.
func ConnectStdio(ctx context.Context, command string, args []string, opts ...Option) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := newConfig(opts)
	name := cfg.name
	if name == "" {
		name = command
	}
	p, err := startProcess(command, args, cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp: start %s: %w", command, err)
	}
	t := &sdk.IOTransport{Reader: &stdoutReader{p}, Writer: &stdinCloser{p}}
	s, err := connect(ctx, t, p, cfg, name)
	if err != nil {
		// The go-sdk closed the connection, and so killed the process,
		// already (a server that failed to connect is not waited for);
		// closing again is harmless.
		_ = p.shutdown()
		wrote := ""
		if head := p.stdoutHead(); head != "" {
			wrote = fmt.Sprintf("; the server wrote on stdout: %q", head)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("mcp: connect to %s: %w%s%s", command, ctxErr, wrote, stderrNote(p))
		}
		if exitErr := p.exited(ctx, name); exitErr != nil {
			return nil, fmt.Errorf("mcp: connect to %s: %w (%w)%s", command, exitErr, err, wrote)
		}
		return nil, fmt.Errorf("mcp: connect to %s: %w%s%s", command, err, wrote, stderrNote(p))
	}
	p.connected.Store(true)
	return s, nil
}

// stderrNote is "; stderr: " and the end of p's standard error, or "".
func stderrNote(p *process) string {
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		return "; stderr: " + tail
	}
	return ""
}

// stdoutHeadSize is how many bytes of a stdio server's first output are
// kept, to say what a server that is not speaking MCP wrote.
const stdoutHeadSize = 200

// process is a running stdio server.
type process struct {
	cmd       *exec.Cmd
	stdin     *os.File
	stdout    *os.File
	stderr    *tail
	terminate time.Duration

	done     chan struct{} // closed when Wait returned
	waitErr  error         // set before done is closed
	stopping atomic.Bool   // shutdown has begun
	stopped  chan struct{} // closed when shutdown begins
	hungUp   atomic.Bool   // its stdout ended before shutdown began
	// connected is set once the session is initialized; a shutdown before
	// that, on a failed connect, kills the server at once.
	connected atomic.Bool

	headMu sync.Mutex
	head   []byte // the first stdoutHeadSize bytes of its output

	shutdownOnce sync.Once
	shutdownErr  error
}

func startProcess(command string, args []string, cfg *config) (*process, error) {
	cmd := exec.Command(command, args...)
	cmd.Dir = cfg.dir
	if cfg.inheritEnv {
		cmd.Env = os.Environ()
	} else {
		for _, k := range baseEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "LC_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
	}
	cmd.Env = append(cmd.Env, cfg.env...)
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean this process's environment
	}
	p := &process{cmd: cmd, stderr: &tail{max: cfg.stderrTailSz}, terminate: cfg.terminate, done: make(chan struct{}), stopped: make(chan struct{})}
	if cfg.stderr != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, cfg.stderr)
	} else {
		cmd.Stderr = p.stderr
	}
	// A grandchild keeping stderr open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)

	// os.Pipe rather than cmd.StdoutPipe: Wait must not close the pipe we
	// are still reading the server's last messages from.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	inR.Close()
	outW.Close()
	p.stdin, p.stdout = inW, outR
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// shutdown closes the server's input, waits for it to exit, and
// terminates, then kills, its process group if it does not. Before the
// session is initialized (a failed connect) it kills the group at once.
func (p *process) shutdown() error {
	p.shutdownOnce.Do(func() {
		p.stopping.Store(true)
		close(p.stopped)
		p.stdin.Close()
		defer p.stdout.Close()
		defer killGroup(p.cmd) // stragglers the server left behind
		if !p.connected.Load() {
			killGroup(p.cmd)
			select {
			case <-p.done:
			case <-time.After(p.terminate):
				p.shutdownErr = errors.New("server process does not exit")
			}
			return
		}
		wait := func() bool {
			t := time.NewTimer(p.terminate)
			defer t.Stop()
			select {
			case <-p.done:
				return true
			case <-t.C:
				return false
			}
		}
		if wait() {
			return
		}
		if terminateGroup(p.cmd) == nil && wait() {
			return
		}
		killGroup(p.cmd)
		if !wait() {
			p.shutdownErr = errors.New("server process does not exit")
		}
	})
	return p.shutdownErr
}

func (p *process) closeErr() error { return p.shutdown() }

// exited returns an *ExitError if the process ended on its own (its output
// ended before it was shut down) by now or within exitWait (the connection
// usually breaks just before Wait returns), or nil.
func (p *process) exited(ctx context.Context, name string) error {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
	if !p.hungUp.Load() {
		return nil // it ended because it was shut down
	}
	return &ExitError{Server: name, Err: p.waitErr, Stderr: p.stderr.String()}
}

// stdoutHead returns the start of what the server wrote before the session
// was initialized.
func (p *process) stdoutHead() string {
	p.headMu.Lock()
	defer p.headMu.Unlock()
	return strings.TrimSpace(string(p.head))
}

// stdinCloser is the writing half of the stdio connection; closing it shuts
// the server down.
type stdinCloser struct{ p *process }

func (w *stdinCloser) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w *stdinCloser) Close() error                { return w.p.shutdown() }

// stdoutReader is the reading half of the stdio connection. Closing it does
// nothing: the server is shut down through its input, and shutdown closes
// the pipe once the server is gone.
type stdoutReader struct{ p *process }

func (r *stdoutReader) Read(b []byte) (int, error) {
	n, err := r.p.stdout.Read(b)
	if n > 0 && !r.p.connected.Load() {
		r.p.headMu.Lock()
		if room := stdoutHeadSize - len(r.p.head); room > 0 {
			r.p.head = append(r.p.head, b[:min(n, room)]...)
		}
		r.p.headMu.Unlock()
	}
	if err != nil && !r.p.stopping.Load() {
		r.p.hungUp.Store(true)
	}
	return n, err
}

func (r *stdoutReader) Close() error { return nil }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
