package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
	"github.com/agentgraph/agentgraph/internal/sqlitedb"
)

// Get implements [checkpoint.Saver].
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: get: %w", err)
	}
	t, err := s.getTuple(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: get thread %q namespace %q id %q: %w", ref.ThreadID, ref.Namespace, ref.ID, err)
	}
	return t, nil
}

const (
	selectCheckpoint = `SELECT thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape FROM checkpoints`
	selectLatest     = selectCheckpoint + ` WHERE thread_id = ? AND ns = ? ORDER BY id DESC LIMIT 1`
	selectByID       = selectCheckpoint + ` WHERE thread_id = ? AND ns = ? AND id = ?`
)

// getTuple reads a checkpoint with its values and pending writes in one
// read transaction. Stored data that cannot be read back, the database
// file's damage included, gives a [*checkpoint.CorruptError].
func (s *Saver) getTuple(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	var t *checkpoint.Tuple
	err := s.db.Read(ctx, func(tx sqlitedb.Tx) error {
		var err error
		t, err = readTuple(tx, ref)
		return err
	})
	if err != nil {
		if t != nil {
			ref = checkpoint.Ref{ThreadID: t.ThreadID, Namespace: t.Namespace, ID: t.ID}
		}
		return nil, corruptFile(ref, err)
	}
	return t, nil
}

// readTuple reads the checkpoint ref names. After its row is read, it
// returns the checkpoint even with an error, so the error can name it.
func readTuple(tx sqlitedb.Tx, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	var rows *sql.Rows
	var err error
	if ref.ID == "" {
		rows, err = tx.Query(selectLatest, ref.ThreadID, ref.Namespace)
	} else {
		rows, err = tx.Query(selectByID, ref.ThreadID, ref.Namespace, ref.ID)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, checkpoint.ErrNotFound
	}
	t, err := scanCheckpoint(ref, rows)
	if err != nil {
		return t, err
	}
	if err := rows.Close(); err != nil {
		return t, err
	}
	if err := loadValues(tx, t); err != nil {
		return t, err
	}
	if err := loadWrites(tx, t); err != nil {
		return t, err
	}
	return t, nil
}

// scanCheckpoint reads the checkpoint row of ref that rows is at. A row
// that does not convert to a checkpoint (SQLite does not enforce column
// types) gives a [*checkpoint.CorruptError].
func scanCheckpoint(ref checkpoint.Ref, rows *sql.Rows) (*checkpoint.Tuple, error) {
	t := &checkpoint.Tuple{Checkpoint: checkpoint.Checkpoint{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: ref.ID}}
	var created sql.NullInt64
	var meta, versions []byte
	if err := rows.Scan(&t.ThreadID, &t.Namespace, &t.ID, &t.ParentID, &created, &meta, &versions, &t.Frontier, &t.Shape); err != nil {
		return t, scanError(t, "checkpoint", err)
	}
	if created.Valid {
		t.CreatedAt = time.Unix(0, created.Int64).UTC()
	}
	if err := sqlsaver.DecodeColumns(t, meta, versions); err != nil {
		return t, err
	}
	return t, nil
}

// selectPaths returns, for every channel of the JSON object ?3 (channel →
// version), the blob of that version and the blobs its chain of delta
// bases leads to. A base is always an older version: the chain stops at a
// blob whose base is not, so that a damaged base column cannot make the
// query loop (the path then does not decode).
const selectPaths = `
WITH RECURSIVE path(channel, version, base, depth, size, hash, data) AS (
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash, b.data
	FROM json_each(?3) AS w CROSS JOIN blobs AS b
	ON b.thread_id = ?1 AND b.ns = ?2 AND b.channel = w.key AND b.version = w.value
	UNION ALL
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash, b.data
	FROM path AS p CROSS JOIN blobs AS b
	ON b.thread_id = ?1 AND b.ns = ?2 AND b.channel = p.channel AND b.version = p.base AND p.base < p.version
)
SELECT channel, version, base, depth, size, hash, data FROM path`

func loadValues(tx sqlitedb.Tx, t *checkpoint.Tuple) error {
	if len(t.Channels) == 0 {
		return nil
	}
	versions, err := json.Marshal(sqlsaver.VersionMap(t.Channels))
	if err != nil {
		return err
	}
	paths, err := queryPaths(tx, t, selectPaths, t.ThreadID, t.Namespace, string(versions))
	if err != nil {
		return err
	}
	return sqlsaver.SetValues(t, paths)
}

// queryPaths reads the paths of blobs of t's channels; a row that does not
// convert to a blob gives a [*checkpoint.CorruptError] naming t.
func queryPaths(tx sqlitedb.Tx, t *checkpoint.Tuple, query string, args ...any) (map[string][]deltas.Blob, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	paths := make(map[string][]deltas.Blob)
	for rows.Next() {
		var ch string
		var b deltas.Blob
		var base sql.NullInt64
		var hash []byte
		if err := rows.Scan(&ch, &b.Version, &base, &b.Depth, &b.Size, &hash, &b.Data); err != nil {
			return nil, scanError(t, "blob", err)
		}
		if len(hash) != len(b.Hash) {
			return nil, sqlsaver.Corrupt(t, fmt.Errorf("channel %q version %d: hash of %d bytes", ch, b.Version, len(hash)))
		}
		copy(b.Hash[:], hash)
		b.Delta, b.Base = base.Valid, base.Int64
		paths[ch] = append(paths[ch], b)
	}
	return paths, rows.Err()
}

const selectWrites = `SELECT task_id, task_path, idx, channel, value FROM writes
	WHERE thread_id = ? AND ns = ? AND checkpoint_id = ? ORDER BY task_id, idx`

// loadWrites reads t's pending writes; a row that does not convert to a
// write gives a [*checkpoint.CorruptError] naming t.
func loadWrites(tx sqlitedb.Tx, t *checkpoint.Tuple) error {
	rows, err := tx.Query(selectWrites, t.ThreadID, t.Namespace, t.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var w checkpoint.Write
		if err := rows.Scan(&w.TaskID, &w.TaskPath, &w.Idx, &w.Channel, &w.Value); err != nil {
			return scanError(t, "pending write", err)
		}
		t.PendingWrites = append(t.PendingWrites, w)
	}
	return rows.Err()
}

// selectLeaf returns the highest stored version of a channel not above
// the given one, with the metadata deltas.Encode needs.
const selectLeaf = `SELECT version, base, depth, size, hash FROM blobs
	WHERE thread_id = ? AND ns = ? AND channel = ? AND version <= ? ORDER BY version DESC LIMIT 1`

// selectMetaPath returns the metadata of the blob of a version and of the
// blobs its chain of delta bases leads to.
const selectMetaPath = `
WITH RECURSIVE path(version, base, depth, size, hash) AS (
	SELECT version, base, depth, size, hash FROM blobs
	WHERE thread_id = ?1 AND ns = ?2 AND channel = ?3 AND version = ?4
	UNION ALL
	SELECT b.version, b.base, b.depth, b.size, b.hash
	FROM path AS p CROSS JOIN blobs AS b
	ON b.thread_id = ?1 AND b.ns = ?2 AND b.channel = ?3 AND b.version = p.base AND p.base < p.version
)
SELECT version, base, depth, size, hash FROM path`

// prevPath returns what deltas.Encode needs to store version v of a
// channel: the metadata of the highest stored version below v and, when
// the next delta is taken against an older version, of its whole path. It
// reports whether version v itself is already stored; then path holds only
// the metadata of version v.
func (s *Saver) prevPath(tx sqlitedb.Tx, thread, ns, channel string, v int64) (path []deltas.Blob, exists bool, err error) {
	leaf, err := scanMeta(tx.QueryRow(selectLeaf, thread, ns, channel, v))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if leaf.Version == v {
		return []deltas.Blob{leaf}, true, nil
	}
	if deltas.BaseDepth(leaf.Depth, s.fanout) == leaf.Depth {
		return []deltas.Blob{leaf}, false, nil
	}
	rows, err := tx.Query(selectMetaPath, thread, ns, channel, leaf.Version)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		b, err := scanMeta(rows)
		if err != nil {
			return nil, false, err
		}
		path = append(path, b)
	}
	return path, false, rows.Err()
}

func scanMeta(row interface{ Scan(...any) error }) (deltas.Blob, error) {
	var b deltas.Blob
	var base sql.NullInt64
	var hash []byte
	if err := row.Scan(&b.Version, &base, &b.Depth, &b.Size, &hash); err != nil {
		return b, err
	}
	b.Delta, b.Base = base.Valid, base.Int64
	copy(b.Hash[:], hash)
	return b, nil
}

// selectLatestOther returns the ID of the latest checkpoint of a thread and
// namespace other than the given one.
const selectLatestOther = `SELECT id FROM checkpoints
	WHERE thread_id = ?1 AND ns = ?2 AND id <> ?3 ORDER BY id DESC LIMIT 1`

const (
	insertBlob = `INSERT INTO blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	// upsertCheckpoint writes a checkpoint row if the write's lease
	// token (?11; NULL for a write under no lease) is its thread's
	// current one, and it is a fork (?10) or its parent (?4) is the
	// latest other checkpoint of its thread and namespace ("" for none);
	// it writes nothing otherwise. The checks are part of the statement,
	// which is prepared, rather than queries of their own; the fence is
	// checked before anything of the write is.
	//
	// A failed check makes parent_id NULL, which its NOT NULL constraint
	// refuses, and OR IGNORE skips the row (ON CONFLICT only decides a
	// clash of the primary key). The obvious INSERT … SELECT … WHERE
	// checks would read the table it inserts into, for which SQLite
	// first copies the selected row into a temporary table: a fifth of
	// the statement's time. No other column can be NULL (Put passes
	// none), and a row skipped whose checks pass is an error
	// (parentConflict).
	upsertCheckpoint = `INSERT OR IGNORE INTO checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
		VALUES (?1, ?2, ?3,
			CASE WHEN (?11 IS NULL OR EXISTS (SELECT 1 FROM leases WHERE thread_id = ?1 AND token = ?11 AND token <> ''))
				AND (?10 OR ?4 = coalesce((` + selectLatestOther + `), '')) THEN ?4 END,
			?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (thread_id, ns, id) DO UPDATE SET
			parent_id = excluded.parent_id, created_at = excluded.created_at, metadata = excluded.metadata,
			versions = excluded.versions, frontier = excluded.frontier, shape = excluded.shape`
	insertWriteIgnore = `INSERT OR IGNORE INTO writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	insertWriteReplace = `INSERT OR REPLACE INTO writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
)

// Put implements [checkpoint.Saver]. The checkpoint row and the blobs of
// its changed channels are written in one transaction, which also checks
// that cp neither forks its thread silently nor stores another value under
// a stored version (see [checkpoint.Saver.Put]). Write transactions begin
// IMMEDIATE, taking the database's write lock, so no other connection or
// process writes between the checks and the writes: the checks are
// race-free.
//
// The Puts and PutWrites of concurrent callers share transactions (group
// commit): a write that arrives while another transaction commits waits
// for it and is committed with the others that arrived meanwhile, each
// checked and refused on its own; a write that finds none in flight
// commits at once.
func (s *Saver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: put: %w", err)
	}
	write, err := s.putWrite(cp)
	if err != nil {
		return err
	}
	if err := s.group.Do(ctx, write); err != nil {
		return fmt.Errorf("checkpoint/sqlite: put %s: %w", describePut(cp), err)
	}
	return nil
}

func describePut(cp *checkpoint.Checkpoint) string {
	return fmt.Sprintf("thread %q namespace %q id %q", cp.ThreadID, cp.Namespace, cp.ID)
}

func describeWrites(ref checkpoint.Ref) string {
	return fmt.Sprintf("writes thread %q namespace %q id %q", ref.ThreadID, ref.Namespace, ref.ID)
}

// putWrite checks and encodes cp, and returns the write that stores it in
// a write transaction.
func (s *Saver) putWrite(cp *checkpoint.Checkpoint) (writeOp, error) {
	if cp.ThreadID == "" || cp.ID == "" {
		return writeOp{}, errors.New("checkpoint/sqlite: put needs a thread ID and a checkpoint ID")
	}
	meta, versions, err := sqlsaver.EncodeColumns(cp)
	if err != nil {
		return writeOp{}, fmt.Errorf("checkpoint/sqlite: put %s: %w", cp.ID, err)
	}
	var created sql.NullInt64
	if !cp.CreatedAt.IsZero() {
		created = sql.NullInt64{Int64: cp.CreatedAt.UnixNano(), Valid: true}
	}
	// The values are hashed here, on the caller's goroutine, not by the
	// transaction, which a batch's writes share.
	changed := make([]putValue, 0, len(cp.Channels))
	for _, ch := range cp.Channels {
		if ch.Value != nil {
			changed = append(changed, putValue{ch, deltas.Whole(ch.Version, ch.Value)})
		}
	}
	slices.SortFunc(changed, func(a, b putValue) int { return strings.Compare(a.Name, b.Name) })
	return writeOp{put: &putRow{cp: cp, created: created, meta: string(meta), versions: string(versions), changed: changed}}, nil
}

// storeCheckpoint is putWrite's write, made alone.
func (s *Saver) storeCheckpoint(ctx context.Context, tx sqlitedb.Tx, p *putRow) error {
	cp := p.cp
	args := append(p.appendRow(make([]any, 0, 11)), cp.Fork, leaseToken(ctx, cp.ThreadID))
	res, err := tx.Exec(upsertCheckpoint, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return &unchanged{refusedPut(ctx, tx, cp)}
	}
	for _, c := range p.changed {
		if err := s.storeValue(tx, cp, c.Channel, c.whole); err != nil {
			return fmt.Errorf("channel %q: %w", c.Name, err)
		}
	}
	return nil
}

// refusedPut returns the error of cp, made with ctx, whose checks
// refused its checkpoint row (upsertCheckpoint's or checkRows'): the fence
// or its parent, which the same transaction's reads say.
func refusedPut(ctx context.Context, tx sqlitedb.Tx, cp *checkpoint.Checkpoint) error {
	if err := checkFence(ctx, tx, cp.ThreadID); err != nil {
		return err
	}
	return parentConflict(tx, cp)
}

// storeValue stores the value of channel c of cp: a delta of the
// channel's previous version when it appends to it, else whole. A value
// that is never a delta (deltas.AlwaysWhole) is inserted without reading
// the channel's path first. A version stored already keeps its first
// value, and another value under it is a version conflict; the path read
// finds it, or else the insert, which then does nothing.
func (s *Saver) storeValue(tx sqlitedb.Tx, cp *checkpoint.Checkpoint, c checkpoint.Channel, whole deltas.Blob) error {
	b, done, err := s.encodeValue(tx, cp, c, whole)
	if err != nil || done {
		return err
	}
	res, err := tx.Exec(insertBlob, appendBlob(make([]any, 0, 9), cp, c, b)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	stored, err := scanMeta(tx.QueryRow(selectLeaf, cp.ThreadID, cp.Namespace, c.Name, c.Version))
	if err != nil {
		return err
	}
	return keepFirst(cp, c, stored, b.Hash)
}

// appendBlob appends to args the columns of insertBlob (and of a row of
// insertBlobs) for blob b of channel c of cp.
func appendBlob(args []any, cp *checkpoint.Checkpoint, c checkpoint.Channel, b deltas.Blob) []any {
	var base sql.NullInt64
	if b.Delta {
		base = sql.NullInt64{Int64: b.Base, Valid: true}
	}
	return append(args, cp.ThreadID, cp.Namespace, c.Name, c.Version, base, b.Depth, b.Size, b.Hash[:], b.Data)
}

// encodeValue returns the blob that stores the value of channel c of cp,
// given whole, deltas.Whole of it: a delta of the channel's previous
// version when it appends to it, else whole. A value that is never a delta
// (deltas.AlwaysWhole) is whole without reading the channel's path. It
// reports whether the path read found c's version stored already, with
// this value (else the error is a version conflict): then there is
// nothing to insert.
func (s *Saver) encodeValue(tx sqlitedb.Tx, cp *checkpoint.Checkpoint, c checkpoint.Channel, whole deltas.Blob) (b deltas.Blob, stored bool, err error) {
	if deltas.AlwaysWhole(c.Value) {
		return whole, false, nil
	}
	path, exists, err := s.prevPath(tx, cp.ThreadID, cp.Namespace, c.Name, c.Version)
	if err != nil {
		return b, false, err
	}
	if exists {
		return b, true, keepFirst(cp, c, path[0], whole.Hash)
	}
	return deltas.EncodeFrom(whole, c.Value, path, s.fanout), false, nil
}

// keepFirst returns nil when stored, the blob already stored under c's
// version, holds the value whose hash is hash (the first is kept), and
// the *checkpoint.VersionConflictError of c otherwise.
func keepFirst(cp *checkpoint.Checkpoint, c checkpoint.Channel, stored deltas.Blob, hash [sha256.Size]byte) error {
	if stored.Version != c.Version || stored.Hash != hash {
		return &checkpoint.VersionConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, Channel: c.Name, Version: c.Version}
	}
	return nil
}

// parentConflict returns the [*checkpoint.ConflictError] of cp, whose row
// upsertCheckpoint did not write: its parent is not the latest checkpoint
// of its thread and namespace.
func parentConflict(tx sqlitedb.Tx, cp *checkpoint.Checkpoint) error {
	var latest string
	err := tx.QueryRow(selectLatestOther, cp.ThreadID, cp.Namespace, cp.ID).Scan(&latest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if cp.Fork || latest == cp.ParentID {
		// The checks pass: the row was skipped for something else.
		return fmt.Errorf("checkpoint row %s not written although its parent is the latest", cp.ID)
	}
	return &checkpoint.ConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, CheckpointID: cp.ID, ParentID: cp.ParentID, LatestID: latest}
}

// PutWrites implements [checkpoint.Saver]. All writes are stored in one
// transaction, which it may share with concurrent Puts and PutWrites (see
// [Saver.Put]).
func (s *Saver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: put writes: %w", err)
	}
	write, err := writesWrite(ref, writes)
	if err != nil || write.none() {
		return err
	}
	if err := s.group.Do(ctx, write); err != nil {
		return fmt.Errorf("checkpoint/sqlite: put %s: %w", describeWrites(ref), err)
	}
	return nil
}

// writesWrite checks writes against ref and returns the write that stores
// them in a write transaction, one that writes nothing when there are
// none.
func writesWrite(ref checkpoint.Ref, writes []checkpoint.Write) (writeOp, error) {
	if ref.ThreadID == "" || ref.ID == "" {
		return writeOp{}, errors.New("checkpoint/sqlite: put writes needs a thread ID and a checkpoint ID")
	}
	if len(writes) == 0 {
		return writeOp{}, nil
	}
	return writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		return storeWrites(ctx, tx, ref, writes)
	}}, nil
}

// storeWrites is writesWrite's write.
func storeWrites(ctx context.Context, tx sqlitedb.Tx, ref checkpoint.Ref, writes []checkpoint.Write) error {
	if err := checkFence(ctx, tx, ref.ThreadID); err != nil {
		return &unchanged{err}
	}
	for _, w := range writes {
		q := insertWriteIgnore
		if w.Idx < 0 {
			q = insertWriteReplace
		}
		if _, err := tx.Exec(q, ref.ThreadID, ref.Namespace, ref.ID, w.TaskID, w.Idx, w.Channel, w.TaskPath, sqlsaver.NotNull(w.Value)); err != nil {
			return err
		}
	}
	return nil
}

// PutBatch implements [checkpoint.Batcher]: the ops are made in order in
// one transaction, which concurrent writers may share (see [Saver.Put]),
// all of them or none.
func (s *Saver) PutBatch(ctx context.Context, ops []checkpoint.Op) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: put batch: %w", err)
	}
	type opWrite struct {
		what  string
		write writeOp
	}
	writes := make([]opWrite, 0, len(ops))
	for _, op := range ops {
		var w opWrite
		var err error
		if op.Checkpoint != nil {
			w.what = describePut(op.Checkpoint)
			w.write, err = s.putWrite(op.Checkpoint)
		} else {
			w.what = describeWrites(op.Ref)
			w.write, err = writesWrite(op.Ref, op.Writes)
		}
		if err != nil {
			return err
		}
		if !w.write.none() {
			writes = append(writes, w)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	var failed string // the op whose error the batch's is
	err := s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		for _, w := range writes {
			if err := s.make(ctx, tx, w.write); err != nil {
				// An op refused after others wrote: the batch is undone
				// whole, never as if nothing had changed.
				failed = w.what
				return bare(err)
			}
		}
		return nil
	}})
	if err != nil && failed != "" {
		return fmt.Errorf("checkpoint/sqlite: put batch of %d: %s: %w", len(ops), failed, err)
	}
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: put batch of %d: %w", len(ops), err)
	}
	return nil
}

// List implements [checkpoint.Saver]. It selects the matching checkpoints
// when iteration starts and reads each one as it is yielded, so the caller
// may use the Saver while ranging.
func (s *Saver) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return sqlsaver.List(ctx, "checkpoint/sqlite",
		func() ([]checkpoint.Ref, error) { return s.listRefs(ctx, threadID, opts) },
		func(ref checkpoint.Ref) (*checkpoint.Tuple, error) { return s.getTuple(ctx, ref) })
}

func (s *Saver) listRefs(ctx context.Context, threadID string, opts checkpoint.ListOptions) ([]checkpoint.Ref, error) {
	q, args, ok := listQuery(threadID, opts)
	if !ok {
		return nil, nil // the filter matches nothing
	}
	var refs []checkpoint.Ref
	err := s.db.Read(ctx, func(tx sqlitedb.Tx) error {
		refs = refs[:0]
		rows, err := tx.Query(q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r checkpoint.Ref
			var meta []byte
			if err := rows.Scan(&r.ThreadID, &r.Namespace, &r.ID, &meta); err != nil {
				return err
			}
			if len(opts.Filter) > 0 {
				// The SQL filter is necessary, not sufficient.
				match, err := sqlsaver.Matches(meta, r, opts.Filter)
				if err != nil {
					return err
				}
				if !match {
					continue
				}
			}
			refs = append(refs, r)
			if opts.Limit > 0 && len(refs) == opts.Limit {
				break
			}
		}
		return rows.Err()
	})
	if err != nil {
		ns := ""
		if opts.Namespace != nil {
			ns = *opts.Namespace
		}
		return nil, corruptFile(checkpoint.Ref{ThreadID: threadID, Namespace: ns}, err)
	}
	return refs, nil
}

// listQuery returns the query of the refs that List(threadID, opts)
// yields, newest first, and its arguments; false if opts.Filter matches
// no metadata.
func listQuery(threadID string, opts checkpoint.ListOptions) (q string, args []any, ok bool) {
	var where []string
	if threadID != "" {
		where = append(where, "thread_id = ?")
		args = append(args, threadID)
	}
	if opts.Namespace != nil {
		where = append(where, "ns = ?")
		args = append(args, *opts.Namespace)
	}
	if opts.Before != "" {
		where = append(where, "id < ?")
		args = append(args, opts.Before)
	}
	conds, fargs, ok := filterSQL(opts.Filter)
	if !ok {
		return "", nil, false
	}
	if len(conds) > 0 {
		// Metadata that is not a JSON object passes, for Matches to
		// report it.
		where = append(where, "(NOT json_valid(metadata) OR json_type(metadata) <> 'object' OR ("+strings.Join(conds, " AND ")+"))")
		args = append(args, fargs...)
	}
	q = `SELECT thread_id, ns, id, metadata FROM checkpoints`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC, thread_id, ns"
	if opts.Limit > 0 && len(opts.Filter) == 0 {
		q += " LIMIT ?"
		args = append(args, opts.Limit)
	}
	return q, args, true
}

// filterSQL returns conditions that every checkpoint whose metadata
// matches filter satisfies (so that SQLite can skip the others), with their
// arguments, and false if no metadata can match.
func filterSQL(filter map[string]any) (conds []string, args []any, ok bool) {
	filter, ok = sqlsaver.Filter(filter)
	if !ok {
		return nil, nil, false
	}
	for _, k := range slices.Sorted(maps.Keys(filter)) {
		want := filter[k]
		path, ok := sqlitedb.KeyPath(k)
		if !ok {
			continue // not expressible as a JSON path; Matches decides
		}
		switch w := want.(type) {
		case string:
			conds = append(conds, "json_type(metadata, ?) = 'text' AND json_extract(metadata, ?) = ?")
			args = append(args, path, path, w)
		case float64:
			conds = append(conds, "json_type(metadata, ?) IN ('integer', 'real') AND CAST(json_extract(metadata, ?) AS REAL) = ?")
			args = append(args, path, path, w)
		case bool:
			conds = append(conds, "json_type(metadata, ?) = ?")
			args = append(args, path, fmt.Sprint(w))
		case nil:
			conds = append(conds, "json_type(metadata, ?) = 'null'")
			args = append(args, path)
		default:
			conds = append(conds, "json_type(metadata, ?) IS NOT NULL")
			args = append(args, path)
		}
	}
	return conds, args, true
}

var deleteThread = []string{
	`DELETE FROM checkpoints WHERE thread_id = ?`,
	`DELETE FROM blobs WHERE thread_id = ?`,
	`DELETE FROM writes WHERE thread_id = ?`,
}

// DeleteThread implements [checkpoint.ThreadDeleter]: it deletes the
// thread's checkpoints, values and pending writes in every namespace, in
// one transaction.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/sqlite: delete thread: %w", err)
	}
	err := s.group.Do(ctx, writeOp{do: func(ctx context.Context, tx sqlitedb.Tx) error {
		if err := checkFence(ctx, tx, threadID); err != nil {
			return &unchanged{err}
		}
		for _, q := range deleteThread {
			if _, err := tx.Exec(q, threadID); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("checkpoint/sqlite: delete thread %q: %w", threadID, err)
	}
	return nil
}
