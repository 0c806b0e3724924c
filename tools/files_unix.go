//go:build unix

package tools

import (
	"io/fs"
	"os"
	"path/filepath"
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

// changeableByOthers returns the first of the directory p and its
// ancestors that a user other than this one (or root) could change: one
// owned by another user, or one anyone may write without the sticky bit
// (as /tmp has). A cache under it could be swapped for one of theirs.
func changeableByOthers(p string) (string, bool) {
	for d := p; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return d, true
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
			return d, true
		}
		if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}
