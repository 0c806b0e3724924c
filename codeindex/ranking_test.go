package codeindex_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// TestSearchBM25WeighsADefinitionsDocCommentAndSignature indexes a function
// whose doc comment says "buffered data" once and one whose body says it
// twice: the body alone would rank the second first.
func TestSearchBM25WeighsADefinitionsDocCommentAndSignature(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a/drain.go": "package a\n\n// Drain writes out the buffered data.\nfunc Drain() {\n\tn := 1\n\t_ = n\n}\n",
		"a/other.go": "package a\n\n// Other counts.\nfunc Other() {\n\tbuffered, data := 1, 2\n\t_ = buffered + data\n}\n",
	})
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	hits, err := ix.Search(ctx, "buffered data", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.Equal(t, []string{"a.Drain", "a.Other"}, symbols(hits))
}

// TestSearchWeighsAPythonDefinitionsDocstringAndSignature is the Python
// form of the test above, in both rankings: a function whose docstring
// says "buffered data" once and one whose body says it twice.
func TestSearchWeighsAPythonDefinitionsDocstringAndSignature(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a/drain.py": "def drain():\n    \"\"\"Write out the buffered data.\"\"\"\n    n = 1\n    return n\n",
		"a/other.py": "def other():\n    \"\"\"Count.\"\"\"\n    buffered, data = 1, 2\n    return buffered + data\n",
	})
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	for _, m := range []codeindex.Mode{codeindex.BM25, codeindex.Vector} {
		t.Run(m.String(), func(t *testing.T) {
			hits, err := ix.Search(ctx, "buffered data", codeindex.WithMode(m))
			require.NoError(t, err)
			require.Equal(t, []string{"a.drain.drain", "a.other.other"}, symbols(hits))
		})
	}
}

// TestSearchScoresDoNotDependOnHowTheIndexWasBuilt indexes the same files
// in one Update and in one Update per file, searching between them: the
// keyword index's segments differ, the scores must not.
func TestSearchScoresDoNotDependOnHowTheIndexWasBuilt(t *testing.T) {
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("p/f%d.go", i)] = fmt.Sprintf(
			"package p\n\n// Parse%d reads request %d headers from a line.\nfunc Parse%d(line string) string {\n\treturn line + %q\n}\n", i, i, i, fmt.Sprint("header", i))
	}
	ctx := context.Background()

	oneRoot := t.TempDir()
	writeTree(t, oneRoot, files)
	one, err := codeindex.Open(ctx, oneRoot)
	require.NoError(t, err)
	defer one.Close()
	_, err = one.Update(ctx)
	require.NoError(t, err)

	stepRoot := t.TempDir()
	step, err := codeindex.Open(ctx, stepRoot)
	require.NoError(t, err)
	defer step.Close()
	for i := range 8 {
		name := fmt.Sprintf("p/f%d.go", i)
		writeTree(t, stepRoot, map[string]string{name: files[name]})
		_, err = step.Update(ctx)
		require.NoError(t, err)
		_, err = step.Search(ctx, "parse request headers", codeindex.WithMode(codeindex.BM25))
		require.NoError(t, err)
	}

	for _, q := range []string{"parse request headers", "line header3", "reads"} {
		want, err := one.Search(ctx, q, codeindex.WithMode(codeindex.BM25))
		require.NoError(t, err)
		require.NotEmpty(t, want)
		got, err := step.Search(ctx, q, codeindex.WithMode(codeindex.BM25))
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want, got), q)
	}
}

// TestSearchBreaksTiesAtTheLimitByPath indexes more identical functions
// than a search asks for, so that which of them make the cut is decided by
// the tie-break alone: 80 copies of Twin, more than a search fetches beyond
// its limit, and 5 of Pair, fewer.
func TestSearchBreaksTiesAtTheLimitByPath(t *testing.T) {
	root := t.TempDir()
	for i := range 80 {
		name := filepath.Join(root, fmt.Sprintf("twin%02d.go", i))
		require.NoError(t, os.WriteFile(name, []byte("package same\n\n// Twin is one of many.\nfunc Twin() {}\n"), 0o644))
	}
	for i := range 5 {
		name := filepath.Join(root, fmt.Sprintf("pair%02d.go", i))
		require.NoError(t, os.WriteFile(name, []byte("package same\n\n// Pair is one of a few.\nfunc Pair() {}\n"), 0o644))
	}
	ctx := context.Background()
	ix, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	tests := []struct {
		name  string
		query string
		opts  []codeindex.SearchOption
		want  []string
	}{
		{"many ties", "twin", []codeindex.SearchOption{codeindex.WithTestsLast(false)}, []string{"twin00.go", "twin01.go", "twin02.go"}},
		{"many ties in a candidate pool", "twin", nil, []string{"twin00.go", "twin01.go", "twin02.go"}},
		{"few ties", "pair", []codeindex.SearchOption{codeindex.WithTestsLast(false)}, []string{"pair00.go", "pair01.go", "pair02.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]codeindex.SearchOption{codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(3)}, tt.opts...)
			hits, err := ix.Search(ctx, tt.query, opts...)
			require.NoError(t, err)
			require.Equal(t, tt.want, paths(hits))
		})
	}
}

// TestConcurrentSearchesAndUpdatesAgree runs searches of every mode from
// several goroutines while Updates add files, the first searches after each
// Update computing the keyword statistics together: run with -race.
func TestConcurrentSearchesAndUpdatesAgree(t *testing.T) {
	ix, root := indexed(t)
	ctx := context.Background()
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 20 {
				m := []codeindex.Mode{codeindex.BM25, codeindex.Vector, codeindex.Hybrid}[(g+i)%3]
				if _, err := ix.Search(ctx, "parse request server config", codeindex.WithMode(m)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for i := range 3 {
		writeTree(t, root, map[string]string{fmt.Sprintf("extra/e%d.go", i): fmt.Sprintf("package extra\n\n// Parse%d parses.\nfunc Parse%d() {}\n", i, i)})
		_, err := ix.Update(ctx)
		require.NoError(t, err)
	}
	for range 8 {
		require.NoError(t, <-done)
	}
	hits, err := ix.Search(ctx, "Parse2", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "extra.Parse2", hits[0].Symbol)
}
