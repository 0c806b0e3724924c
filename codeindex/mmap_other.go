//go:build !unix

package codeindex

import "os"

// mapFile reads f: this platform's files are not mapped.
func mapFile(f *os.File, size int64) (*mappedFile, error) { return readMapped(f, size) }
