//go:build unix

package codeindex

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the exclusive flock(2) lock of f without waiting:
// errLocked when another open file description holds it.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}
