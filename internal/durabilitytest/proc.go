//go:build unix

package durabilitytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ChildTest is the name of the test function, in each backend's test
// package, that calls [Child]: the child processes run it.
const ChildTest = "TestProcessChild"

// Environment of a child process.
const (
	envRole     = "AGENTGRAPH_DURABILITY_ROLE" // "ops" or "crash"
	envAddr     = "AGENTGRAPH_DURABILITY_ADDR"
	envLeaseTTL = "AGENTGRAPH_DURABILITY_LEASE_TTL"
	envName     = "AGENTGRAPH_DURABILITY_NAME"
)

// callTimeout bounds one request to a child (a hung child fails the test
// instead of hanging it).
const callTimeout = 2 * time.Minute

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// proc is a child process.
type proc struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	out    *lockedBuffer
	pipe   *os.File // the child's fd 3, read end
	exited chan struct{}
	werr   error

	// ops children: requests on stdin, replies on fd 3.
	stdin io.WriteCloser
	dec   *json.Decoder
}

// startProc starts this test binary as a child running ChildTest with env
// added to the environment. The child writes to its fd 3, which the parent
// reads from p.pipe.
func startProc(t testing.TB, name string, withStdin bool, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+ChildTest+"$", "-test.count=1", "-test.v", "-test.timeout=10m")
	// GORACE: a race-enabled child would sleep a second before exiting.
	cmd.Env = append(append(os.Environ(), env...), envName+"="+name,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{pw}
	p := &proc{t: t, name: name, cmd: cmd, out: &lockedBuffer{}, pipe: pr, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if withStdin {
		p.stdin, err = cmd.StdinPipe()
		require.NoError(t, err)
	}
	require.NoError(t, cmd.Start())
	pw.Close()
	go func() {
		p.werr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.done() {
			_ = cmd.Process.Kill()
			<-p.exited
		}
		pr.Close()
		if t.Failed() {
			t.Logf("process %s (pid %d) output:\n%s", p.name, p.pid(), p.out.String())
		}
	})
	if withStdin {
		p.dec = json.NewDecoder(pr)
	}
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// killed reports whether the child died of SIGKILL.
func (p *proc) killed() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// kill SIGKILLs the child and waits for it to die.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill() // fails only if it is gone
	<-p.exited
}

// send sends a request to an ops child without waiting for its reply.
func (p *proc) send(req request) {
	p.t.Helper()
	b, err := json.Marshal(req)
	require.NoError(p.t, err)
	_, err = p.stdin.Write(append(b, '\n'))
	require.NoError(p.t, err, "process %s: sending %s", p.name, b)
}

// recv reads the next reply of an ops child.
func (p *proc) recv() reply {
	p.t.Helper()
	require.NoError(p.t, p.pipe.SetReadDeadline(time.Now().Add(callTimeout)))
	var r reply
	if err := p.dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) {
			p.t.Fatalf("process %s (pid %d): no reply (%v); output:\n%s", p.name, p.pid(), err, p.out.String())
		}
		require.NoError(p.t, err)
	}
	return r
}

// call sends a request and returns the reply.
func (p *proc) call(req request) reply {
	p.t.Helper()
	p.send(req)
	return p.recv()
}

// close ends an ops child: it exits when its stdin closes, and must pass.
func (p *proc) close() {
	p.t.Helper()
	require.NoError(p.t, p.stdin.Close())
	select {
	case <-p.exited:
	case <-time.After(callTimeout):
		p.t.Fatalf("process %s did not exit", p.name)
	}
	require.NoError(p.t, p.werr, "process %s output:\n%s", p.name, p.out.String())
	require.Contains(p.t, p.out.String(), "--- PASS: "+ChildTest, "process %s", p.name)
}

// Child is the body of ChildTest: the child processes of every test of
// this package run it; run on its own it is skipped.
func Child(t *testing.T, b Backend) {
	switch role := os.Getenv(envRole); role {
	case "":
		t.Skip("child process of the durability tests")
	case "ops":
		opsChild(t, b)
	case "crash":
		crashChild(t, b)
	default:
		t.Fatalf("unknown role %q", role)
	}
}

func leaseTTLFromEnv(t testing.TB) (time.Duration, bool) {
	s := os.Getenv(envLeaseTTL)
	if s == "" {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d, true
}

func skipShort(t testing.TB) {
	if testing.Short() {
		t.Skip("starts processes")
	}
}

func env(k, v string) string { return fmt.Sprintf("%s=%s", k, v) }
