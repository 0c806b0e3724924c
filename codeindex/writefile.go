package codeindex

import (
	"os"
	"path/filepath"
)

// writeFileAtomic writes path through a temporary file in its folder,
// named after pattern (see os.CreateTemp), that write fills and that is
// then renamed over path: a reader sees the old file or the whole new one,
// and a failed write leaves no temporary file behind.
func writeFileAtomic(path, pattern string, write func(*os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
