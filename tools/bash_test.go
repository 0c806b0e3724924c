package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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

func TestBashTimeoutSecondsArgumentOverridesDefault(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	tool := BashExec(ws, WithTimeout(time.Millisecond), WithMaxTimeout(time.Minute))
	out, err := call(t, tool, BashArgs{Command: "echo ok", TimeoutSeconds: 30})
	require.NoError(t, err)
	require.Equal(t, "exit code: 0\n--- stdout ---\nok\n", out)
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
