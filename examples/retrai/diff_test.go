package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// apply replays an edit script on a, checking that its kept and deleted
// lines are a's and its kept and inserted lines b's, in order.
func apply(t *testing.T, ops []diffOp, a, b []string) []string {
	t.Helper()
	var out []string
	ai, bi := 0, 0
	for _, op := range ops {
		require.Equal(t, ai, op.a, "op %+v: position in a", op)
		require.Equal(t, bi, op.b, "op %+v: position in b", op)
		switch op.kind {
		case ' ':
			require.Equal(t, a[ai], b[bi])
			out = append(out, a[ai])
			ai, bi = ai+1, bi+1
		case '-':
			ai++
		case '+':
			out = append(out, b[bi])
			bi++
		}
	}
	require.Equal(t, len(a), ai)
	return out
}

// lcs is the length of the longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

func edits(ops []diffOp) int {
	n := 0
	for _, op := range ops {
		if op.kind != ' ' {
			n++
		}
	}
	return n
}

func TestDiffLinesIsAShortestEditScript(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "d"}
	random := func() []string {
		s := make([]string, rng.IntN(12))
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return s
	}
	for range 2000 {
		a, b := random(), random()
		ops := diffLines(a, b)
		got := apply(t, ops, a, b)
		if len(b) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, b, got, "a=%q", a)
		}
		require.Equal(t, len(a)+len(b)-2*lcs(a, b), edits(ops), "a=%q b=%q", a, b)
	}
}

func TestDiffLinesPastMaxEditsReplacesTheMiddle(t *testing.T) {
	var a, b []string
	for i := range maxEdits {
		a = append(a, "old "+strings.Repeat("x", i%7))
		b = append(b, "new "+strings.Repeat("y", i%5))
	}
	a = append([]string{"same"}, append(a, "end")...)
	b = append([]string{"same"}, append(b, "end")...)
	ops := diffLines(a, b)
	require.Equal(t, b, apply(t, ops, a, b))
	require.Equal(t, 2*maxEdits, edits(ops))
	require.Equal(t, diffOp{' ', 0, 0}, ops[0], "the common prefix is kept")
	require.Equal(t, diffOp{' ', len(a) - 1, len(b) - 1}, ops[len(ops)-1], "the common suffix is kept")
}

func TestUnifiedHunks(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want []diffHunk
	}{
		{name: "equal", a: "x\ny\n", b: "x\ny\n", want: nil},
		{
			name: "one line changed",
			a:    "Hello, Wrold!\n", b: "Hello, World!\n",
			want: []diffHunk{{Header: "@@ -1 +1 @@", Lines: []string{"-Hello, Wrold!", "+Hello, World!"}}},
		},
		{
			name: "a new file",
			a:    "", b: "one\ntwo\n",
			want: []diffHunk{{Header: "@@ -0,0 +1,2 @@", Lines: []string{"+one", "+two"}}},
		},
		{
			name: "a deleted file",
			a:    "one\ntwo\n", b: "",
			want: []diffHunk{{Header: "@@ -1,2 +0,0 @@", Lines: []string{"-one", "-two"}}},
		},
		{
			name: "three lines of context, and a far change in a hunk of its own",
			a:    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", b: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\nthirteen\n",
			want: []diffHunk{
				{Header: "@@ -2,7 +2,7 @@", Lines: []string{" 2", " 3", " 4", "-5", "+five", " 6", " 7", " 8"}},
				{Header: "@@ -10,3 +10,4 @@", Lines: []string{" 10", " 11", " 12", "+thirteen"}},
			},
		},
		{
			name: "changes close together share a hunk",
			a:    "1\n2\n3\n4\n5\n6\n7\n8\n", b: "one\n2\n3\n4\n5\n6\n7\neight\n",
			want: []diffHunk{{Header: "@@ -1,8 +1,8 @@", Lines: []string{"-1", "+one", " 2", " 3", " 4", " 5", " 6", " 7", "-8", "+eight"}}},
		},
		{
			name: "a final newline added",
			a:    "x", b: "x\n",
			want: []diffHunk{{Header: "@@ -1 +1 @@", Lines: []string{"-x\n\\ No newline at end of file", "+x"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, unifiedHunks(splitLines(tt.a), splitLines(tt.b), diffContext))
		})
	}
}

// writeFiles writes files (slash-separated path → text) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
}

func TestChangesListEachChangedFileWithItsDiff(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"keep.txt": "same\n", "edit.go": "a\nb\nc\n", "gone.txt": "bye\n", "bin.dat": "\x00\x01"})
	tr := newChangeTracker()
	tr.mark("r", dir, "start", false)
	writeFiles(t, dir, map[string]string{"edit.go": "a\nB\nc\n", "sub/new.txt": "hi\n", "bin.dat": "\x00\x02"})
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))

	got := tr.changes("r")
	require.Equal(t, "start", got.Since)
	require.Empty(t, got.Note)
	require.Equal(t, []fileChange{
		{Path: "bin.dat", Status: "modified", Note: "binary or large file changed (2 → 2 bytes)"},
		{Path: "edit.go", Status: "modified", Added: 1, Removed: 1, Hunks: []diffHunk{{Header: "@@ -1,3 +1,3 @@", Lines: []string{" a", "-b", "+B", " c"}}}},
		{Path: "gone.txt", Status: "deleted", Removed: 1, Hunks: []diffHunk{{Header: "@@ -1 +0,0 @@", Lines: []string{"-bye"}}}},
		{Path: "sub/new.txt", Status: "added", Added: 1, Hunks: []diffHunk{{Header: "@@ -0,0 +1 @@", Lines: []string{"+hi"}}}},
	}, got.Files)
}

func TestChangesCountFromTheLastMark(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.txt": "1\n"})
	tr := newChangeTracker()
	tr.mark("r", dir, "start", false)
	writeFiles(t, dir, map[string]string{"f.txt": "2\n"})
	tr.mark("r", dir, "check", false) // the human approved "2"
	writeFiles(t, dir, map[string]string{"f.txt": "3\n"})
	got := tr.changes("r")
	require.Equal(t, "check", got.Since)
	require.Len(t, got.Files, 1)
	require.Equal(t, []string{"-2", "+3"}, got.Files[0].Hunks[0].Lines)
}

func TestChangesKeepTheBaselineOfAResumedRun(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.txt": "1\n"})
	tr := newChangeTracker()
	tr.mark("r", dir, "start", false)
	writeFiles(t, dir, map[string]string{"f.txt": "2\n"}) // before the run was interrupted
	tr.mark("r", dir, "resume", true)
	got := tr.changes("r")
	require.Equal(t, "start", got.Since)
	require.Equal(t, []string{"-1", "+2"}, got.Files[0].Hunks[0].Lines)
}

func TestChangesWithoutABaselineSaySo(t *testing.T) {
	got := newChangeTracker().changes("unknown")
	require.Empty(t, got.Files)
	require.NotNil(t, got.Files, "an empty list, not null, for the page")
	require.Contains(t, got.Note, "cannot be shown")
}

func TestSnapshotSkipsHiddenDirsCachesAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("the secret\n"), 0o600))
	writeFiles(t, dir, map[string]string{"main.go": "package main\n", ".git/HEAD": "ref\n", "node_modules/x.js": "x\n", ".env": "K=v\n"})
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "linkdir")))

	s := snapshotDir(dir)
	var paths []string
	for p := range s.files {
		paths = append(paths, p)
	}
	require.ElementsMatch(t, []string{"main.go", ".env"}, paths, "no file under .git or node_modules, and no link followed")

	// A link the agent points elsewhere shows nothing of its target.
	tr := newChangeTracker()
	tr.mark("r", dir, "start", false)
	require.NoError(t, os.Remove(filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link.txt")))
	require.Empty(t, tr.changes("r").Files)
}

func TestSnapshotKeepsNoTextOfLargeFiles(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line\n", maxDiffFileBytes/5+1)
	writeFiles(t, dir, map[string]string{"big.log": big})
	tr := newChangeTracker()
	tr.mark("r", dir, "start", false)
	writeFiles(t, dir, map[string]string{"big.log": big + "more\n"})
	got := tr.changes("r").Files
	require.Len(t, got, 1)
	require.Empty(t, got[0].Hunks)
	require.Contains(t, got[0].Note, "binary or large file changed")
}

func TestSnapshotStopsAtItsFileLimit(t *testing.T) {
	dir := t.TempDir()
	for i := range maxSnapshotFiles + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644))
	}
	s := snapshotDir(dir)
	require.Len(t, s.files, maxSnapshotFiles)
	require.Contains(t, s.partial, "only the first")
}
