package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// resolveFixture builds a workspace with symlinks pointing in and out:
//
//	base/outside/secret.txt
//	base/ws/a.txt, sub/b.txt
//	base/ws/inlink -> sub, inabs -> <ws>/sub
//	base/ws/outlink -> <base>/outside, relout -> ../outside
//	base/ws/sub/up -> ../.., dangling -> <base>/outside/missing
//	base/ws/loop1 <-> loop2
func resolveFixture(t testing.TB) (ws *Workspace, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{
		"outside/secret.txt": "secret",
		"ws/a.txt":           "a",
		"ws/sub/b.txt":       "b",
	})
	links := map[string]string{
		"inlink":   "sub",
		"inabs":    filepath.Join(root, "sub"),
		"outlink":  outside,
		"relout":   "../outside",
		"sub/up":   "../..",
		"dangling": filepath.Join(outside, "missing"),
		"loop1":    "loop2",
		"loop2":    "loop1",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))))
	}
	ws, err = NewWorkspace(root)
	require.NoError(t, err)
	return ws, outside
}

func TestNewWorkspaceResolvesRootSymlinks(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(real, link))

	ws, err := NewWorkspace(link)
	require.NoError(t, err)
	require.Equal(t, real, ws.Root())
}

func TestNewWorkspaceRejectsMissingOrNonDirectoryRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, root := range []string{"", filepath.Join(dir, "missing"), file} {
		_, err := NewWorkspace(root)
		require.Error(t, err, "root %q", root)
	}
}

func TestResolveAcceptsPathsInside(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	root := ws.Root()
	tests := []struct {
		name, path, want string
	}{
		{"empty is root", "", root},
		{"dot is root", ".", root},
		{"relative file", "a.txt", filepath.Join(root, "a.txt")},
		{"nested file", "sub/b.txt", filepath.Join(root, "sub/b.txt")},
		{"dot dot staying inside", "sub/../a.txt", filepath.Join(root, "a.txt")},
		{"not existing yet", "new/dir/file.go", filepath.Join(root, "new/dir/file.go")},
		{"absolute inside", filepath.Join(root, "sub/b.txt"), filepath.Join(root, "sub/b.txt")},
		{"relative symlink inside", "inlink/b.txt", filepath.Join(root, "sub/b.txt")},
		{"absolute symlink inside", "inabs/new.txt", filepath.Join(root, "sub/new.txt")},
		{"symlink then dot dot", "inlink/../a.txt", filepath.Join(root, "a.txt")},
		{"redundant slashes", "sub//./b.txt", filepath.Join(root, "sub/b.txt")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ws.Resolve(tt.path)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestResolveRefusesEscapes(t *testing.T) {
	t.Parallel()
	ws, outside := resolveFixture(t)
	tests := []struct {
		name, path string
	}{
		{"dot dot", ".."},
		{"dot dot file", "../outside/secret.txt"},
		{"dot dot after subdir", "sub/../../outside/secret.txt"},
		{"absolute outside", "/etc/passwd"},
		{"filesystem root", "/"},
		{"absolute sibling with root prefix", ws.Root() + "-evil/x"},
		{"absolute symlink out", "outlink/secret.txt"},
		{"symlink out not existing target", "outlink/new.txt"},
		{"symlink itself", "outlink"},
		{"relative symlink out", "relout/secret.txt"},
		{"symlink climbing up", "sub/up/outside/secret.txt"},
		{"dangling symlink out", "dangling"},
		{"proc self root", "/proc/self/root/etc/passwd"},
		{"proc self root to outside", "/proc/self/root" + outside},
		{"proc self cwd", "/proc/self/cwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ws.Resolve(tt.path)
			var outErr *OutsideWorkspaceError
			require.ErrorAs(t, err, &outErr, "resolved to %q", got)
			require.Equal(t, tt.path, outErr.Path)
			require.Empty(t, got)
		})
	}
}

func TestResolveReportsSymlinkLoops(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	_, err := ws.Resolve("loop1/x")
	require.ErrorContains(t, err, "too many levels of symbolic links")
}

func TestResolveRefusesNULBytes(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	_, err := ws.Resolve("a\x00b")
	require.ErrorContains(t, err, "NUL")
}

func FuzzResolve(f *testing.F) {
	ws, outside := resolveFixture(f)
	root := ws.Root()
	for _, seed := range []string{
		"", ".", "..", "a.txt", "sub/b.txt", "../outside", "sub/../../x", "/etc/passwd",
		"/proc/self/root/etc", "inlink/..", "outlink/x", "relout", "sub/up/ws/a.txt",
		"dangling/x", "loop1", root + "/inlink/../a.txt", outside, root + "/../ws/a.txt",
		"/proc/self/cwd/..", "inabs/../../outside",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ws.Resolve(p)
		if err != nil {
			require.Empty(t, got)
			return
		}
		require.True(t, filepath.IsAbs(got), "not absolute: %q", got)
		require.Equal(t, filepath.Clean(got), got)
		require.True(t, got == root || strings.HasPrefix(got, root+string(filepath.Separator)),
			"Resolve(%q) = %q is outside %q", p, got, root)
		// The result is already resolved: resolving it again is a no-op,
		// and if it exists the kernel's view agrees it is inside.
		again, err := resolvePath(got)
		require.NoError(t, err)
		require.Equal(t, got, again)
		if real, err := filepath.EvalSymlinks(got); err == nil {
			require.True(t, real == root || strings.HasPrefix(real, root+string(filepath.Separator)),
				"EvalSymlinks(%q) = %q is outside %q", got, real, root)
		}
	})
}
