// Package groupcommittest drives the group commit of a saver (package
// groupcommit) from the saver's tests: a write queued behind the batch in
// flight ([Enqueue]), and writes committed as one batch ([InOneBatch]).
// How a test holds a batch in flight is the saver's own (an open
// transaction, a statement waiting for a lock); what follows is the same
// for every saver.
package groupcommittest

import (
	"runtime"
	"testing"
	"time"
)

// A Queue is a saver's group-commit queue, as its tests see it.
type Queue interface {
	// QueuedWrites returns how many writes wait in the queue.
	QueuedWrites() int
}

// Enqueue starts write on its own goroutine and returns once it waits in
// q (it is the n-th there), so that writes enqueued one after another keep
// their order in the batch; its error arrives on the channel.
func Enqueue(t testing.TB, q Queue, n int, write func() error) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- write() }()
	for q.QueuedWrites() < n {
		select {
		case err := <-errc:
			t.Fatalf("write %d returned before it was queued: %v", n, err)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		default:
			runtime.Gosched()
			time.Sleep(100 * time.Microsecond)
		}
	}
	return errc
}

// InOneBatch enqueues writes, in order, behind a batch the caller holds in
// flight, then calls end, which lets the held batch commit, so that the
// writes are committed as the next batch; it returns each write's error.
func InOneBatch(t testing.TB, q Queue, end func(), writes ...func() error) []error {
	t.Helper()
	errcs := make([]<-chan error, len(writes))
	for i, w := range writes {
		errcs[i] = Enqueue(t, q, i+1, w)
	}
	end()
	errs := make([]error, len(writes))
	for i, errc := range errcs {
		errs[i] = <-errc
	}
	return errs
}
