//go:build linux

package tools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goProject is a small Go module with one passing test.
var goProject = map[string]string{
	"go.mod":    "module example.com/m\n\ngo 1.22\n",
	"m.go":      "package m\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
	"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
}

func TestGoTestPassesThreeTimesInARowInTheSandbox(t *testing.T) {
	requireSandbox(t)
	requireGo(t)
	t.Parallel()
	opts := []Option{WithSandbox(SandboxRequired), WithTimeout(5 * time.Minute), WithTestTimeout(5 * time.Minute)}
	runs := []struct {
		name string
		run  func(t *testing.T, ws *Workspace) (passed bool, output string)
	}{
		{"bash_exec", func(t *testing.T, ws *Workspace) (bool, string) {
			out, err := call(t, BashExec(ws, opts...), BashArgs{Command: "go test ./...", TimeoutSeconds: 300})
			require.NoError(t, err)
			return strings.HasPrefix(out, "exit code: 0\n"), out
		}},
		{"RunCommand", func(t *testing.T, ws *Workspace) (bool, string) {
			var out bytes.Buffer
			res, err := RunCommand(context.Background(), ws, Command{Args: []string{"go", "test", "./..."}, Stdout: &out, Stderr: &out}, opts...)
			require.NoError(t, err)
			return res.ExitCode == 0 && res.Sandboxed, out.String()
		}},
		{"run_tests", func(t *testing.T, ws *Workspace) (bool, string) {
			report, err := RunTests(context.Background(), ws, "", opts...)
			require.NoError(t, err)
			return report.ExitCode == 0 && report.Passed == 1 && report.Failed == 0, report.Output
		}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			writeFiles(t, ws.Root(), goProject)
			var outputs []string
			for i := range 3 {
				passed, out := r.run(t, ws)
				require.True(t, passed, "run %d: %s", i+1, out)
				outputs = append(outputs, out)
			}
			if r.name != "run_tests" { // go test -json reports no "(cached)"
				require.Contains(t, outputs[2], "(cached)", "the third run reuses the test result the first cached")
			}
		})
	}
}

func TestSandboxedGoWritesItsOwnCacheNotTheHosts(t *testing.T) {
	requireSandbox(t)
	requireGo(t)
	t.Parallel()
	g, err := hostGoEnv(t.TempDir())
	require.NoError(t, err)
	cacheDir := t.TempDir()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), goProject)
	var out, errOut bytes.Buffer
	res, err := RunCommand(context.Background(), ws, Command{
		Args: []string{"sh", "-c", `go env GOCACHE GOMODCACHE GOFLAGS GOPROXY && touch "$(go env GOCACHE)/probe" && ` +
			`touch ` + g.GOCACHE + `/agentgraph-sandbox-probe 2>/dev/null || echo host-cache-read-only`},
		Stdout: &out, Stderr: &errOut,
	}, WithSandbox(SandboxRequired), WithGoCaches(), WithCacheDir(cacheDir))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, errOut.String())
	real, err := filepath.EvalSymlinks(cacheDir)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String())
	require.Equal(t, filepath.Join(real, "go-build"), lines[0])
	require.Equal(t, g.GOMODCACHE, lines[1])
	require.Contains(t, strings.Fields(lines[2]), "-mod=readonly")
	require.Equal(t, "off", lines[3])
	require.Equal(t, "host-cache-read-only", lines[4])
	require.FileExists(t, filepath.Join(real, "go-build", "probe"))
	require.NoFileExists(t, filepath.Join(g.GOCACHE, "agentgraph-sandbox-probe"))
}

func TestCacheDirMayNotBeTheHostsGoCacheOrHoldTheWorkspace(t *testing.T) {
	requireGo(t)
	t.Parallel()
	g, err := hostGoEnv(t.TempDir())
	require.NoError(t, err)
	ws := newTestWorkspace(t)
	tests := []struct {
		name, dir string
	}{
		{"the host's build cache", g.GOCACHE},
		{"a directory holding the workspace", filepath.Dir(ws.Root())},
	}
	if filepath.Base(g.GOCACHE) == "go-build" {
		tests = append(tests, struct{ name, dir string }{"the host's build cache's parent", filepath.Dir(g.GOCACHE)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunCommand(context.Background(), ws, Command{Args: []string{"true"}}, WithCacheDir(tt.dir), WithSandbox(SandboxOff))
			var cdErr *CacheDirError
			require.True(t, errors.As(err, &cdErr), "%v", err)
		})
	}
}

func TestDefaultCacheDirIsUnderTheUsersCacheDir(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory: %v", err)
	}
	require.Equal(t, filepath.Join(base, "agentgraph", "sandbox"), DefaultCacheDir())
}

func TestCommandsOfTwoWorkspacesShareTheDefaultCaches(t *testing.T) {
	t.Parallel()
	var gocache []string
	for range 2 {
		ws := newTestWorkspace(t)
		var out bytes.Buffer
		res, err := RunCommand(context.Background(), ws, Command{Args: []string{"sh", "-c", `echo "$GOCACHE"`}, Stdout: &out}, WithSandbox(SandboxOff))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		gocache = append(gocache, strings.TrimSpace(out.String()))
	}
	real, err := filepath.EvalSymlinks(DefaultCacheDir())
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(real, "go-build"), filepath.Join(real, "go-build")}, gocache)
}

// A cache directory inside one another user owns could be swapped for
// theirs (a planted build cache): it is refused.
func TestACacheDirAnotherUserCanChangeIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a directory to another user")
	}
	theirs := filepath.Join(t.TempDir(), "theirs")
	require.NoError(t, os.Mkdir(theirs, 0o755))
	require.NoError(t, os.Chown(theirs, 65534, 65534))
	_, err := RunCommand(context.Background(), newTestWorkspace(t), Command{Args: []string{"true"}},
		WithSandbox(SandboxOff), WithCacheDir(filepath.Join(theirs, "cache")))
	var ce *CacheDirError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Reason, theirs+" may be changed by another user")

	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777))
	_, err = RunCommand(context.Background(), newTestWorkspace(t), Command{Args: []string{"true"}},
		WithSandbox(SandboxOff), WithCacheDir(filepath.Join(open, "cache")))
	require.ErrorAs(t, err, &ce, "a world-writable directory without the sticky bit")
}
