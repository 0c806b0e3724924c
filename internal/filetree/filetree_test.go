package filetree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/filetree"
)

func TestHasSuffix(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tests", "unit"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "unit", "test_x.py"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "README.md"), nil, 0o644))
	tests := []struct {
		name, dir, suffix string
		want              bool
	}{
		{"nested file", filepath.Join(dir, "tests"), ".py", true},
		{"no such file", filepath.Join(dir, "tests"), ".go", false},
		{"missing dir", filepath.Join(dir, "nope"), ".py", false},
		{"a directory's name does not count", dir, "unit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, filetree.HasSuffix(tt.dir, tt.suffix))
		})
	}
}
