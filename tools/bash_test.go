package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processGone reports whether pid no longer runs (absent or a zombie).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitForGone polls until pid is gone or the generous deadline passes.
func waitForGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPid waits for a pid file written by a background command.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			require.NoError(t, err)
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBashReturnsStdoutStderrAndExitCode(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, BashExec(ws), BashArgs{Command: "echo out; echo err >&2; exit 3"})
	require.NoError(t, err)
	require.Equal(t, "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr\n", out)
}

func TestBashReportsNoOutput(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, BashExec(ws), BashArgs{Command: "true"})
	require.NoError(t, err)
	require.Equal(t, "exit code: 0\n(no output)\n", out)
}

func TestBashRunsInWorkspaceRootWithClosedStdin(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, BashExec(ws), BashArgs{Command: "pwd; cat; echo read-done"})
	require.NoError(t, err)
	require.Equal(t, "exit code: 0\n--- stdout ---\n"+ws.Root()+"\nread-done\n", out)
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	tool := BashExec(ws, WithTimeout(300*time.Millisecond))
	out, err := call(t, tool, BashArgs{Command: "sleep 60 & echo $! > bg.pid; echo started; wait"})
	require.NoError(t, err, "a timeout is a result, not an error")
	require.Contains(t, out, "timed out after 300ms; process group killed")
	require.Contains(t, out, "started")
	waitForGone(t, readPid(t, filepath.Join(ws.Root(), "bg.pid")))
}

func TestBashTimeoutSecondsArgumentOverridesDefault(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	tool := BashExec(ws, WithTimeout(time.Millisecond), WithMaxTimeout(time.Minute))
	out, err := call(t, tool, BashArgs{Command: "echo ok", TimeoutSeconds: 30})
	require.NoError(t, err)
	require.Equal(t, "exit code: 0\n--- stdout ---\nok\n", out)
}

func TestBashContextCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	pidFile := filepath.Join(ws.Root(), "bg.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := BashExec(ws).Call(ctx, []byte(`{"command":"sleep 60 & echo $! > bg.pid; wait"}`))
		done <- err
	}()
	pid := readPid(t, pidFile)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		t.Fatal("bash_exec did not return after cancellation")
	}
	waitForGone(t, pid)
}

func TestBashBackgroundProcessHoldingOutputDoesNotHang(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, BashExec(ws), BashArgs{Command: "echo $$; sleep 30 & echo done"})
	require.NoError(t, err)
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 4, out)
	pgid, err := strconv.Atoi(lines[2])
	require.NoError(t, err, out)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	require.Contains(t, out, "done")
}

func TestBashTruncatesLongOutputKeepingHeadAndTail(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	// 4 + 20000 + 4 characters on stdout.
	out, err := call(t, BashExec(ws), BashArgs{Command: "printf HEAD; head -c 20000 /dev/zero | tr '\\0' x; printf TAIL"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "exit code: 0\n--- stdout ---\nHEAD"), out[:40])
	require.True(t, strings.HasSuffix(out, "TAIL\n"))
	require.Contains(t, out, "[... 12008 chars truncated ...]")
	require.Less(t, len(out), DefaultOutputLimit+200)
}

func TestBashSharesOutputLimitBetweenStreams(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, BashExec(ws, WithOutputLimit(100)),
		BashArgs{Command: "head -c 1000 /dev/zero | tr '\\0' o; echo short >&2"})
	require.NoError(t, err)
	require.Contains(t, out, "[... 906 chars truncated ...]")
	require.True(t, strings.HasSuffix(out, "--- stderr ---\nshort\n"), out)
}

func TestBashRejectsInvalidArguments(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	tests := []struct {
		name string
		args string
	}{
		{"empty command", `{"command":"  "}`},
		{"negative timeout", `{"command":"true","timeout_seconds":-1}`},
		{"missing command", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := BashExec(ws).Call(context.Background(), []byte(tt.args))
			require.Error(t, err)
		})
	}
}
