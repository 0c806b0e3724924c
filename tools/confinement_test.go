//go:build unix

package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// swapFixture is a workspace whose directory d keeps being replaced by a
// symlink to a directory outside it, and back, while the tools run.
type swapFixture struct {
	ws      *Workspace
	outside string
	stop    chan struct{}
	done    sync.WaitGroup
	swaps   atomic.Int64
}

const (
	outsideSecret = "OUTSIDE-SECRET inside"
	outsideEntry  = "OUTSIDE-ENTRY"
)

// newSwapFixture builds base/ws with d/secret.txt ("inside") and
// base/outside with secret.txt (outsideSecret, which also contains
// "inside" so that an escaped file_patch would find its old_text) and
// OUTSIDE-ENTRY, and starts swapping.
func newSwapFixture(t *testing.T) *swapFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	f := &swapFixture{outside: filepath.Join(base, "outside"), stop: make(chan struct{})}
	writeFiles(t, base, map[string]string{
		"outside/secret.txt":      outsideSecret,
		"outside/" + outsideEntry: "",
		"ws/d/secret.txt":         "inside",
	})
	f.ws, err = NewWorkspace(filepath.Join(base, "ws"))
	require.NoError(t, err)
	root := f.ws.Root()
	d, dir, link := filepath.Join(root, "d"), filepath.Join(root, "d.dir"), filepath.Join(root, "d.link")
	require.NoError(t, os.Rename(d, dir))
	require.NoError(t, os.Symlink(f.outside, link))
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		// Each step is one rename, so that d changes as often as possible:
		// d.dir -> d -> d.dir, then d.link -> d -> d.link. A step that
		// fails (file_write may have created d) is repaired.
		steps := [][2]string{{dir, d}, {d, dir}, {link, d}, {d, link}}
		for i := 0; ; i++ {
			select {
			case <-f.stop:
				return
			default:
			}
			if err := os.Rename(steps[i%4][0], steps[i%4][1]); err != nil {
				_ = os.RemoveAll(d)
				if _, err := os.Lstat(dir); err != nil {
					_ = os.Mkdir(dir, 0o755)
					_ = os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("inside"), 0o644)
				}
				if _, err := os.Lstat(link); err != nil {
					_ = os.Symlink(f.outside, link)
				}
				i = -1
				continue
			}
			f.swaps.Add(1)
		}
	}()
	t.Cleanup(f.close)
	return f
}

func (f *swapFixture) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.done.Wait()
}

// requireOutsideUntouched checks that the outside directory holds exactly
// what it held at the start.
func (f *swapFixture) requireOutsideUntouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{outsideEntry, "secret.txt"}, names, "files were created outside the workspace")
	data, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	require.NoError(t, err)
	require.Equal(t, outsideSecret, string(data), "a file outside the workspace was changed")
}

func TestFileToolsSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		calls int
		tool  func(*Workspace) Tool
		args  func(i int) any
	}{
		{"file_read", 3000, func(ws *Workspace) Tool { return FileRead(ws) },
			func(int) any { return FileReadArgs{Path: "d/secret.txt"} }},
		{"file_list directory", 3000, func(ws *Workspace) Tool { return FileList(ws) },
			func(int) any { return FileListArgs{Path: "d"} }},
		{"file_list tree", 3000, func(ws *Workspace) Tool { return FileList(ws) },
			func(int) any { return FileListArgs{Depth: 3} }},
		{"file_write", 3000, func(ws *Workspace) Tool { return FileWrite(ws) },
			func(i int) any { return FileWriteArgs{Path: fmt.Sprintf("d/new-%d.txt", i), Content: "x"} }},
		{"file_patch", 1000, func(ws *Workspace) Tool { return FilePatch(ws) },
			func(int) any { return FilePatchArgs{Path: "d/secret.txt", OldText: "inside", NewText: "inside!"} }},
		{"grep", 1000, func(ws *Workspace) Tool { return Grep(ws) },
			func(int) any { return GrepArgs{Pattern: "OUTSIDE|inside"} }},
		{"grep directory", 1000, func(ws *Workspace) Tool { return Grep(ws) },
			func(int) any { return GrepArgs{Pattern: "OUTSIDE|inside", Path: "d"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newSwapFixture(t)
			tool := tt.tool(f.ws)
			succeeded, failed := 0, 0
			for i := range tt.calls {
				out, err := call(t, tool, tt.args(i))
				if err != nil {
					failed++
					require.NotContains(t, err.Error(), "OUTSIDE", "call %d", i)
					continue
				}
				succeeded++
				require.NotContains(t, out, "OUTSIDE", "call %d leaked outside content", i)
			}
			f.close()
			f.requireOutsideUntouched(t)
			t.Logf("%d calls: %d succeeded, %d failed; %d swaps", tt.calls, succeeded, failed, f.swaps.Load())
		})
	}
}

func TestWriteToolsRefuseVCSMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		path      string
		component string
	}{
		{"git config", ".git/config", ".git"},
		{"git hook", ".git/hooks/pre-commit", ".git"},
		{"new file in git dir", ".git/info/attributes", ".git"},
		{"upper case", ".GIT/config", ".GIT"},
		{"mixed case", ".Git/hooks/post-checkout", ".Git"},
		{"nested repository", "vendor/lib/.git/config", ".git"},
		{"gitdir link file", "sub/.git", ".git"},
		{"git file at the root", ".git", ".git"},
		{"dot dot into git", "src/../.git/config", ".git"},
		{"symlink to git dir", "gitlink/config", ".git"},
		{"mercurial", ".hg/hgrc", ".hg"},
		{"subversion", ".svn/entries", ".svn"},
		{"jujutsu", ".jj/repo/config.toml", ".jj"},
		{"bazaar", ".bzr/branch/branch.conf", ".bzr"},
	}
	newWS := func(t *testing.T) *Workspace {
		ws := newTestWorkspace(t)
		writeFiles(t, ws.Root(), map[string]string{
			".git/config":              "[core]\n\tbare = false\n",
			".git/hooks/pre-commit":    "#!/bin/sh\n",
			".GIT/config":              "[core]\n\tbare = false\n",
			".Git/hooks/post-checkout": "#!/bin/sh\n",
			"vendor/lib/.git/config":   "[core]\n\tbare = false\n",
			"sub/.git":                 "gitdir: ../.git/modules/sub\n",
			".hg/hgrc":                 "[hooks]\n",
			".svn/entries":             "12\n",
			".jj/repo/config.toml":     "[ui]\n",
			".bzr/branch/branch.conf":  "x = y\n",
			"src/main.go":              "package main\n",
		})
		require.NoError(t, os.Symlink(".git", filepath.Join(ws.Root(), "gitlink")))
		return ws
	}
	snapshot := func(t *testing.T, ws *Workspace, p string) string {
		data, err := os.ReadFile(filepath.Join(ws.Root(), p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWS(t)
			before := snapshot(t, ws, tt.path)
			for _, c := range []struct {
				tool Tool
				args any
			}{
				{FileWrite(ws), FileWriteArgs{Path: tt.path, Content: "[core]\n\tfsmonitor = touch /tmp/pwned\n"}},
				{FilePatch(ws), FilePatchArgs{Path: tt.path, OldText: "\n", NewText: "\n\tfsmonitor = x\n"}},
			} {
				_, err := call(t, c.tool, c.args)
				var protected *ProtectedPathError
				require.ErrorAs(t, err, &protected, c.tool.Name())
				require.Equal(t, tt.path, protected.Path)
				require.Equal(t, tt.component, protected.Component)
				require.Equal(t, before, snapshot(t, ws, tt.path), "%s changed the file", c.tool.Name())
			}
		})
	}

	t.Run("allowed with WithVCSWrites", func(t *testing.T) {
		t.Parallel()
		ws := newWS(t)
		_, err := call(t, FileWrite(ws, WithVCSWrites(true)), FileWriteArgs{Path: ".git/info/exclude", Content: "*.log\n"})
		require.NoError(t, err)
		_, err = call(t, FilePatch(ws, WithVCSWrites(true)), FilePatchArgs{Path: ".git/config", OldText: "bare = false", NewText: "bare = false\n\tlogallrefupdates = true"})
		require.NoError(t, err)
		require.Contains(t, snapshot(t, ws, ".git/config"), "logallrefupdates")
	})

	t.Run("reading stays allowed", func(t *testing.T) {
		t.Parallel()
		ws := newWS(t)
		out, err := call(t, FileRead(ws), FileReadArgs{Path: ".git/config"})
		require.NoError(t, err)
		require.Contains(t, out, "bare = false")
	})

	t.Run("names that only look alike are writable", func(t *testing.T) {
		t.Parallel()
		ws := newWS(t)
		for _, p := range []string{".gitignore", ".github/workflows/ci.yml", "git/config", "x.git/config", ".gitattributes", "docs/.hgignore"} {
			_, err := call(t, FileWrite(ws), FileWriteArgs{Path: p, Content: "x\n"})
			require.NoError(t, err, p)
		}
	})
}

func TestCheckWritableDirCatchesOpenedMetadataDirectory(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{".git/hooks/x": "", "src/a.go": ""})
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("the path of an open directory is not known on this system")
	}
	root, err := ws.openRoot()
	require.NoError(t, err)
	defer root.Close()
	tests := []struct {
		dir       string
		protected bool
	}{
		{".git/hooks", true},
		{".git", true},
		{"src", false},
		{".", false},
	}
	for _, tt := range tests {
		dir, err := root.OpenRoot(tt.dir)
		require.NoError(t, err)
		err = ws.checkWritableDir(dir, tt.dir+"/f")
		dir.Close()
		if tt.protected {
			var protected *ProtectedPathError
			require.ErrorAs(t, err, &protected, tt.dir)
		} else {
			require.NoError(t, err, tt.dir)
		}
	}
}

// hardLinkFixture returns a workspace holding hl.txt, a hard link to a
// file outside it, and that file's path.
func hardLinkFixture(t *testing.T) (*Workspace, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	outside := filepath.Join(base, "host-secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("HOST-SECRET line\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(base, "ws"), 0o755))
	if err := os.Link(outside, filepath.Join(base, "ws", "hl.txt")); err != nil {
		t.Skipf("cannot create hard links here: %v", err)
	}
	writeFiles(t, base, map[string]string{"ws/plain.txt": "plain line\n"})
	ws, err := NewWorkspace(filepath.Join(base, "ws"))
	require.NoError(t, err)
	return ws, outside
}

func TestFileToolsRefuseHardLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool func(*Workspace, ...Option) Tool
		args any
	}{
		{"file_read", FileRead, FileReadArgs{Path: "hl.txt"}},
		{"file_patch", FilePatch, FilePatchArgs{Path: "hl.txt", OldText: "HOST-SECRET", NewText: "patched"}},
		{"file_write", FileWrite, FileWriteArgs{Path: "hl.txt", Content: "replaced\n"}},
		{"grep named file", Grep, GrepArgs{Pattern: "SECRET", Path: "hl.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, outside := hardLinkFixture(t)
			out, err := call(t, tt.tool(ws), tt.args)
			var hl *HardLinkError
			require.ErrorAs(t, err, &hl)
			require.Equal(t, "hl.txt", hl.Path)
			require.Equal(t, uint64(2), hl.Links)
			require.NotContains(t, out, "HOST-SECRET")
			data, err := os.ReadFile(outside)
			require.NoError(t, err)
			require.Equal(t, "HOST-SECRET line\n", string(data))
		})
	}

	t.Run("grep skips them", func(t *testing.T) {
		t.Parallel()
		ws, _ := hardLinkFixture(t)
		out, err := call(t, Grep(ws), GrepArgs{Pattern: "line"})
		require.NoError(t, err)
		require.Equal(t, "plain.txt:1: plain line\n", out)
	})

	t.Run("allowed with WithHardLinks", func(t *testing.T) {
		t.Parallel()
		ws, outside := hardLinkFixture(t)
		out, err := call(t, FileRead(ws, WithHardLinks(true)), FileReadArgs{Path: "hl.txt"})
		require.NoError(t, err)
		require.Contains(t, out, "HOST-SECRET")
		out, err = call(t, Grep(ws, WithHardLinks(true)), GrepArgs{Pattern: "SECRET"})
		require.NoError(t, err)
		require.Contains(t, out, "hl.txt:1:")
		_, err = call(t, FilePatch(ws, WithHardLinks(true)), FilePatchArgs{Path: "hl.txt", OldText: "HOST", NewText: "WS"})
		require.NoError(t, err)
		// The atomic rename replaces the link: the outside file keeps its
		// content, the workspace gets its own copy.
		data, err := os.ReadFile(outside)
		require.NoError(t, err)
		require.Equal(t, "HOST-SECRET line\n", string(data))
		data, err = os.ReadFile(filepath.Join(ws.Root(), "hl.txt"))
		require.NoError(t, err)
		require.Equal(t, "WS-SECRET line\n", string(data))
	})
}

func TestFileToolsRefuseSpecialFilesWithoutBlocking(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	require.NoError(t, mkfifo(filepath.Join(ws.Root(), "fifo")))
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "text\n"})
	tests := []struct {
		name string
		tool Tool
		args any
	}{
		{"file_read", FileRead(ws), FileReadArgs{Path: "fifo"}},
		{"file_patch", FilePatch(ws), FilePatchArgs{Path: "fifo", OldText: "a", NewText: "b"}},
		{"file_write", FileWrite(ws), FileWriteArgs{Path: "fifo", Content: "x"}},
		{"grep named", Grep(ws), GrepArgs{Pattern: "x", Path: "fifo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(t, tt.tool, tt.args)
			require.ErrorContains(t, err, "not a regular file")
		})
	}
	out, err := call(t, Grep(ws), GrepArgs{Pattern: "text"})
	require.NoError(t, err)
	require.Equal(t, "a.txt:1: text\n", out, "grep walks past the FIFO")
	entries, err := os.ReadDir(ws.Root())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.True(t, slices.Equal([]string{"a.txt", "fifo"}, names), "no temporary files left: %v", names)
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

func TestRootErrorRecognisesEscapes(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	root, err := ws.openRoot()
	require.NoError(t, err)
	defer root.Close()
	// Opened through the root directly, skipping Resolve, as after a swap.
	for _, name := range []string{"../outside/secret.txt", "outlink/secret.txt", "relout/secret.txt", "sub/up/outside"} {
		_, err := root.Open(name)
		var outErr *OutsideWorkspaceError
		require.ErrorAs(t, rootError(name, err), &outErr, name)
		require.Equal(t, name, outErr.Path)
	}
	_, err = root.Open("missing")
	require.ErrorIs(t, rootError("missing", err), os.ErrNotExist)
}
