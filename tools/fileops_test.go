package tools

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileAppendCreatesAndAppends(t *testing.T) {
	ws := newTestWorkspace(t)
	tool := FileAppend(ws)
	out, err := call(t, tool, FileAppendArgs{Path: "log/a.txt", Content: "one\n"})
	require.NoError(t, err)
	require.Equal(t, "appended 4 bytes to log/a.txt (now 4 bytes)", out)
	_, err = call(t, tool, FileAppendArgs{Path: "log/a.txt", Content: "two\n"})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "log/a.txt"))
	require.NoError(t, err)
	require.Equal(t, "one\ntwo\n", string(b))
}

func TestFileAppendRefusesBinaryFiles(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"b.bin": "a\x00b"})
	_, err := call(t, FileAppend(ws), FileAppendArgs{Path: "b.bin", Content: "x"})
	require.ErrorContains(t, err, "binary")
}

func TestFileDeleteRemovesFilesAndEmptyDirectories(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "a", "d/keep.txt": "k"})
	require.NoError(t, os.Mkdir(filepath.Join(ws.Root(), "empty"), 0o755))
	for _, p := range []string{"a.txt", "empty"} {
		out, err := call(t, FileDelete(ws), FileDeleteArgs{Path: p})
		require.NoError(t, err)
		require.Equal(t, "deleted "+p, out)
		require.NoFileExists(t, filepath.Join(ws.Root(), p))
	}
	_, err := call(t, FileDelete(ws), FileDeleteArgs{Path: "d"})
	require.Error(t, err, "a non-empty directory is refused")
	_, err = call(t, FileDelete(ws), FileDeleteArgs{Path: "missing"})
	require.Error(t, err)
	_, err = call(t, FileDelete(ws), FileDeleteArgs{Path: "."})
	require.Error(t, err, "the root is refused")
}

func TestFileDeleteAndMoveActOnASymlinkNotItsTarget(t *testing.T) {
	ws := newTestWorkspace(t)
	outside := filepath.Join(t.TempDir(), "precious.txt")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "a"})
	require.NoError(t, os.Symlink(outside, filepath.Join(ws.Root(), "out-link")))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws.Root(), "in-link")))

	_, err := call(t, FileMove(ws), FileTransferArgs{Source: "out-link", Destination: "moved-link"})
	require.NoError(t, err)
	target, err := os.Readlink(filepath.Join(ws.Root(), "moved-link"))
	require.NoError(t, err)
	require.Equal(t, outside, target)
	for _, p := range []string{"moved-link", "in-link"} {
		_, err = call(t, FileDelete(ws), FileDeleteArgs{Path: p})
		require.NoError(t, err)
		_, err = os.Lstat(filepath.Join(ws.Root(), p))
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.FileExists(t, outside)
	require.FileExists(t, filepath.Join(ws.Root(), "a.txt"))
}

func TestFileCopyAndMove(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"src/a.txt": "alpha"})
	out, err := call(t, FileCopy(ws), FileTransferArgs{Source: "src/a.txt", Destination: "dst/b.txt"})
	require.NoError(t, err)
	require.Equal(t, "copied src/a.txt to dst/b.txt (5 bytes)", out)
	_, err = call(t, FileCopy(ws), FileTransferArgs{Source: "src/a.txt", Destination: "src/a.txt"})
	require.ErrorContains(t, err, "same file")
	out, err = call(t, FileMove(ws), FileTransferArgs{Source: "src", Destination: "moved/src"})
	require.NoError(t, err)
	require.Equal(t, "moved src to moved/src", out)
	b, err := os.ReadFile(filepath.Join(ws.Root(), "moved/src/a.txt"))
	require.NoError(t, err)
	require.Equal(t, "alpha", string(b))
	_, err = call(t, FileMove(ws), FileTransferArgs{Source: "nope", Destination: "x"})
	require.Error(t, err)
}

func TestFileOpsStayInTheWorkspace(t *testing.T) {
	ws := newTestWorkspace(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "s"})
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "a"})
	require.NoError(t, os.Symlink(outside, filepath.Join(ws.Root(), "out")))
	cases := []struct {
		name string
		tool Tool
		args any
	}{
		{"copy out", FileCopy(ws), FileTransferArgs{Source: "a.txt", Destination: "../x.txt"}},
		{"copy in", FileCopy(ws), FileTransferArgs{Source: filepath.Join(outside, "secret.txt"), Destination: "s.txt"}},
		{"copy through symlink", FileCopy(ws), FileTransferArgs{Source: "out/secret.txt", Destination: "s.txt"}},
		{"move out", FileMove(ws), FileTransferArgs{Source: "a.txt", Destination: "out/a.txt"}},
		{"move in", FileMove(ws), FileTransferArgs{Source: "out/secret.txt", Destination: "s.txt"}},
		{"move up", FileMove(ws), FileTransferArgs{Source: "../x", Destination: "s.txt"}},
		{"delete up", FileDelete(ws), FileDeleteArgs{Path: "../x"}},
		{"append out", FileAppend(ws), FileAppendArgs{Path: "out/secret.txt", Content: "x"}},
		{"delete out", FileDelete(ws), FileDeleteArgs{Path: "out/secret.txt"}},
		{"replace out", FileReplace(ws), FileReplaceArgs{Path: "out/secret.txt", Old: "s", New: "x"}},
		{"find out", FileFind(ws), FileFindArgs{Pattern: "*", Dir: "out"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, c.tool, c.args)
			var oe *OutsideWorkspaceError
			require.ErrorAs(t, err, &oe)
		})
	}
	b, err := os.ReadFile(filepath.Join(outside, "secret.txt"))
	require.NoError(t, err)
	require.Equal(t, "s", string(b))
	require.FileExists(t, filepath.Join(ws.Root(), "a.txt"))
}

func TestFileOpsRefuseVCSMetadata(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{".git/config": "[core]\n", "a.txt": "a"})
	for _, c := range []struct {
		tool Tool
		args any
	}{
		{FileAppend(ws), FileAppendArgs{Path: ".git/config", Content: "x"}},
		{FileDelete(ws), FileDeleteArgs{Path: ".git/config"}},
		{FileCopy(ws), FileTransferArgs{Source: "a.txt", Destination: ".git/hooks/pre-commit"}},
		{FileMove(ws), FileTransferArgs{Source: "a.txt", Destination: ".GIT/x"}},
		{FileReplace(ws), FileReplaceArgs{Path: ".git/config", Old: "core", New: "x"}},
	} {
		_, err := call(t, c.tool, c.args)
		var pe *ProtectedPathError
		require.ErrorAs(t, err, &pe)
	}
}

func TestFileFindMatchesNamesOrPaths(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.py": "", "pkg/b.py": "", "pkg/c.go": "", "node_modules/x.py": "", ".git/y.py": ""})
	out, err := call(t, FileFind(ws), FileFindArgs{Pattern: "*.py"})
	require.NoError(t, err)
	require.Equal(t, "a.py\npkg/b.py", out)
	out, err = call(t, FileFind(ws), FileFindArgs{Pattern: "pkg/*.go"})
	require.NoError(t, err)
	require.Equal(t, "pkg/c.go", out)
	out, err = call(t, FileFind(ws), FileFindArgs{Pattern: "*.rs"})
	require.NoError(t, err)
	require.Equal(t, "no files match *.rs", out)
	_, err = call(t, FileFind(ws), FileFindArgs{Pattern: "[bad"})
	require.ErrorContains(t, err, "bad pattern")
}

func TestFileReplaceReplacesEveryOccurrence(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "x y x y x"})
	out, err := call(t, FileReplace(ws), FileReplaceArgs{Path: "a.txt", Old: "x", New: "z"})
	require.NoError(t, err)
	require.Equal(t, "replaced 3 occurrence(s) in a.txt", out)
	b, _ := os.ReadFile(filepath.Join(ws.Root(), "a.txt"))
	require.Equal(t, "z y z y z", string(b))
	_, err = call(t, FileReplace(ws), FileReplaceArgs{Path: "a.txt", Old: "q", New: "z"})
	require.ErrorContains(t, err, "does not occur")
	_, err = call(t, FileReplace(ws), FileReplaceArgs{Path: "a.txt", Old: "", New: "z"})
	require.Error(t, err)
}

func TestFileAppendConcurrentCallsKeepAFullFile(t *testing.T) {
	ws := newTestWorkspace(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = call(t, FileAppend(ws), FileAppendArgs{Path: "a.txt", Content: "line\n"})
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(ws.Root(), "a.txt"))
	require.NoError(t, err)
	// Appends race (read-modify-rename), so some may be lost, but the file
	// is always a whole number of complete lines.
	require.NotEmpty(t, b)
	require.Equal(t, strings.Repeat("line\n", strings.Count(string(b), "line\n")), string(b))
}

func TestFileOpsToolNames(t *testing.T) {
	ws := newTestWorkspace(t)
	var names []string
	for _, tl := range FileOps(ws) {
		names = append(names, tl.Name())
	}
	require.Equal(t, []string{"file_append", "file_delete", "file_copy", "file_move", "file_find", "file_replace"}, names)
	_, err := NewSet(append(Coding(ws), FileOps(ws)...)...)
	require.NoError(t, err, "no name clashes with the coding tools")
}
