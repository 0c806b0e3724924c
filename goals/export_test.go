package goals

import (
	"os"
	"path/filepath"
	"testing"
)

// Unregister removes a goal registered by a test.
func Unregister(name string) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.factories, name)
}

// writeFile creates dir/name (slash-separated) with content.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
