package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/tools"
)

// usersFile writes a --users file of alice and bob and returns its path.
func usersFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(path, []byte("# the test's users\nalice alice-t0ken\n\nbob   bob-t0ken\n"), 0o600))
	return path
}

func TestAuthFlagChoices(t *testing.T) {
	t.Setenv(tokenEnv, "")
	users := usersFile(t)
	tests := []struct {
		name  string
		args  []string
		auth  string
		users map[string]server.Identity
	}{
		{"token by default", []string{"--token", "x"}, authToken, nil},
		{"token", []string{"--auth", "token", "--token", "x"}, authToken, nil},
		{"users", []string{"--auth", "users", "--users", users}, authUsers, map[string]server.Identity{"alice-t0ken": {ID: "alice"}, "bob-t0ken": {ID: "bob"}}},
		{"none-loopback", []string{"--auth", "none-loopback"}, authNoneLoopback, nil},
		{"insecure-loopback", []string{"--insecure-loopback"}, authNoneLoopback, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parse(tt.args, &stderr)
			require.NoError(t, err, stderr.String())
			require.Equal(t, tt.auth, o.auth)
			require.Equal(t, tt.users, o.users)
		})
	}
}

func TestAuthFlagRefusesWhatDoesNotFit(t *testing.T) {
	t.Setenv(tokenEnv, "")
	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, []byte("alice\n"), 0o600))
	dup := filepath.Join(t.TempDir(), "dup")
	require.NoError(t, os.WriteFile(dup, []byte("alice t\nbob t\n"), 0o600))
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("# nobody\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown choice", []string{"--auth", "basic"}, "want token, users or none-loopback"},
		{"users without a file", []string{"--auth", "users"}, "needs --users FILE"},
		{"users and a token", []string{"--auth", "users", "--users", usersFile(t), "--token", "x"}, "exclude each other"},
		{"a users file with a token", []string{"--users", usersFile(t), "--token", "x"}, "--users is for --auth users"},
		{"loopback and users", []string{"--insecure-loopback", "--auth", "users"}, "exclude each other"},
		{"a line without a token", []string{"--auth", "users", "--users", bad}, "want USER-ID TOKEN"},
		{"a token twice", []string{"--auth", "users", "--users", dup}, "a token given twice"},
		{"no user", []string{"--auth", "users", "--users", empty}, "no user"},
		{"a missing file", []string{"--auth", "users", "--users", filepath.Join(t.TempDir(), "none")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, exitUsage, run(t.Context(), tt.args, &stdout, &stderr))
			require.Contains(t, stderr.String(), tt.want)
		})
	}
}

// With --auth users each user sees only their own threads; /ok is public.
func TestUsersSeeOnlyTheirOwnThreads(t *testing.T) {
	s := start(t, "--auth", "users", "--users", usersFile(t))
	var th struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
	}
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads", "alice-t0ken", map[string]any{}, &th))
	require.Equal(t, "alice", th.Metadata["owner"])
	require.Equal(t, http.StatusOK, s.call(t, "GET", "/threads/"+th.ThreadID, "alice-t0ken", nil, nil))
	require.Equal(t, http.StatusNotFound, s.call(t, "GET", "/threads/"+th.ThreadID, "bob-t0ken", nil, nil))
	var found []any
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads/search", "bob-t0ken", map[string]any{}, &found))
	require.Empty(t, found)
	require.Equal(t, http.StatusUnauthorized, s.call(t, "POST", "/threads/search", "", map[string]any{}, nil))
	require.Equal(t, http.StatusOK, s.call(t, "GET", "/ok", "", nil, nil))
}

func TestCheckSandboxRefusesTheCodingGraphsWithoutOne(t *testing.T) {
	working := tools.SandboxInfo{Available: true, Path: "/usr/bin/bwrap"}
	missing := tools.SandboxInfo{Reason: "bwrap is not installed"}
	tests := []struct {
		name  string
		info  tools.SandboxInfo
		mode  tools.SandboxMode
		allow bool
		want  string // "" for served
	}{
		{"required with a sandbox", working, tools.SandboxRequired, false, ""},
		{"auto with a sandbox", working, tools.SandboxAuto, false, ""},
		{"required without one", missing, tools.SandboxRequired, false, "bwrap is not installed"},
		{"auto without one", missing, tools.SandboxAuto, false, "bwrap is not installed"},
		{"off", working, tools.SandboxOff, false, "--sandbox off"},
		{"off, allowed", working, tools.SandboxOff, true, ""},
		{"auto without one, allowed", missing, tools.SandboxAuto, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSandbox(tt.info, tt.mode, tt.allow)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnsandboxed)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "--allow-unsandboxed")
		})
	}
}

func TestSandboxOffIsRefusedUnlessAllowed(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	args := []string{"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "gs.db"), "--insecure-loopback", "--sandbox", "off"}
	require.Equal(t, exitError, run(ctx, args, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--allow-unsandboxed")
	require.NotContains(t, stdout.String(), "listening")

	s := start(t, "--insecure-loopback", "--sandbox", "off", "--allow-unsandboxed")
	require.Equal(t, http.StatusOK, s.call(t, "POST", "/threads", "", map[string]any{}, nil))
}
