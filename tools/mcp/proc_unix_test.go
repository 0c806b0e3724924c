//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/tools/mcp"
)

// pidsOf waits for the "pids: <server> <child>" line of the test server.
func pidsOf(t *testing.T, w *lineWatcher) (server, child int) {
	t.Helper()
	<-w.seen
	w.mu.Lock()
	m := regexp.MustCompile(`pids: (\d+) (\d+)`).FindStringSubmatch(w.buf.String())
	w.mu.Unlock()
	require.NotNil(t, m)
	server, _ = strconv.Atoi(m[1])
	child, _ = strconv.Atoi(m[2])
	return server, child
}

// gone reports whether the process pid has ended (it no longer exists, or
// is a zombie waiting to be reaped by its new parent).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...; comm may hold spaces, so look after the last ')'.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// requireGone waits until pid has ended; a SIGKILL takes effect
// asynchronously. The bound only keeps a broken kill from hanging the test.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return gone(pid) }, 30*time.Second, 5*time.Millisecond, "process %d still running", pid)
}

func TestCloseKillsAServerThatIgnoresEOFAndSIGTERM(t *testing.T) {
	w := newLineWatcher("pids:")
	s := connectStdio(t,
		mcp.WithEnv(stubbornEnv+"=1", childEnv+"=1"),
		mcp.WithStderr(w),
		mcp.WithTerminateTimeout(50*time.Millisecond))
	server, child := pidsOf(t, w)
	out, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"x"}`))
	require.NoError(t, err)
	require.Equal(t, "x", out)

	require.NoError(t, s.Close())
	require.True(t, gone(server), "server reaped by Close")
	requireGone(t, child)
}

func TestCloseKillsWhatTheServerLeftBehind(t *testing.T) {
	w := newLineWatcher("pids:")
	s := connectStdio(t, mcp.WithEnv(childEnv+"=1"), mcp.WithStderr(w))
	server, child := pidsOf(t, w)
	require.False(t, gone(child))

	require.NoError(t, s.Close())
	require.True(t, gone(server), "server reaped by Close")
	requireGone(t, child)
}

func TestConnectStdioHonoursTheContext(t *testing.T) {
	// A "server" that never answers the initialize request.
	w := newLineWatcher("ready")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := mcp.ConnectStdio(ctx, "sh", []string{"-c", "echo ready $$ >&2; exec sleep 600"},
			mcp.WithStderr(w), mcp.WithTerminateTimeout(50*time.Millisecond))
		errc <- err
	}()
	<-w.seen
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	w.mu.Lock()
	m := regexp.MustCompile(`ready (\d+)`).FindStringSubmatch(w.buf.String())
	w.mu.Unlock()
	require.NotNil(t, m)
	pid, _ := strconv.Atoi(m[1])
	require.True(t, gone(pid), "the server process was ended")
}

func TestFailedConnectKillsAServerThatWritesGarbageAtOnce(t *testing.T) {
	// The server ignores SIGTERM and its input closing: a failed connect
	// that waited for it (an hour here) would hang the test.
	w := newLineWatcher("pid")
	_, err := mcp.ConnectStdio(context.Background(), "sh", []string{"-c", "trap '' TERM; echo pid $$ >&2; echo 'not json, a banner'; exec sleep 600"},
		mcp.WithStderr(w), mcp.WithTerminateTimeout(time.Hour))
	require.ErrorContains(t, err, "invalid character")
	require.ErrorContains(t, err, `the server wrote on stdout: "not json, a banner"`)
	w.mu.Lock()
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(w.buf.String())
	w.mu.Unlock()
	require.NotNil(t, m)
	pid, _ := strconv.Atoi(m[1])
	require.True(t, gone(pid), "the server process was killed")
}

func TestConnectTimeoutSaysWhatTheServerWrote(t *testing.T) {
	// Valid JSON-RPC, but not an answer to initialize: the connect waits
	// until ctx ends.
	w := newLineWatcher("ready")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := mcp.ConnectStdio(ctx, "sh", []string{"-c", `trap '' TERM; echo '{"jsonrpc":"2.0","id":99}'; echo ready >&2; exec sleep 600`},
			mcp.WithStderr(w), mcp.WithTerminateTimeout(time.Hour))
		errc <- err
	}()
	<-w.seen
	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, `the server wrote on stdout: "{\"jsonrpc\":\"2.0\",\"id\":99}"`)
	require.ErrorContains(t, err, "stderr: ready")
}
