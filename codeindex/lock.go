package codeindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// lockFile is the file of the index folder that an Index holds locked
// from before Open looks at the folder until Close: a second Open of a
// folder whose first Update has not finished would otherwise start it
// afresh and delete what the first is writing.
const lockFile = "index.lock"

// errLocked is returned by tryLock when another open file holds the lock.
var errLocked = errors.New("locked")

// lockFolder takes the exclusive lock of the index folder dir, trying
// until lockWait has passed, and returns the open lock file; closing it
// releases the lock. It fails with a *LockedError when another Index, in
// this process or another, holds the folder. Where the platform has no
// file locks (see tryLock) it takes none.
func lockFolder(ctx context.Context, dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("codeindex: open: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := tryLock(f)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, fmt.Errorf("codeindex: open: lock %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, &LockedError{Dir: dir, Wait: lockWait}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("codeindex: open: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
