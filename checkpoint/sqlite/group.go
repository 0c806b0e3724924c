package sqlite

import (
	"context"
	"errors"
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// Group commit: the writes of concurrent callers — Put, PutWrites,
// PutBatch, DeleteThread and the lease operations — share write
// transactions (the scheme of package groupcommit), so that many threads
// checkpointing on one file pay one commit (one fsync with synchronous
// FULL) per batch instead of one per write. A write that finds no
// transaction of the group in flight commits at once, alone.
//
// The Puts of a batch are made set-based: a statement per table for many
// Puts at once rather than a few statements per Put (set.go).
//
// In a batch of several writes, a write refused for what it is — a
// conflict, a version conflict, a fenced (stale) lease — before it changed
// anything (its function returns the refusal as *unchanged) gets its own
// error, and the others commit. The fence check stays in the write's
// transaction, as the write's first statement. Any other error of a write
// — a refusal after it changed rows, or the driver's: I/O, a damaged file
// — aborts the whole transaction; that write gets the error and the others
// are committed again in a new transaction without it. No write pays for
// a savepoint.

// maxBatch caps the writes of one transaction.
const maxBatch = 512

// errSaverClosed is the error of a write queued or made after Close.
var errSaverClosed = errors.New("checkpoint/sqlite: saver closed")

// writeOp is a write of the group: a Put (put), which a batch may make
// together with other Puts, set-based (set.go), or any other write (do).
type writeOp struct {
	// do makes a write other than a Put, statement by statement, in tx.
	do func(ctx context.Context, tx sqlitedb.Tx) error
	// put is the Put to make, if the write is one.
	put *putRow
}

// none reports whether op writes nothing.
func (op writeOp) none() bool { return op.do == nil && op.put == nil }

// make makes op alone, statement by statement, in tx.
func (s *Saver) make(ctx context.Context, tx sqlitedb.Tx, op writeOp) error {
	if op.put != nil {
		return s.storeCheckpoint(ctx, tx, op.put)
	}
	return op.do(ctx, tx)
}

// groupWrite is one write waiting in, or taken by, the group.
type groupWrite = groupcommit.Write[writeOp]

// initGroup sets up the group commit of s's writes to its file.
func (s *Saver) initGroup() {
	s.group.Commit = s.commit
	s.group.MaxBatch = maxBatch
	s.group.Closed = errSaverClosed
}

// commit makes the writes of batch in one transaction, setting each
// write's err. A lone write runs as it would without the group: in a
// transaction of its own, under its caller's context. In a batch, the
// Puts between two other writes are made set-based (see putSet); when a
// set-based statement fails, the batch is made again write by write, so
// that the error is its write's alone.
func (s *Saver) commit(batch []*groupWrite) {
	if len(batch) == 1 {
		w := batch[0]
		w.Err = s.db.Write(w.Ctx, func(tx sqlitedb.Tx) error { return bare(s.make(w.Ctx, tx, w.Op)) })
		return
	}
	// The batch's statements run under a context no caller can cancel:
	// one caller giving up must not undo the others' writes.
	ctx := context.WithoutCancel(batch[0].Ctx)
	batch = slices.Clone(batch) // the leader's is the list to tell
	sets := !s.noSets && s.prepareSets(ctx, batch)
	for len(batch) > 0 {
		var failed *writeFailure
		err := s.db.Write(ctx, func(tx sqlitedb.Tx) error {
			for i := 0; i < len(batch); {
				n := 0
				if sets {
					n = putRun(batch[i:])
				}
				if n > 1 {
					run := batch[i : i+n]
					for _, w := range run {
						w.Err = nil
					}
					if err := s.putSet(tx, run); err != nil {
						failed, _ = err.(*writeFailure)
						return err
					}
					i += n
					continue
				}
				w := batch[i]
				i++
				w.Err = nil
				err := s.make(w.Ctx, tx, w.Op)
				if u, ok := err.(*unchanged); ok && refusal(u.err) {
					w.Err = u.err
				} else if err != nil {
					failed = &writeFailure{w: w, err: bare(err)}
					return failed
				}
			}
			return nil
		})
		if f, ok := errors.AsType[*writeFailure](err); ok && f == failed {
			// One write failed: it alone gets the error (as the
			// database reported it: a damaged file's is a
			// *sqlitedb.CorruptError); the others go again.
			f.w.Err = unwrapFailure(err)
			batch = slices.DeleteFunc(batch, func(w *groupWrite) bool { return w == f.w })
			continue
		}
		if _, ok := errors.AsType[*setFailure](err); ok && sets {
			// A set-based statement failed: whose write it was, the
			// writes made one by one tell.
			sets = false
			continue
		}
		if err != nil {
			for _, w := range batch {
				if w.Err == nil || !refusal(w.Err) {
					w.Err = err
				}
			}
		}
		return
	}
}

// refusal reports whether err refuses a write for what it is, not for a
// failure of the database. A refusal made before its write changed
// anything (*unchanged) leaves the rest of its batch going on; one made
// after a change (a version conflict) aborts the batch like any other
// error, and the batch is committed again without it.
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

// unchanged is the refusal of a write whose function changed nothing in
// its transaction before it refused it: its batch needs no savepoint to
// undo it. Only a write's own function returns it, and only before its
// first change; a function that makes several writes (PutBatch) returns
// what its parts refuse as a plain error (bare).
type unchanged struct{ err error }

func (u *unchanged) Error() string { return u.err.Error() }
func (u *unchanged) Unwrap() error { return u.err }

// bare returns the error an *unchanged carries, or err.
func bare(err error) error {
	if u, ok := err.(*unchanged); ok {
		return u.err
	}
	return err
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
