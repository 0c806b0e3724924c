package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tree below one already scanned is not walked again: its entries come
// from the scan of the tree that holds it, and are the ones a walk of its
// own finds; below a directory that scan hid, it is walked.
func TestRootOnlyInATreeBelowAScannedOneIsWhatItsOwnWalkFinds(t *testing.T) {
	top := t.TempDir()
	files := map[string]os.FileMode{
		"a/secret":        0o600,
		"a/b/hidden":      0o640,
		"a/open":          0o644,
		"locked/x":        0o644,
		"locked/y":        0o600,
		"elsewhere/wide":  0o644,
		"elsewhere/owner": 0o600,
	}
	for name, mode := range files {
		p := filepath.Join(top, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	require.NoError(t, os.Chmod(filepath.Join(top, "locked"), 0o700))

	rootOnlyIn(top) // the scan of the tree holding the others
	for _, sub := range []string{"a", "a/b", "locked"} {
		dir := filepath.Join(top, sub)
		require.ElementsMatch(t, scanRootOnly(dir), rootOnlyIn(dir), sub)
	}
	_, ok := fromScannedAncestor(filepath.Join(top, "a"))
	require.True(t, ok, "a comes from its ancestor's scan")
	_, ok = fromScannedAncestor(filepath.Join(top, "locked"))
	require.False(t, ok, "locked was hidden whole by its ancestor's scan: it is walked")
}
