package samplefs_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/examples/internal/samplefs"
)

func TestCopyWritesTheTreeAndDropsTheSampleSuffix(t *testing.T) {
	fsys := fstest.MapFS{
		"testdata/sample/go.mod.sample": {Data: []byte("module x\n")},
		"testdata/sample/pkg/a.go":      {Data: []byte("package pkg\n")},
		"testdata/other/b.txt":          {Data: []byte("not copied")},
	}
	dir := t.TempDir()
	require.NoError(t, samplefs.Copy(fsys, "testdata/sample", dir))
	got, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, "module x\n", string(got))
	got, err = os.ReadFile(filepath.Join(dir, "pkg", "a.go"))
	require.NoError(t, err)
	require.Equal(t, "package pkg\n", string(got))
	_, err = os.Stat(filepath.Join(dir, "b.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
