//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the flock(2) lock of f, exclusive or shared, without
// waiting: errLocked when another open file description holds it.
func tryLock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}
