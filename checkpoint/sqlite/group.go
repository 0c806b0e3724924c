package sqlite

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// Group commit: the writes of concurrent callers — Put, PutWrites,
// DeleteThread and the lease operations — share write transactions, so that many threads checkpointing on one file pay one
// commit (one fsync with synchronous FULL) per batch instead of one per
// write.
//
// It is a leader/follower scheme, without a goroutine of its own. A write
// that arrives while no transaction of the group is in flight is its own
// batch, committed at once on the caller's goroutine: a lone writer waits
// for nobody. A write that arrives while one is in flight queues. When the
// leader's transaction ends, it takes the queue (up to maxBatch writes, in
// arrival order) as the next batch and hands it to the goroutine of its
// first write, which commits it as the next leader. Each caller waits for
// its own write, so one thread's writes reach the queue in the order it
// makes them, and a batch keeps arrival order: per-thread order holds.
//
// In a batch of several writes each runs inside a SAVEPOINT: a write
// refused for what it is — a conflict, a version conflict, a fenced
// (stale) lease — is rolled back to its savepoint and gets its own error,
// and the others commit. The fence check stays in the write's transaction,
// as the write's first statement. Any other error of a write (the
// driver's: I/O, a damaged file) aborts the whole transaction; that write
// gets the error and the others are committed again in a new transaction
// without it.
//
// A caller whose context is done while its write is still queued is
// dropped (the write is never made) and gets the context's error; a write
// already taken into a batch is committed or refused with the batch,
// whatever its context, and its caller is told which.

// The statements around each write of a batch (prepared on the writer
// connection, as every statement of a write transaction is).
const (
	savepoint  = `SAVEPOINT w`
	rollbackTo = `ROLLBACK TO w`
	release    = `RELEASE w`
)

// maxBatch caps the writes of one transaction.
const maxBatch = 512

// errSaverClosed is the error of a write queued or made after Close.
var errSaverClosed = errors.New("checkpoint/sqlite: saver closed")

// groupWrite is one Put or PutWrites waiting in, or taken by, the group.
type groupWrite struct {
	ctx context.Context // the caller's: its lease fences the write
	fn  func(ctx context.Context, tx sqlitedb.Tx) error
	err error
	// done receives once: when the write's batch ended (err is set), or
	// when its goroutine is to lead batch.
	done  chan struct{}
	batch []*groupWrite // set for the next leader
}

// group batches writes; the zero group is ready.
type group struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when busy turns false
	queue  []*groupWrite
	busy   bool // a leader's transaction is in flight
	closed bool
}

// do makes the write fn, in a transaction of db shared with the writes
// queued beside it, and returns fn's error, or the transaction's.
func (g *group) do(ctx context.Context, db *sqlitedb.DB, fn func(context.Context, sqlitedb.Tx) error) error {
	w := &groupWrite{ctx: ctx, fn: fn}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errSaverClosed
	}
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		g.lead(db, []*groupWrite{w})
		return w.err
	}
	w.done = make(chan struct{}, 1)
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, w); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return ctx.Err() // never written
		}
		g.mu.Unlock()
		<-w.done // taken: its batch decides
	}
	if w.batch != nil {
		g.lead(db, w.batch)
	}
	return w.err
}

// lead commits batch, then hands the next batch to its first write's
// goroutine, or marks the group idle.
func (g *group) lead(db *sqlitedb.DB, batch []*groupWrite) {
	commit(db, batch)
	for _, w := range batch[1:] {
		w.done <- struct{}{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := g.take()
	if len(next) == 0 {
		g.busy = false
		if g.idle.L != nil {
			g.idle.Broadcast()
		}
		return
	}
	next[0].batch = next
	next[0].done <- struct{}{}
}

// take removes the next batch from the queue; writes whose context is
// done are dropped with its error. g.mu is held.
func (g *group) take() []*groupWrite {
	var batch []*groupWrite
	n := 0
	for _, w := range g.queue {
		if len(batch) == maxBatch {
			break
		}
		n++
		if err := w.ctx.Err(); err != nil {
			w.err = err
			w.done <- struct{}{}
			continue
		}
		batch = append(batch, w)
	}
	g.queue = slices.Delete(g.queue, 0, n)
	if len(g.queue) == 0 {
		g.queue = nil // do not keep a large array
	}
	return batch
}

// close fails the queued writes and waits for the transaction in flight
// and the batches already taken. Writes made after it fail.
func (g *group) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, w := range g.queue {
		w.err = errSaverClosed
		w.done <- struct{}{}
	}
	g.queue = nil
	if g.idle.L == nil {
		g.idle.L = &g.mu
	}
	for g.busy {
		g.idle.Wait()
	}
}

// commit makes the writes of batch in one transaction, setting each
// write's err. A lone write runs as it would without the group: in a
// transaction of its own, under its caller's context.
func commit(db *sqlitedb.DB, batch []*groupWrite) {
	if len(batch) == 1 {
		w := batch[0]
		w.err = db.Write(w.ctx, func(tx sqlitedb.Tx) error { return w.fn(w.ctx, tx) })
		return
	}
	// The batch's statements run under a context no caller can cancel:
	// one caller giving up must not undo the others' writes.
	ctx := context.WithoutCancel(batch[0].ctx)
	batch = slices.Clone(batch) // the leader's is the list to tell
	for len(batch) > 0 {
		var failed *writeFailure
		err := db.Write(ctx, func(tx sqlitedb.Tx) error {
			for _, w := range batch {
				w.err = nil
				if _, err := tx.Exec(savepoint); err != nil {
					return err
				}
				err := w.fn(w.ctx, tx)
				if err != nil && refusal(err) {
					w.err = err
					if _, err := tx.Exec(rollbackTo); err != nil {
						return err
					}
				} else if err != nil {
					failed = &writeFailure{w: w, err: err}
					return failed
				}
				if _, err := tx.Exec(release); err != nil {
					return err
				}
			}
			return nil
		})
		if f, ok := errors.AsType[*writeFailure](err); ok && f == failed {
			// One write failed: it alone gets the error (as the
			// database reported it: a damaged file's is a
			// *sqlitedb.CorruptError); the others go again.
			f.w.err = unwrapFailure(err)
			batch = slices.DeleteFunc(batch, func(w *groupWrite) bool { return w == f.w })
			continue
		}
		if err != nil {
			for _, w := range batch {
				if w.err == nil || !refusal(w.err) {
					w.err = err
				}
			}
		}
		return
	}
}

// refusal reports whether err refuses a write for what it is, not for a
// failure of the database: the write is rolled back to its savepoint and
// the rest of its batch goes on. (Every refusal is found before its write
// changes anything but a version conflict; the savepoint makes each one
// safe whatever the order.)
func refusal(err error) bool {
	if _, ok := errors.AsType[*checkpoint.ConflictError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*checkpoint.VersionConflictError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*checkpoint.LeaseHeldError](err); ok {
		return true
	}
	// A fenced write (*checkpoint.FencedError) or a renewal of a lease
	// that is no longer current.
	return errors.Is(err, checkpoint.ErrLeaseLost)
}

// writeFailure is the error of one write that aborts its batch's
// transaction.
type writeFailure struct {
	w   *groupWrite
	err error
}

func (f *writeFailure) Error() string { return f.err.Error() }
func (f *writeFailure) Unwrap() error { return f.err }

// unwrapFailure returns err with the *writeFailure inside it replaced by
// the write's own error: err itself when it is the failure, or the
// *sqlitedb.CorruptError that wraps it.
func unwrapFailure(err error) error {
	switch e := err.(type) {
	case *writeFailure:
		return e.err
	case *sqlitedb.CorruptError:
		if f, ok := e.Err.(*writeFailure); ok {
			e.Err = f.err
		}
		return e
	}
	return err
}
