package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestGrepReturnsPathLineAndText(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"a.go":       "package a\nfunc Foo() {}\n",
		"sub/b.go":   "// Foo is great\nvar x = 1\nfunc Foo2() {}\n",
		"sub/c.txt":  "nothing here\n",
		"z/long.txt": strings.Repeat("y", 400) + "Foo\n",
	})
	out, err := call(t, Grep(ws), GrepArgs{Pattern: `Foo\d?\b`})
	require.NoError(t, err)
	want := "a.go:2: func Foo() {}\n" +
		"sub/b.go:1: // Foo is great\n" +
		"sub/b.go:3: func Foo2() {}\n" +
		"z/long.txt:1: " + strings.Repeat("y", 300) + " [... 103 chars]\n"
	require.Empty(t, cmp.Diff(want, out))
}

func TestGrepHonoursGitignoreFiles(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		".gitignore":            "*.log\nbuild/\n/top.txt\n",
		"app.log":               "needle\n",
		"build/out.txt":         "needle\n",
		"top.txt":               "needle\n",
		"keep.txt":              "needle\n",
		"sub/top.txt":           "needle\n",
		"sub/.gitignore":        "secret.txt\n",
		"sub/secret.txt":        "needle\n",
		"sub/deeper/secret.txt": "needle\n",
		"sub/deeper/x.log":      "needle\n",
		"other/secret.txt":      "needle\n",
	})
	tests := []struct {
		name, path, want string
	}{
		{"from the root", "", "keep.txt:1: needle\nother/secret.txt:1: needle\nsub/top.txt:1: needle\n"},
		{"from a subdirectory uses ancestor rules", "sub", "sub/top.txt:1: needle\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, Grep(ws), GrepArgs{Pattern: "needle", Path: tt.path})
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, out))
		})
	}
}

func TestGrepSkipsVendoredBinaryAndSymlinkedFiles(t *testing.T) {
	t.Parallel()
	ws, _ := resolveFixture(t)
	writeFiles(t, ws.Root(), map[string]string{
		"ok.txt":              "secret\n",
		".git/config":         "secret\n",
		"node_modules/m/a.js": "secret\n",
		"vendor/v/v.go":       "secret\n",
		"bin.dat":             "secret\x00\n",
	})
	require.NoError(t, os.Symlink(filepath.Join(filepath.Dir(ws.Root()), "outside", "secret.txt"), filepath.Join(ws.Root(), "filelink")))
	out, err := call(t, Grep(ws), GrepArgs{Pattern: "secret"})
	require.NoError(t, err)
	require.Equal(t, "ok.txt:1: secret\n", out)
}

func TestGrepSearchesSingleFileEvenIfIgnored(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{".gitignore": "*.log\n", "app.log": "x\nneedle\n"})
	out, err := call(t, Grep(ws), GrepArgs{Pattern: "needle", Path: "app.log"})
	require.NoError(t, err)
	require.Equal(t, "app.log:2: needle\n", out)
}

func TestGrepStopsAtMaxResults(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	writeFiles(t, ws.Root(), map[string]string{"many.txt": b.String()})
	tests := []struct {
		name  string
		max   int
		lines int
	}{
		{"default 200", 0, 200},
		{"explicit 3", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := call(t, Grep(ws), GrepArgs{Pattern: "match", MaxResults: tt.max})
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, tt.lines+1)
			require.Equal(t, fmt.Sprintf("[stopped after %d matches; narrow the pattern or path, or raise max_results]", tt.lines), lines[tt.lines])
		})
	}
}

func TestGrepReportsNoMatches(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "hello\n"})
	out, err := call(t, Grep(ws), GrepArgs{Pattern: "absent"})
	require.NoError(t, err)
	require.Equal(t, "no matches\n", out)
}

func TestGrepRejectsInvalidArguments(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	tests := []struct {
		name    string
		args    GrepArgs
		wantErr string
	}{
		{"bad regexp", GrepArgs{Pattern: "a("}, "invalid pattern"},
		{"empty pattern", GrepArgs{Pattern: ""}, "empty"},
		{"negative max", GrepArgs{Pattern: "a", MaxResults: -1}, "max_results"},
		{"missing path", GrepArgs{Pattern: "a", Path: "nope"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := call(t, Grep(ws), tt.args)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestGrepCancelledContext(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"a.txt": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Grep(ws).Call(ctx, []byte(`{"pattern":"x"}`))
	require.ErrorIs(t, err, context.Canceled)
}
