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
	return callCtx(context.Background(), tool, args)
}

// callCtx runs tool with args marshalled to JSON under ctx.
func callCtx(ctx context.Context, tool Tool, args any) (string, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	return tool.Call(ctx, raw)
}

// withSandboxInfo makes bash_exec see info instead of SandboxStatus.
func withSandboxInfo(info SandboxInfo) Option {
	return func(c *config) { c.sandboxInfo = func() SandboxInfo { return info } }
}
