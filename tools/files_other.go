//go:build !unix

package tools

import (
	"io/fs"
	"os"
)

// openNonblock is 0 where opening cannot be made non-blocking.
const openNonblock = 0

// linkCount returns 1: the link count is not available here, so hard links
// are not detected.
func linkCount(fi fs.FileInfo) uint64 { return 1 }

// openedPath reports that the path of an open file is not known here.
func openedPath(f *os.File) (string, bool) { return "", false }

// ownedByMe reports true: file owners are not checked here.
func ownedByMe(fi fs.FileInfo) bool { return true }

// changeableByOthers reports false: file owners are not checked here.
func changeableByOthers(p string) (string, bool) { return "", false }
