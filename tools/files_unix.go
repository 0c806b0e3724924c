//go:build unix

package tools

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// openNonblock opens FIFOs and devices without blocking, so that the tools
// can see what they opened and refuse it.
const openNonblock = syscall.O_NONBLOCK

// linkCount returns the number of hard links of the file fi describes.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// openedPath returns the current absolute path of the open file f, where
// the system tells it (Linux's /proc/self/fd).
func openedPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return "", false
	}
	return p, true
}

// ownedByMe reports whether the file fi describes belongs to this
// process's effective user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
