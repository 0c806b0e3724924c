package coder

import (
	"os"
	"syscall"
)

// changeTime returns the file's change time (Unix nanoseconds) and inode.
func changeTime(fi os.FileInfo) (ctime int64, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Ctim.Nano(), st.Ino, true
}
