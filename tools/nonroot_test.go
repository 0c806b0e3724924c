//go:build linux

package tools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSandboxRunsCommandsOfRootAsAnUnprivilegedUser(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the test is about a process running as root")
	}
	t.Parallel()
	info := SandboxStatus()
	require.True(t, info.DropsRoot, "%+v", info)
	ws := newTestWorkspace(t)
	var out, errOut bytes.Buffer
	res, err := RunCommand(context.Background(), ws, Command{
		Args:   []string{"sh", "-c", `id -u; id -g; grep '^CapEff' /proc/self/status; echo x > written && cat written`},
		Stdout: &out, Stderr: &errOut,
	}, WithSandbox(SandboxRequired))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{strconv.Itoa(SandboxUID), strconv.Itoa(SandboxGID)}, lines[:2])
	require.Equal(t, "CapEff:\t0000000000000000", lines[2])
	require.Equal(t, "x", lines[3], "the workspace stays writable")
}

func TestSandboxHidesFilesOnlyRootMayRead(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the test is about a process running as root, which owns root's files")
	}
	t.Parallel()
	shown := t.TempDir()
	require.NoError(t, os.Chmod(shown, 0o755))
	writeFiles(t, shown, map[string]string{"public.txt": "public\n"})
	secret := filepath.Join(shown, "secret.key")
	require.NoError(t, os.WriteFile(secret, []byte("root-only\n"), 0o600))
	groupOnly := filepath.Join(shown, "group.conf")
	require.NoError(t, os.WriteFile(groupOnly, []byte("root-only\n"), 0o640))
	private := filepath.Join(shown, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(private, "in.txt"), []byte("root-only\n"), 0o644))
	ws := newTestWorkspace(t)

	tests := []struct {
		name, path string
	}{
		{"a 0600 root file of a read-only path", secret},
		{"a 0640 root file of a read-only path", groupOnly},
		{"a world-readable file in a 0700 directory", filepath.Join(private, "in.txt")},
		{"the shadow file", "/etc/shadow"},
		{"the old passwords", "/etc/security/opasswd"},
		{"the snakeoil TLS key", "/etc/ssl/private/ssl-cert-snakeoil.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skipf("%s is not on this machine", tt.path)
			}
			var out bytes.Buffer
			res, err := RunCommand(context.Background(), ws, Command{
				Args: []string{"cat", tt.path}, Stdout: &out, Stderr: &out,
			}, WithSandbox(SandboxRequired), WithReadOnlyPaths(shown))
			require.NoError(t, err)
			require.NotContains(t, out.String(), "root-only")
			if tt.path != "/etc/shadow" { // masked as an empty file
				require.NotEqual(t, 0, res.ExitCode, out.String())
			}
			host, err := os.ReadFile(tt.path)
			require.NoError(t, err)
			if len(host) > 0 {
				require.NotContains(t, out.String(), strings.TrimSpace(string(host)))
			}
		})
	}
	t.Run("a world-readable file stays readable", func(t *testing.T) {
		var out bytes.Buffer
		res, err := RunCommand(context.Background(), ws, Command{
			Args: []string{"cat", filepath.Join(shown, "public.txt")}, Stdout: &out, Stderr: &out,
		}, WithSandbox(SandboxRequired), WithReadOnlyPaths(shown))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, out.String())
		require.Equal(t, "public\n", out.String())
	})
}
