package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentgraph/agentgraph/codeindex"
)

// lockFile is the file, in the index folder, that coderag processes lock
// while they open or update the index: codeindex.Open, given a folder
// whose first indexing has not finished, starts it afresh and so deletes
// what another process is writing there; the lock makes a second
// `coderag index`, `ask` or `search` wait for the first instead.
const lockFile = "coderag.lock"

// lockPoll is how often a process waiting for the lock tries again.
const lockPoll = 50 * time.Millisecond

// lockIndex locks the index folder of dir (creating it), exclusively for
// writers and shared for readers, waiting while another process holds it
// and saying so once on w (if not nil). The wait ends with ctx. It returns the unlock
// function. Where the platform has no file locks (see tryLock), it does
// not wait.
func lockIndex(ctx context.Context, dir string, exclusive bool, w io.Writer) (unlock func(), err error) {
	folder := filepath.Join(dir, codeindex.DefaultDir)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return nil, fmt.Errorf("lock the index: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(folder, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the index: %w", err)
	}
	told := false
	for {
		err := tryLock(f, exclusive)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, fmt.Errorf("lock the index: %w", err)
		}
		if !told && w != nil {
			fmt.Fprintf(w, "coderag: waiting for another coderag process to finish indexing %s\n", dir)
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock the index: %w", context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// errLocked is returned by tryLock when another process holds the lock.
var errLocked = errors.New("the index is locked by another process")
