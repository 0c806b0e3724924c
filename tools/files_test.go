package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestFileReadNumbersLines(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "one\ntwo\r\nthree"})
	out, err := call(t, FileRead(ws), FileReadArgs{Path: "a.txt"})
	require.NoError(t, err)
	require.Equal(t, "     1\tone\n     2\ttwo\n     3\tthree\n", out)
}

func TestFileReadLineRange(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "l1\nl2\nl3\nl4\nl5\n"})
	tests := []struct {
		name       string
		start, end int
		want       string
	}{
		{"start and end", 2, 3, "     2\tl2\n     3\tl3\n"},
		{"start only", 4, 0, "     4\tl4\n     5\tl5\n"},
		{"end only", 0, 1, "     1\tl1\n"},
		{"end past EOF", 5, 99, "     5\tl5\n"},
		{"single line", 3, 3, "     3\tl3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, FileRead(ws), FileReadArgs{Path: "a.txt", StartLine: tt.start, EndLine: tt.end})
			require.NoError(t, err)
			require.Equal(t, tt.want, out)
		})
	}
}

func TestFileReadRejectsBadLineRanges(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "l1\nl2\n"})
	tests := []struct {
		name       string
		start, end int
		wantErr    string
	}{
		{"start past EOF", 3, 0, "past the end"},
		{"start after end", 2, 1, "after end_line"},
		{"negative", -1, 0, "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(t, FileRead(ws), FileReadArgs{Path: "a.txt", StartLine: tt.start, EndLine: tt.end})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestFileReadRefusesLargeFileWithoutRange(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	big := strings.Repeat(strings.Repeat("x", 99)+"\n", 2100) // 210,000 bytes
	writeFiles(t, ws.Root(), map[string]string{"big.txt": big})

	_, err := call(t, FileRead(ws), FileReadArgs{Path: "big.txt"})
	require.ErrorContains(t, err, "200 KB")

	out, err := call(t, FileRead(ws), FileReadArgs{Path: "big.txt", StartLine: 2050, EndLine: 2051})
	require.NoError(t, err)
	require.Equal(t, "  2050\t"+strings.Repeat("x", 99)+"\n  2051\t"+strings.Repeat("x", 99)+"\n", out)
}

func TestFileReadCapsRangeOutput(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	big := strings.Repeat(strings.Repeat("x", 999)+"\n", 300) // 300,000 bytes
	writeFiles(t, ws.Root(), map[string]string{"big.txt": big})
	out, err := call(t, FileRead(ws), FileReadArgs{Path: "big.txt", StartLine: 1})
	require.NoError(t, err)
	require.LessOrEqual(t, len(out), MaxReadBytes+200)
	require.Contains(t, out, "[output truncated at 200 KB after line 203; continue with start_line=204]")
}

func TestFileReadRefusesBinaryFile(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"bin": "ELF\x00\x01\x02"})
	_, err := call(t, FileRead(ws), FileReadArgs{Path: "bin"})
	require.ErrorContains(t, err, "binary")
}

func TestFileReadEmptyFile(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"empty": ""})
	out, err := call(t, FileRead(ws), FileReadArgs{Path: "empty"})
	require.NoError(t, err)
	require.Equal(t, "(empty file)\n", out)
}

func TestFileReadRefusesDirectoriesAndMissingFiles(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"dir/a": ""})
	_, err := call(t, FileRead(ws), FileReadArgs{Path: "dir"})
	require.ErrorContains(t, err, "is a directory")
	_, err = call(t, FileRead(ws), FileReadArgs{Path: "missing"})
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestFileToolsRefusePathsOutsideWorkspace(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	tests := []struct {
		name string
		tool Tool
		args any
	}{
		{"file_read", FileRead(ws), FileReadArgs{Path: "outlink/secret.txt"}},
		{"file_list", FileList(ws), FileListArgs{Path: ".."}},
		{"file_write", FileWrite(ws), FileWriteArgs{Path: "outlink/new.txt", Content: "x"}},
		{"file_write dangling", FileWrite(ws), FileWriteArgs{Path: "dangling", Content: "x"}},
		{"file_patch", FilePatch(ws), FilePatchArgs{Path: "../outside/secret.txt", OldText: "secret", NewText: "x"}},
		{"grep", Grep(ws), GrepArgs{Pattern: "secret", Path: "relout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(t, tt.tool, tt.args)
			var outErr *OutsideWorkspaceError
			require.ErrorAs(t, err, &outErr)
		})
	}
	_, err := os.Stat(filepath.Join(filepath.Dir(ws.Root()), "outside", "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(filepath.Dir(ws.Root()), "outside", "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestFileListShowsTree(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"README.md":               "",
		"cmd/app/main.go":         "",
		"cmd/app/deep/x.go":       "",
		"pkg/lib.go":              "",
		".git/HEAD":               "",
		"node_modules/m/index.js": "",
		"vendor/v/v.go":           "",
		".env":                    "",
	})
	require.NoError(t, os.Mkdir(filepath.Join(ws.Root(), "empty"), 0o755))
	require.NoError(t, os.Symlink("pkg/lib.go", filepath.Join(ws.Root(), "link")))

	tests := []struct {
		name string
		args FileListArgs
		want string
	}{
		{"default depth 2", FileListArgs{}, `./
.env
README.md
cmd/
  app/
empty/
link -> pkg/lib.go
pkg/
  lib.go
`},
		{"depth 1", FileListArgs{Depth: 1}, `./
.env
README.md
cmd/
empty/
link -> pkg/lib.go
pkg/
`},
		{"subdirectory deeper", FileListArgs{Path: "cmd", Depth: 5}, `cmd/
app/
  deep/
    x.go
  main.go
`},
		{"empty directory", FileListArgs{Path: "empty"}, "empty/\n(empty)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, FileList(ws), tt.args)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, out))
		})
	}
}

func TestFileListRefusesFilesAndBadDepth(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": ""})
	_, err := call(t, FileList(ws), FileListArgs{Path: "a.txt"})
	require.ErrorContains(t, err, "not a directory")
	_, err = call(t, FileList(ws), FileListArgs{Depth: -1})
	require.ErrorContains(t, err, "depth")
}

func TestFileWriteCreatesParentDirectories(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	out, err := call(t, FileWrite(ws), FileWriteArgs{Path: "a/b/c.txt", Content: "hello"})
	require.NoError(t, err)
	require.Equal(t, "created a/b/c.txt (5 bytes)", out)
	p := filepath.Join(ws.Root(), "a/b/c.txt")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

func TestFileWriteKeepsExistingModeAndLeavesNoTempFiles(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	p := filepath.Join(ws.Root(), "run.sh")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o755))
	require.NoError(t, os.Chmod(p, 0o751))

	out, err := call(t, FileWrite(ws), FileWriteArgs{Path: "run.sh", Content: "#!/bin/sh\n"})
	require.NoError(t, err)
	require.Equal(t, "overwrote run.sh (10 bytes)", out)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o751), fi.Mode().Perm())
	entries, err := os.ReadDir(ws.Root())
	require.NoError(t, err)
	require.Len(t, entries, 1, "temporary files must be renamed or removed")
}

func TestFileWriteThroughSymlinkInsideReplacesTarget(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"real.txt": "old"})
	require.NoError(t, os.Symlink("real.txt", filepath.Join(ws.Root(), "link.txt")))
	_, err := call(t, FileWrite(ws), FileWriteArgs{Path: "link.txt", Content: "new"})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(ws.Root(), "real.txt"))
	require.NoError(t, err)
	require.Equal(t, "new", string(data))
	fi, err := os.Lstat(filepath.Join(ws.Root(), "link.txt"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "the symlink stays a symlink")
}

func TestFileWriteRefusesDirectory(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"dir/a": ""})
	_, err := call(t, FileWrite(ws), FileWriteArgs{Path: "dir", Content: "x"})
	require.ErrorContains(t, err, "is a directory")
}

func TestFilePatchReplacesUniqueMatchAndReportsLine(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	p := filepath.Join(ws.Root(), "main.go")
	require.NoError(t, os.WriteFile(p, []byte("package main\n\nfunc main() {\n\tprintln(1)\n}\n"), 0o600))
	out, err := call(t, FilePatch(ws), FilePatchArgs{Path: "main.go", OldText: "\tprintln(1)\n", NewText: "\tprintln(2)\n\tprintln(3)\n"})
	require.NoError(t, err)
	require.Equal(t, "patched main.go: replaced 1 occurrence starting at line 4", out)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "package main\n\nfunc main() {\n\tprintln(2)\n\tprintln(3)\n}\n", string(data))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestFilePatchRequiresExactlyOneMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		content   string
		old       string
		wantCount int
		wantMsg   string
	}{
		{"no match", "abc", "x", 0, "(0 matches)"},
		{"two matches", "foo bar foo", "foo", 2, "matches 2 times"},
		{"overlapping matches", "aaa", "aa", 2, "matches 2 times"},
		{"whitespace differs", "a  b", "a b", 0, "(0 matches)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			writeFiles(t, ws.Root(), map[string]string{"f.txt": tt.content})
			_, err := call(t, FilePatch(ws), FilePatchArgs{Path: "f.txt", OldText: tt.old, NewText: "Z"})
			var mc *MatchCountError
			require.ErrorAs(t, err, &mc)
			require.Equal(t, tt.wantCount, mc.Count)
			require.Equal(t, "f.txt", mc.Path)
			require.ErrorContains(t, err, tt.wantMsg)
			data, err := os.ReadFile(filepath.Join(ws.Root(), "f.txt"))
			require.NoError(t, err)
			require.Equal(t, tt.content, string(data), "the file must be unchanged")
		})
	}
}

func TestFilePatchRejectsEmptyOldTextAndBinaryFiles(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"f.txt": "abc", "bin": "a\x00b"})
	_, err := call(t, FilePatch(ws), FilePatchArgs{Path: "f.txt", OldText: "", NewText: "x"})
	require.ErrorContains(t, err, "empty")
	_, err = call(t, FilePatch(ws), FilePatchArgs{Path: "bin", OldText: "a", NewText: "x"})
	require.ErrorContains(t, err, "binary")
}

func FuzzPatch(f *testing.F) {
	f.Add("hello world\n", "world", "gopher")
	f.Add("aaa", "aa", "b")
	f.Add("line1\nline2\nline3\n", "line2\n", "")
	f.Add("x", "x", "xx")
	f.Add("ünïcödé\r\n", "ï", "i")
	f.Add("", "a", "b")
	dir := f.TempDir()
	ws, err := NewWorkspace(dir)
	require.NoError(f, err)
	tool := FilePatch(ws)
	f.Fuzz(func(t *testing.T, original, old, replacement string) {
		p := filepath.Join(ws.Root(), "f.txt")
		require.NoError(t, os.WriteFile(p, []byte(original), 0o644))
		_, line, err := patchFile(ws, newConfig(nil), "f.txt", old, replacement)
		got, readErr := os.ReadFile(p)
		require.NoError(t, readErr)
		if err != nil {
			require.Equal(t, original, string(got), "a failed patch must leave the file alone")
			return
		}
		require.Equal(t, 1, countOverlapping(original, old))
		require.Equal(t, strings.Replace(original, old, replacement, 1), string(got))
		idx := strings.Index(original, old)
		require.Equal(t, 1+strings.Count(original[:idx], "\n"), line)

		// The tool gives the same result for JSON-representable input.
		if utf8.ValidString(original) && utf8.ValidString(old) && utf8.ValidString(replacement) {
			require.NoError(t, os.WriteFile(p, []byte(original), 0o644))
			_, err := call(t, tool, FilePatchArgs{Path: "f.txt", OldText: old, NewText: replacement})
			require.NoError(t, err)
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, strings.Replace(original, old, replacement, 1), string(got))
		}
	})
}

func TestPatchFileCancelledContext(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"f.txt": "abc"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := FilePatch(ws).Call(ctx, []byte(`{"path":"f.txt","old_text":"a","new_text":"b"}`))
	require.ErrorIs(t, err, context.Canceled)
}
