package filetree

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// maxEntries bounds how many entries HasSuffix looks at.
const maxEntries = 500

// HasSuffix reports whether dir holds, at any depth, a file whose name
// ends in suffix, looking at a few hundred entries at most. A missing or
// unreadable dir holds none.
func HasSuffix(dir, suffix string) bool {
	found, seen := false, 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fs.SkipAll
		}
		seen++
		if !d.IsDir() && strings.HasSuffix(d.Name(), suffix) {
			found = true
			return fs.SkipAll
		}
		if seen > maxEntries {
			return fs.SkipAll
		}
		return nil
	})
	return found
}
