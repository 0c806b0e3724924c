// Package samplefs writes the sample projects the examples embed to disk.
// A sample's go.mod is embedded as go.mod.sample, so that the go command
// does not take the embedded folder for a module of this repository.
package samplefs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Copy writes the tree below root in fsys into dir, dropping the ".sample"
// suffix of file names.
func Copy(fsys fs.FS, root, dir string) error {
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		target := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(rel, ".sample")))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
