package tools

import (
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow opens the directory or regular file at p as a path
// descriptor (O_PATH) without following a symlink, for bwrap's
// --ro-bind-fd; it returns nil for anything else or an error.
func openNoFollow(p string) *os.File {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || (st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFREG) {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), p)
}
