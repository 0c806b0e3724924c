package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain points the default cache directory of every test workspace at
// one directory, so that the package's many sandboxed go runs share one
// build cache (kept between runs, as the user's Go build cache is) instead
// of compiling the standard library once per workspace.
func TestMain(m *testing.M) {
	shared, err := DefaultCacheDir(filepath.Join(os.TempDir(), "agentgraph-tools-tests"))
	if err == nil {
		defaultCacheDir = func(string) (string, error) { return shared, nil }
	}
	os.Exit(m.Run())
}
