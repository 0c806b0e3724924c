package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// Set-based Puts. A batch of the group (group.go) used to run each Put's
// own statements: its checkpoint's upsert and a blob insert per changed
// channel, each paying database/sql's, the driver's and SQLite's cost of a
// statement. The Puts of a batch between two other writes are now made
// together, with three kinds of multi-row statement over up to
// maxSetRows Puts each:
//
//  1. checkRows: the checks of upsertCheckpoint — the fence, then the
//     parent — for every row, returning the rows they refuse (none,
//     usually). It is the first statement of each of its writes, as the
//     upsert was, and it only reads.
//  2. insertCheckpoints: the rows of the Puts not refused, without checks.
//     (The checks cannot be part of a multi-row INSERT: one that reads its
//     own table has SQLite evaluate every row before inserting any, into a
//     temporary table.)
//  3. insertBlobs: their changed channels' blobs; a value that may be a
//     delta reads its channel's path first, as storeValue does.
//
// A run holds a thread and namespace once at most, so that no row of it
// is checked against, or reads, another of the same run (putRun): the
// next Put of the same thread starts a new run. Each write keeps its own
// outcome:
//
//   - A Put the checks refuse changed nothing: the same reads as a
//     refused upsert's (refusedPut) give its error, and the others go on.
//   - A blob stored already under its version with another value is a
//     version conflict after the Put's row was written: the transaction
//     is aborted and the batch made again without that Put, as before.
//   - Any other error of a set-based statement cannot be told by write:
//     the batch is made again write by write (setFailure), which gives the
//     error to its write alone.

// maxSetRows caps the rows of one set-based statement. A run of n Puts is
// sent in chunks of n's binary digits (128, 64, …, 1 rows), so that each
// Saver prepares eight statements of each kind at most.
const maxSetRows = 128

// setSizes is how many statement sizes there are: 1, 2, 4, …, maxSetRows.
var setSizes = bits.Len(maxSetRows)

// putRow is a Put encoded for its write: what storeCheckpoint and a
// set-based batch store.
type putRow struct {
	cp       *checkpoint.Checkpoint
	created  sql.NullInt64
	meta     string
	versions string
	changed  []putValue // the channels with a value, by name
}

// appendRow appends to args the nine columns of p's checkpoint row, in
// the order of insertCheckpoints (and of upsertCheckpoint's first nine
// parameters).
func (p *putRow) appendRow(args []any) []any {
	cp := p.cp
	return append(args, cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, p.created, p.meta, p.versions, sqlsaver.NotNull(cp.Frontier), cp.Shape)
}

// putValue is a channel of a Put with its value, and the value whole
// (deltas.Whole), hashed by the Put's caller.
type putValue struct {
	checkpoint.Channel
	whole deltas.Blob
}

// checkRows returns, of rows of (index, thread, ns, id, parent, fork,
// lease token or NULL), the index of each row upsertCheckpoint would not
// write: its token is not its thread's current lease token, or it is not
// a fork and its parent is not the latest other checkpoint of its thread
// and namespace.
func checkRows(n int) string {
	return `SELECT v.column1 FROM (VALUES ` + placeholders(n, 7) + `) AS v
		WHERE NOT ((v.column7 IS NULL OR EXISTS (SELECT 1 FROM leases WHERE thread_id = v.column2 AND token = v.column7 AND token <> ''))
			AND (v.column6 OR v.column5 = coalesce((SELECT id FROM checkpoints
				WHERE thread_id = v.column2 AND ns = v.column3 AND id <> v.column4 ORDER BY id DESC LIMIT 1), '')))`
}

// insertCheckpoints inserts n checkpoint rows, as upsertCheckpoint does
// once its checks passed. It ignores a row it cannot insert — one whose
// checkpoint is stored already (upsertCheckpoint's update), or with a NULL
// — which the caller tells by the rows inserted. (OR IGNORE spares SQLite
// the statement journal that a multi-row statement that may abort keeps:
// a copy of each page before the statement's first change to it.)
func insertCheckpoints(n int) string {
	return `INSERT OR IGNORE INTO checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
		VALUES ` + placeholders(n, 9)
}

// insertBlobs inserts n blobs, as insertBlob does, ignoring one stored
// already or with a NULL (see insertCheckpoints).
func insertBlobs(n int) string {
	return `INSERT OR IGNORE INTO blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
		VALUES ` + placeholders(n, 9)
}

// setQueries are the set-based statements, by kind, then by size: the
// statement of 1<<i rows at index i.
var setQueries = func() [3][]string {
	var q [3][]string
	for i := range setSizes {
		q[0] = append(q[0], checkRows(1<<i))
		q[1] = append(q[1], insertCheckpoints(1<<i))
		q[2] = append(q[2], insertBlobs(1<<i))
	}
	return q
}()

// placeholders returns n rows of cols anonymous parameters each:
// "(?, ?), (?, ?)".
func placeholders(n, cols int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}

// chunks calls f with the bounds of the chunks that n rows are sent in,
// largest first, and the index in setQueries of their size; it stops at
// f's first error.
func chunks(n int, f func(lo, hi, size int) error) error {
	lo := 0
	for n-lo > 0 {
		size := min(bits.Len(uint(n-lo))-1, setSizes-1)
		hi := lo + 1<<size
		if err := f(lo, hi, size); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// prepareSets prepares the set-based statements that batch may need and
// reports whether it did: if not (an error), the batch is made write by
// write. It runs before the batch's transaction, which holds the writer
// connection.
func (s *Saver) prepareSets(ctx context.Context, batch []*groupWrite) bool {
	puts, blobs := 0, 0
	for _, w := range batch {
		if w.Op.put != nil {
			puts++
			blobs += len(w.Op.put.changed)
		}
	}
	if puts < 2 {
		return true // no run
	}
	for kind, q := range setQueries {
		n := puts
		if kind == 2 {
			n = blobs
		}
		for i := range min(bits.Len(uint(n)), setSizes) {
			if err := s.db.PrepareWrite(ctx, q[i]); err != nil {
				return false
			}
		}
	}
	return true
}

// maxSetBytes caps the bytes a set-based run binds (putBytes): the
// driver holds a copy of every value bound to a statement until the
// statement ends, so a run of 128 Puts of large values would hold them
// all at once where the Puts made one by one hold one at a time.
const maxSetBytes = 4 << 20

// putRun returns how many writes at the start of batch can be made in one
// set-based run: Puts, each of another thread and namespace than the
// others, none naming a channel twice (its second value is stored as a
// delta of its first, which a run cannot do: it encodes every value
// before it stores any), binding maxSetBytes at most together. A result
// below 2 is no run.
func putRun(batch []*groupWrite) int {
	if len(batch) < 2 || batch[0].Op.put == nil || batch[1].Op.put == nil {
		return min(len(batch), 1)
	}
	type key struct{ thread, ns string }
	seen := make(map[key]struct{})
	size := 0
	for i, w := range batch {
		p := w.Op.put
		if p == nil || repeatsChannel(p) {
			return i
		}
		k := key{p.cp.ThreadID, p.cp.Namespace}
		if _, ok := seen[k]; ok {
			return i
		}
		if size += putBytes(p); i > 0 && size > maxSetBytes {
			return i
		}
		seen[k] = struct{}{}
	}
	return len(batch)
}

// repeatsChannel reports whether p names a channel twice.
func repeatsChannel(p *putRow) bool {
	for i := 1; i < len(p.changed); i++ {
		if p.changed[i].Name == p.changed[i-1].Name { // by name
			return true
		}
	}
	return false
}

// putBytes is about what a set-based run binds for p: its checkpoint
// row's variable columns and its values whole (a delta binds less).
func putBytes(p *putRow) int {
	n := len(p.meta) + len(p.versions) + len(p.cp.Frontier)
	for _, v := range p.changed {
		n += len(v.Value)
	}
	return n
}

// setFailure is the error of a set-based statement, which cannot be told
// by write.
type setFailure struct{ err error }

func (f *setFailure) Error() string { return "set-based statement: " + f.err.Error() }
func (f *setFailure) Unwrap() error { return f.err }

// leaseToken returns the lease token that fences a write to thread made
// with ctx (see checkFence), or NULL.
func leaseToken(ctx context.Context, thread string) sql.NullString {
	if lease, ok := checkpoint.LeaseFrom(ctx, thread); ok {
		return sql.NullString{String: lease.Token, Valid: true}
	}
	return sql.NullString{}
}

// putSet makes the Puts of run, two or more, each of another thread and
// namespace (putRun), with set-based statements, setting the Err of each
// Put refused. It returns a *writeFailure for a Put whose failure aborts
// the transaction, a *setFailure for a statement that failed.
func (s *Saver) putSet(tx sqlitedb.Tx, run []*groupWrite) error {
	if s.setRun != nil {
		s.setRun(len(run))
	}
	// 1. The checks, first for every write.
	refused := make([]bool, len(run))
	nRefused := 0
	err := chunks(len(run), func(lo, hi, size int) error {
		args := make([]any, 0, 7*(hi-lo))
		for i, w := range run[lo:hi] {
			cp := w.Op.put.cp
			args = append(args, int64(lo+i), cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, cp.Fork, leaseToken(w.Ctx, cp.ThreadID))
		}
		rows, err := tx.Query(setQueries[0][size], args...)
		if err != nil {
			return &setFailure{err}
		}
		defer rows.Close()
		for rows.Next() {
			var i int
			if err := rows.Scan(&i); err != nil {
				return &setFailure{err}
			}
			if i < 0 || i >= len(run) || refused[i] {
				return &setFailure{fmt.Errorf("check returned row %d of %d", i, len(run))}
			}
			refused[i] = true
			nRefused++
		}
		if err := rows.Err(); err != nil {
			return &setFailure{err}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if nRefused > 0 {
		kept := make([]*groupWrite, 0, len(run)-nRefused)
		for i, w := range run {
			if !refused[i] {
				kept = append(kept, w)
				continue
			}
			if err := refusedPut(w.Ctx, tx, w.Op.put.cp); refusal(err) {
				w.Err = err
			} else {
				return &writeFailure{w: w, err: err}
			}
		}
		run = kept
	}

	// 2. The checkpoint rows of the Puts the checks let through.
	err = chunks(len(run), func(lo, hi, size int) error {
		args := make([]any, 0, 9*(hi-lo))
		for _, w := range run[lo:hi] {
			args = w.Op.put.appendRow(args)
		}
		res, err := tx.Exec(setQueries[1][size], args...)
		if err != nil {
			return &setFailure{err}
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(hi-lo) {
			// A checkpoint stored already (put again), or an error: the
			// statements make or tell it.
			return &setFailure{fmt.Errorf("%d checkpoint rows of %d inserted (%v)", n, hi-lo, err)}
		}
		return nil
	})
	if err != nil {
		return err
	}

	// 3. Their blobs.
	type blobRow struct {
		w *groupWrite
		c checkpoint.Channel
		b deltas.Blob
	}
	var blobs []blobRow
	for _, w := range run {
		cp := w.Op.put.cp
		for _, c := range w.Op.put.changed {
			b, stored, err := s.encodeValue(tx, cp, c.Channel, c.whole)
			if err != nil {
				return &writeFailure{w: w, err: fmt.Errorf("channel %q: %w", c.Name, err)}
			}
			if !stored {
				blobs = append(blobs, blobRow{w, c.Channel, b})
			}
		}
	}
	var inserted int64
	err = chunks(len(blobs), func(lo, hi, size int) error {
		args := make([]any, 0, 9*(hi-lo))
		for _, r := range blobs[lo:hi] {
			args = appendBlob(args, r.w.Op.put.cp, r.c, r.b)
		}
		res, err := tx.Exec(setQueries[2][size], args...)
		if err != nil {
			return &setFailure{err}
		}
		n, err := res.RowsAffected()
		if err != nil {
			return &setFailure{err}
		}
		inserted += n
		return nil
	})
	if err != nil {
		return err
	}
	if inserted == int64(len(blobs)) {
		return nil
	}
	// Some versions were stored already: each keeps its first value, and
	// another value under it is its Put's version conflict. A blob not
	// stored at all was ignored for something else, which the statements
	// tell.
	for _, r := range blobs {
		cp := r.w.Op.put.cp
		stored, err := scanMeta(tx.QueryRow(selectLeaf, cp.ThreadID, cp.Namespace, r.c.Name, r.c.Version))
		if errors.Is(err, sql.ErrNoRows) || err == nil && stored.Version != r.c.Version {
			return &setFailure{fmt.Errorf("thread %q channel %q version %d: blob not stored", cp.ThreadID, r.c.Name, r.c.Version)}
		}
		if err == nil {
			err = keepFirst(cp, r.c, stored, r.b.Hash)
		}
		if err != nil {
			return &writeFailure{w: r.w, err: fmt.Errorf("channel %q: %w", r.c.Name, err)}
		}
	}
	return nil
}
