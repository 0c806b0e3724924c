package codeindex

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsTestFile(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"net/http/server_test.go", true},
		{"net/http/server.go", false},
		{"cmd/go/internal/test/test.go", false}, // a package named test is code
		{"pkg/test_parser.py", true},
		{"pkg/parser_test.py", true},
		{"pkg/testing.py", false},
		{"web/app.test.ts", true},
		{"web/app.spec.js", true},
		{"web/__tests__/app.js", true},
		{"tests/conftest.py", true},
		{"latest.go", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, isTestFile(tt.path))
		})
	}
}

func TestTestsLastKeepsOrderWithinGroups(t *testing.T) {
	in := []scored{{id: "a_test.go#1"}, {id: "a.go#0"}, {id: "b_test.go#0"}, {id: "b.go#2"}}
	want := []scored{{id: "a.go#0"}, {id: "b.go#2"}, {id: "a_test.go#1"}, {id: "b_test.go#0"}}
	require.Equal(t, want, testsLast(in))
}

// TestSearchRanksTestFilesLast indexes a function and a test that repeats
// its words more often, so that plain BM25 ranks the test first.
func TestSearchRanksTestFilesLast(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"config.go": "package settings\n\n// Read does load config.\nfunc Read(path string) error { return nil }\n",
		"config_test.go": "package settings\n\n// TestLoadConfig does load config.\n" +
			"func TestLoadConfig(t *testing.T) { loadConfig(\"config\"); loadConfig(\"config\") }\n",
	}
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(src), 0o644))
	}
	ctx := context.Background()
	ix, err := Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(ctx)
	require.NoError(t, err)

	tests := []struct {
		name  string
		query string
		opts  []SearchOption
		want  string
	}{
		{"bm25 without the ordering ranks the test first", "load config", []SearchOption{WithMode(BM25), WithTestsLast(false)}, "config_test.go"},
		{"bm25 ranks the code first by default", "load config", []SearchOption{WithMode(BM25)}, "config.go"},
		{"vector ranks the code first by default", "load config", []SearchOption{WithMode(Vector)}, "config.go"},
		{"hybrid ranks the code first by default", "load config", nil, "config.go"},
		{"a query about tests is ranked plainly", "test load config", []SearchOption{WithMode(BM25)}, "config_test.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := ix.Search(ctx, tt.query, tt.opts...)
			require.NoError(t, err)
			require.NotEmpty(t, hits)
			require.Equal(t, tt.want, hits[0].Path)
		})
	}
}
