package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// newTestWorkspace returns a Workspace on a fresh temporary directory.
func newTestWorkspace(t testing.TB) *Workspace {
	t.Helper()
	ws, err := NewWorkspace(t.TempDir())
	require.NoError(t, err)
	return ws
}

// writeFiles creates files (slash-separated paths relative to root).
func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// call runs tool with args marshalled to JSON.
func call(t testing.TB, tool Tool, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	return tool.Call(context.Background(), raw)
}
