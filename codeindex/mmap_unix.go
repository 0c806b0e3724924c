//go:build unix

package codeindex

import (
	"os"
	"syscall"
)

// mapFile maps the size bytes of f read-only into memory; the mapping
// outlives f's closing.
func mapFile(f *os.File, size int64) (*mappedFile, error) {
	if size == 0 || int64(int(size)) != size {
		return readMapped(f, size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readMapped(f, size) // a file system that cannot map: read it
	}
	return &mappedFile{data: data, unmap: func() error { return syscall.Munmap(data) }}, nil
}
