package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
	"github.com/agentgraph/agentgraph/internal/pgdb"
)

// querier is what a pool, a connection and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

const (
	selectCheckpoint = `SELECT thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape FROM agentgraph_checkpoints`
	selectLatest     = selectCheckpoint + ` WHERE thread_id = $1 AND ns = $2 ORDER BY id DESC LIMIT 1`
	selectByID       = selectCheckpoint + ` WHERE thread_id = $1 AND ns = $2 AND id = $3`

	// selectPaths returns, for each channel $3[i] at version $4[i], the
	// blob of that version and the blobs its chain of delta bases leads
	// to. The LIMIT 1 subqueries (on a primary key) keep the planner from
	// turning the lookups into hash joins over a thread's blobs. A base is
	// always an older version: the chain stops at a blob whose base is
	// not, so that a damaged base column cannot make the query loop (the
	// path then does not decode). The arrays are unnested in a target list,
	// not in FROM, for the reason given at checkPut.
	selectPaths = `
WITH RECURSIVE path AS (
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash, b.data
	FROM (SELECT unnest($3::text[]) AS channel, unnest($4::bigint[]) AS version) AS w
	CROSS JOIN LATERAL (
		SELECT x.channel, x.version, x.base, x.depth, x.size, x.hash, x.data FROM agentgraph_blobs AS x
		WHERE x.thread_id = $1 AND x.ns = $2 AND x.channel = w.channel AND x.version = w.version
		LIMIT 1
	) AS b
	UNION ALL
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash, b.data
	FROM path AS p
	CROSS JOIN LATERAL (
		SELECT x.channel, x.version, x.base, x.depth, x.size, x.hash, x.data FROM agentgraph_blobs AS x
		WHERE x.thread_id = $1 AND x.ns = $2 AND x.channel = p.channel AND x.version = p.base AND p.base < p.version
		LIMIT 1
	) AS b
)
SELECT channel, version, base, depth, size, hash, data FROM path`

	// selectPrevPaths is like selectPaths without the data, but with the
	// hash of each value, and starts, for each channel, from the highest
	// stored version not above the given one.
	selectPrevPaths = `
WITH RECURSIVE path AS (
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash
	FROM (SELECT unnest($3::text[]) AS channel, unnest($4::bigint[]) AS version) AS w
	CROSS JOIN LATERAL (
		SELECT x.channel, x.version, x.base, x.depth, x.size, x.hash FROM agentgraph_blobs AS x
		WHERE x.thread_id = $1 AND x.ns = $2 AND x.channel = w.channel AND x.version <= w.version
		ORDER BY x.version DESC LIMIT 1
	) AS b
	UNION ALL
	SELECT b.channel, b.version, b.base, b.depth, b.size, b.hash
	FROM path AS p
	CROSS JOIN LATERAL (
		SELECT x.channel, x.version, x.base, x.depth, x.size, x.hash FROM agentgraph_blobs AS x
		WHERE x.thread_id = $1 AND x.ns = $2 AND x.channel = p.channel AND x.version = p.base AND p.base < p.version
		LIMIT 1
	) AS b
)
SELECT channel, version, base, depth, size, hash FROM path`

	selectWrites = `SELECT task_id, task_path, idx, channel, value FROM agentgraph_writes
	WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 ORDER BY task_id, idx`

	// lockThread takes the exclusive lock of a thread and namespace ($1,
	// threadLockKey) for a Put or a PutWrites: every row the saver writes
	// is under it (see "Lock order" in group.go).
	lockThread = `SELECT pg_advisory_xact_lock($1)`
	// selectThreadNamespaces lists the namespaces a thread has rows in
	// (checkpoints, blobs or pending writes): DeleteThread locks each.
	selectThreadNamespaces = `SELECT ns FROM agentgraph_blobs WHERE thread_id = $1
		UNION SELECT ns FROM agentgraph_checkpoints WHERE thread_id = $1
		UNION SELECT ns FROM agentgraph_writes WHERE thread_id = $1`
	// selectLatestOther returns the ID of the latest checkpoint of a
	// thread and namespace other than the given one.
	selectLatestOther = `SELECT id FROM agentgraph_checkpoints
	WHERE thread_id = $1 AND ns = $2 AND id <> $3 ORDER BY id DESC LIMIT 1`

	// insertNewBlob and insertNewCheckpoint are insertBlob and
	// upsertCheckpoint without their ON CONFLICT clause, for a lone
	// write's first try (see sender.commitAlone).
	insertNewBlob = `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	insertNewCheckpoint = `INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	insertBlob       = insertNewBlob + ` ON CONFLICT DO NOTHING`
	upsertCheckpoint = insertNewCheckpoint + `
	ON CONFLICT (thread_id, ns, id) DO UPDATE SET
		parent_id = excluded.parent_id, created_at = excluded.created_at, metadata = excluded.metadata,
		versions = excluded.versions, frontier = excluded.frontier, shape = excluded.shape`
	insertWriteIgnore = `INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`
	insertWriteReplace = `INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO UPDATE SET
		channel = excluded.channel, task_path = excluded.task_path, value = excluded.value`
)

// Get implements [checkpoint.Saver].
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: get: %w", err)
	}
	t, err := getTuple(ctx, s.pool, ref)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: get thread %q namespace %q id %q: %w", ref.ThreadID, ref.Namespace, ref.ID, err)
	}
	return t, nil
}

// getTuple reads a checkpoint, then its values and pending writes in one
// round trip. Blobs never change once written, so reading them after the
// checkpoint row needs no transaction.
func getTuple(ctx context.Context, q querier, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	var row pgx.Row
	if ref.ID == "" {
		row = q.QueryRow(ctx, selectLatest, ref.ThreadID, ref.Namespace)
	} else {
		row = q.QueryRow(ctx, selectByID, ref.ThreadID, ref.Namespace, ref.ID)
	}
	t, err := scanCheckpoint(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, checkpoint.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	channels, versions := versionArrays(t.Channels)
	b := &pgx.Batch{}
	b.Queue(selectPaths, t.ThreadID, t.Namespace, channels, versions)
	b.Queue(selectWrites, t.ThreadID, t.Namespace, t.ID)
	br := q.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	paths, err := scanPaths(rows, true)
	if err != nil {
		return nil, err
	}
	if err := sqlsaver.SetValues(t, paths); err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	t.PendingWrites, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (checkpoint.Write, error) {
		var w checkpoint.Write
		err := r.Scan(&w.TaskID, &w.TaskPath, &w.Idx, &w.Channel, &w.Value)
		return w, err
	})
	if err != nil {
		return nil, err
	}
	if len(t.PendingWrites) == 0 {
		t.PendingWrites = nil
	}
	return t, br.Close()
}

func scanCheckpoint(row pgx.Row) (*checkpoint.Tuple, error) {
	t := new(checkpoint.Tuple)
	var created *time.Time
	var meta, versions []byte
	if err := row.Scan(&t.ThreadID, &t.Namespace, &t.ID, &t.ParentID, &created, &meta, &versions, &t.Frontier, &t.Shape); err != nil {
		return nil, err
	}
	if created != nil {
		t.CreatedAt = created.UTC()
	}
	if err := sqlsaver.DecodeColumns(t, meta, versions); err != nil {
		return nil, err
	}
	return t, nil
}

// versionArrays returns the names and the versions of chs, for unnest.
func versionArrays(chs []checkpoint.Channel) ([]string, []int64) {
	channels := make([]string, len(chs))
	versions := make([]int64, len(chs))
	for i, ch := range chs {
		channels[i], versions[i] = ch.Name, ch.Version
	}
	return channels, versions
}

// scanPaths reads paths of blobs whose last columns are the hash of the
// value and, withData, the data. A hash of the wrong length is left zero:
// it matches no value.
func scanPaths(rows pgx.Rows, withData bool) (map[string][]deltas.Blob, error) {
	defer rows.Close()
	paths := make(map[string][]deltas.Blob)
	for rows.Next() {
		var ch string
		var b deltas.Blob
		var base *int64
		var hash []byte
		dest := []any{&ch, &b.Version, &base, &b.Depth, &b.Size, &hash}
		if withData {
			dest = append(dest, &b.Data)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(hash) == len(b.Hash) {
			copy(b.Hash[:], hash)
		}
		if base != nil {
			b.Delta, b.Base = true, *base
		}
		paths[ch] = append(paths[ch], b)
	}
	return paths, rows.Err()
}

// Put implements [checkpoint.Saver]. The checkpoint row and the blobs of
// its changed channels are written in one transaction, which also checks
// that cp neither forks its thread silently nor stores another value under
// a stored version (see [checkpoint.Saver.Put]).
//
// The checks are race-free although transactions run at READ COMMITTED:
// the transaction first takes a transaction-level advisory lock on cp's
// thread and namespace, which every Put of them takes, and reads the
// latest checkpoint and the stored versions in later statements, each of
// which sees what was committed before it started, so after the lock was
// granted: everything the previous holders of the lock wrote. Another Put
// of the thread and namespace cannot write until this one commits or rolls
// back.
//
// A Put whose parent is the checkpoint this Saver last wrote for the
// thread and namespace (as every step of a run is), or that starts a
// thread, is one round trip: the lock, the writes and the checks, made by
// the server, in one pipelined batch (see pipeline.go). Any other Put, or
// one whose checks fail there, takes two round trips within BEGIN and
// COMMIT: the lock and the reads, then the writes.
func (s *Saver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/postgres: put: %w", err)
	}
	row, changed, err := preparePut(cp)
	if err != nil {
		return err
	}
	if p := s.planPut(ctx, cp, row, changed); p != nil {
		err := s.group.Do(ctx, groupOp{items: []batchItem{{plan: p}}})
		if err == nil {
			p.committed(&s.cache)
			return nil
		}
		s.cache.forget(cp.ThreadID, cp.Namespace)
		if !isStale(err) {
			return fmt.Errorf("checkpoint/postgres: put thread %q namespace %q id %q: %w", cp.ThreadID, cp.Namespace, cp.ID, err)
		}
		// A check failed: the long way finds which.
	}
	if err := s.putChecked(ctx, cp, row, changed); err != nil {
		s.cache.forget(cp.ThreadID, cp.Namespace)
		return fmt.Errorf("checkpoint/postgres: put thread %q namespace %q id %q: %w", cp.ThreadID, cp.Namespace, cp.ID, err)
	}
	return nil
}

// preparePut checks cp and returns its checkpoint row and its channels
// with a value, sorted by name.
func preparePut(cp *checkpoint.Checkpoint) (row []any, changed []checkpoint.Channel, err error) {
	if cp.ThreadID == "" || cp.ID == "" {
		return nil, nil, errors.New("checkpoint/postgres: put needs a thread ID and a checkpoint ID")
	}
	meta, versionsJSON, err := sqlsaver.EncodeColumns(cp)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint/postgres: put %s: %w", cp.ID, err)
	}
	changed = make([]checkpoint.Channel, 0, len(cp.Channels))
	for _, ch := range cp.Channels {
		if ch.Value != nil {
			changed = append(changed, ch)
		}
	}
	slices.SortFunc(changed, func(a, b checkpoint.Channel) int { return strings.Compare(a.Name, b.Name) })
	// jsonb cannot hold U+0000: metadata keeps U+FFFD in its place, and
	// List's filters are read the same way (jsonbFilter).
	return checkpointRow(cp, string(pgdb.JSONB(meta)), string(versionsJSON)), changed, nil
}

// putChecked makes a Put in two round trips of a transaction (besides its
// BEGIN and COMMIT): the locks and the reads of what the checks and the
// delta encoding need, then the writes. It records the paths of cp's
// channels in the cache.
func (s *Saver) putChecked(ctx context.Context, cp *checkpoint.Checkpoint, row []any, changed []checkpoint.Channel) error {
	var paths channelPaths
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		paths, err = s.putInTx(ctx, tx, cp, row, changed)
		return err
	})
	if err == nil && len(changed) > 0 {
		s.cache.put(cp.ThreadID, cp.Namespace, &cachedPaths{id: cp.ID, paths: paths})
	}
	return err
}

// putInTx is putChecked's work in tx, the transaction it began; it
// returns the paths of cp's channels, for the cache.
func (s *Saver) putInTx(ctx context.Context, tx pgx.Tx, cp *checkpoint.Checkpoint, row []any, changed []checkpoint.Channel) (channelPaths, error) {
	paths := make(channelPaths, 0, len(cp.Channels))
	err := func() error {
		// The lock and the reads are separate statements: a statement
		// that took the lock would read with the snapshot it started with.
		b := &pgx.Batch{}
		fenced := queueFence(ctx, b, cp.ThreadID)
		b.Queue(lockThread, threadLockKey(cp.ThreadID, cp.Namespace))
		var latest string
		if !cp.Fork {
			b.Queue(selectLatestOther, cp.ThreadID, cp.Namespace, cp.ID).QueryRow(func(row pgx.Row) error {
				if err := row.Scan(&latest); err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				return nil
			})
		}
		// conflict is checked once the batch is read (an error returned by
		// a callback would drop the connection's prepared statements).
		conflict := func() error {
			if err := fenced(); err != nil {
				return err
			}
			if cp.Fork || latest == cp.ParentID {
				return nil
			}
			return &checkpoint.ConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, CheckpointID: cp.ID, ParentID: cp.ParentID, LatestID: latest}
		}
		if len(changed) == 0 {
			// Written before the check is read; a conflict rolls it back.
			b.Queue(upsertCheckpoint, row...)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			return conflict()
		}
		// The paths of every channel, for the cache; the changed ones'
		// for the checks and the encoding.
		var prev map[string][]deltas.Blob
		channels, vs := versionArrays(cp.Channels)
		b.Queue(selectPrevPaths, cp.ThreadID, cp.Namespace, channels, vs).Query(func(rows pgx.Rows) error {
			var err error
			prev, err = scanPaths(rows, false)
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if err := conflict(); err != nil {
			return err
		}
		for _, ch := range cp.Channels {
			if path := prev[ch.Name]; ch.Value == nil && len(path) > 0 && path[0].Version == ch.Version {
				paths.set(ch.Name, sortedPath(path))
			}
		}
		b = &pgx.Batch{}
		for _, ch := range changed {
			path := prev[ch.Name]
			if i := slices.IndexFunc(path, func(b deltas.Blob) bool { return b.Version == ch.Version }); i >= 0 {
				if path[i].Hash != sha256.Sum256(ch.Value) {
					return &checkpoint.VersionConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, Channel: ch.Name, Version: ch.Version}
				}
				paths.set(ch.Name, sortedPath(path[i:])) // stored by an earlier checkpoint: keep the first
				continue
			}
			sorted := sortedPath(path)
			blob := deltas.Encode(ch.Version, ch.Value, sorted, s.fanout)
			paths.set(ch.Name, newPath(blob, sorted))
			var base *int64
			if blob.Delta {
				base = &blob.Base
			}
			b.Queue(insertBlob, cp.ThreadID, cp.Namespace, ch.Name, ch.Version, base, blob.Depth, blob.Size, blob.Hash[:], blob.Data)
		}
		b.Queue(upsertCheckpoint, row...)
		return tx.SendBatch(ctx, b).Close()
	}()
	return paths, err
}

// threadLockKey returns the key of the advisory lock that serializes the
// Puts of a thread and namespace. Keys are hashes, so two threads may share
// one: their Puts then wait for each other, which is slower, not wrong.
func threadLockKey(thread, ns string) int64 {
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	h.Write([]byte("agentgraph/checkpoint/postgres put\x00"))
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(thread)))])
	h.Write([]byte(thread))
	h.Write([]byte(ns))
	return int64(h.Sum64())
}

// PutWrites implements [checkpoint.Saver]. All writes are stored in one
// transaction, sent in one round trip (see pipeline.go).
func (s *Saver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/postgres: put writes: %w", err)
	}
	if err := checkWrites(ref, writes); err != nil || len(writes) == 0 {
		return err
	}
	lease := leaseOf(ctx, ref.ThreadID)
	// One implicit transaction, in a batch of the group (group.go).
	err := s.group.Do(ctx, groupOp{items: []batchItem{{ref: ref, writes: writes, lease: lease}}})
	if isStale(err) {
		err = s.putWritesChecked(ctx, ref, writes) // finds the fenced error
	}
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: put writes thread %q namespace %q id %q: %w", ref.ThreadID, ref.Namespace, ref.ID, err)
	}
	return nil
}

// checkWrites refuses a PutWrites whose checkpoint reference names no
// thread or checkpoint, or one of whose writes has an index the integer
// column cannot hold: the client cannot encode it, an error of the whole
// batch it is sent in, which would fail the other writes of its
// group-commit batch too.
func checkWrites(ref checkpoint.Ref, writes []checkpoint.Write) error {
	if ref.ThreadID == "" || ref.ID == "" {
		return errors.New("checkpoint/postgres: put writes needs a thread ID and a checkpoint ID")
	}
	for _, w := range writes {
		if w.Idx < math.MinInt32 || w.Idx > math.MaxInt32 {
			return fmt.Errorf("checkpoint/postgres: put writes: task %q: index %d out of the range of a 32-bit integer", w.TaskID, w.Idx)
		}
	}
	return nil
}

// leaseOf returns the lease ctx carries for writes to thread, nil for
// none (see checkpoint.LeaseFrom).
func leaseOf(ctx context.Context, thread string) *checkpoint.Lease {
	if l, ok := checkpoint.LeaseFrom(ctx, thread); ok {
		return &l
	}
	return nil
}

// putWritesChecked makes a PutWrites in an explicit transaction that
// reads the fence's lease row.
func (s *Saver) putWritesChecked(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return putWritesInTx(ctx, tx, ref, writes) })
}

// putWritesInTx is putWritesChecked's work in tx.
func putWritesInTx(ctx context.Context, tx pgx.Tx, ref checkpoint.Ref, writes []checkpoint.Write) error {
	b := &pgx.Batch{}
	fenced := queueFence(ctx, b, ref.ThreadID)
	queueWrites(b, ref, writes, nil)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return fenced() // written before the check is read; a refusal rolls it back
}

// PutBatch implements [checkpoint.Batcher]: the ops are made in order in
// one transaction, all of them or none. When every Put of the batch
// follows the one before it (as a run's checkpoints do), the batch is one
// round trip — one pipelined batch, shared with concurrent writers (group
// commit), its checks made by the server — and otherwise, or when a check
// fails there, it is made the long way in one explicit transaction, which
// returns the typed error of the op refused.
func (s *Saver) PutBatch(ctx context.Context, ops []checkpoint.Op) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/postgres: put batch: %w", err)
	}
	type prepared struct {
		op      checkpoint.Op
		row     []any
		changed []checkpoint.Channel
		plan    *putPlan
		lease   *checkpoint.Lease // a PutWrites' fence
	}
	batch := make([]prepared, 0, len(ops))
	for _, op := range ops {
		p := prepared{op: op}
		if op.Checkpoint != nil {
			var err error
			if p.row, p.changed, err = preparePut(op.Checkpoint); err != nil {
				return err
			}
		} else {
			if err := checkWrites(op.Ref, op.Writes); err != nil {
				return err
			}
			if len(op.Writes) == 0 {
				continue
			}
			p.lease = leaseOf(ctx, op.Ref.ThreadID)
		}
		batch = append(batch, p)
	}
	if len(batch) == 0 {
		return nil
	}
	// One round trip when every Put can be planned: each is planned on
	// the paths the one before it will leave, which the cache holds
	// meanwhile (a guess the server checks, as every cached path is).
	touched := map[threadNS]bool{}
	pipelined := true
	for i := range batch {
		p := &batch[i]
		cp := p.op.Checkpoint
		if cp == nil {
			continue
		}
		touched[threadNS{cp.ThreadID, cp.Namespace}] = true
		if p.plan = s.planPut(ctx, cp, p.row, p.changed); p.plan == nil {
			pipelined = false
			break
		}
		s.cache.put(cp.ThreadID, cp.Namespace, &cachedPaths{id: cp.ID, paths: slices.Clone(p.plan.paths)})
	}
	forget := func() {
		for k := range touched {
			s.cache.forget(k.thread, k.ns)
		}
	}
	if pipelined {
		items := make([]batchItem, len(batch))
		for i, p := range batch {
			items[i] = batchItem{plan: p.plan, ref: p.op.Ref, writes: p.op.Writes, lease: p.lease}
		}
		err := s.group.Do(ctx, groupOp{items: items})
		if err == nil {
			for _, p := range batch {
				if p.plan != nil {
					p.plan.committed(&s.cache)
				}
			}
			return nil
		}
		forget()
		if !isStale(err) {
			return fmt.Errorf("checkpoint/postgres: put batch of %d: %w", len(ops), err)
		}
		// A check failed: the long way finds which.
	}
	forget()
	var failed string
	paths := map[threadNS]*cachedPaths{} // the last Put's of each thread and namespace
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(batch) > 1 {
			// Several ops may lock several threads: in the saver's
			// order first (see "Lock order" in group.go).
			ops := make([]checkpoint.Op, len(batch))
			for i, p := range batch {
				ops[i] = p.op
			}
			shared, exclusive := opLocks(ctx, ops)
			if _, err := tx.Exec(ctx, takeLocksInOrder, shared, exclusive); err != nil {
				return err
			}
		}
		for _, p := range batch {
			if cp := p.op.Checkpoint; cp != nil {
				ps, err := s.putInTx(ctx, tx, cp, p.row, p.changed)
				if err != nil {
					failed = fmt.Sprintf("put thread %q namespace %q id %q", cp.ThreadID, cp.Namespace, cp.ID)
					return err
				}
				paths[threadNS{cp.ThreadID, cp.Namespace}] = &cachedPaths{id: cp.ID, paths: ps}
				continue
			}
			if err := putWritesInTx(ctx, tx, p.op.Ref, p.op.Writes); err != nil {
				failed = fmt.Sprintf("put writes thread %q namespace %q id %q", p.op.Ref.ThreadID, p.op.Ref.Namespace, p.op.Ref.ID)
				return err
			}
		}
		return nil
	})
	if err != nil && failed != "" {
		return fmt.Errorf("checkpoint/postgres: put batch of %d: %s: %w", len(ops), failed, err)
	}
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: put batch of %d: %w", len(ops), err)
	}
	for k, p := range paths { // the next batch can take one round trip
		s.cache.put(k.thread, k.ns, p)
	}
	return nil
}

// opLocks returns the advisory locks the ops take made one by one the long
// way: each op's thread's lease lock (shared) when ctx carries its lease,
// and the Put lock (exclusive) of its thread and namespace, which a Put
// and a PutWrites both take.
func opLocks(ctx context.Context, ops []checkpoint.Op) (shared, exclusive []int64) {
	for _, op := range ops {
		thread, ns := op.Ref.ThreadID, op.Ref.Namespace
		if cp := op.Checkpoint; cp != nil {
			thread, ns = cp.ThreadID, cp.Namespace
		}
		exclusive = append(exclusive, threadLockKey(thread, ns))
		if leaseOf(ctx, thread) != nil {
			shared = append(shared, leaseLockKey(thread))
		}
	}
	return shared, exclusive
}

// List implements [checkpoint.Saver]. It selects the matching checkpoints
// when iteration starts and reads each one as it is yielded, so the caller
// may use the Saver while ranging.
func (s *Saver) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return sqlsaver.List(ctx, "checkpoint/postgres",
		func() ([]checkpoint.Ref, error) { return s.listRefs(ctx, threadID, opts) },
		func(ref checkpoint.Ref) (*checkpoint.Tuple, error) { return getTuple(ctx, s.pool, ref) })
}

func (s *Saver) listRefs(ctx context.Context, threadID string, opts checkpoint.ListOptions) ([]checkpoint.Ref, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if threadID != "" {
		where = append(where, "thread_id = "+arg(threadID))
	}
	if opts.Namespace != nil {
		where = append(where, "ns = "+arg(*opts.Namespace))
	}
	if opts.Before != "" {
		where = append(where, "id < "+arg(opts.Before))
	}
	want := jsonbFilter(opts.Filter)
	filter, ok := sqlsaver.Filter(want)
	if !ok {
		return nil, nil // matches nothing, as Metadata.Matches
	}
	contains := map[string]any{}
	var conds []string
	for _, k := range slices.Sorted(maps.Keys(filter)) {
		want := filter[k]
		if f, ok := want.(float64); ok {
			// jsonb compares numbers exactly; Matches compares them as
			// float64, so compare as float8 here.
			p := arg(k)
			conds = append(conds, fmt.Sprintf("jsonb_typeof(metadata -> %s) = 'number' AND (metadata ->> %s)::float8 = %s::float8", p, p, arg(f)))
			continue
		}
		contains[k] = want
	}
	if len(contains) > 0 {
		b, err := json.Marshal(contains)
		if err != nil {
			return nil, err
		}
		conds = append(conds, "metadata @> "+arg(string(b))+"::jsonb")
	}
	if len(conds) > 0 {
		// Metadata that is not an object passes, for Matches to report
		// it.
		where = append(where, "(jsonb_typeof(metadata) <> 'object' OR ("+strings.Join(conds, " AND ")+"))")
	}
	q := `SELECT thread_id, ns, id, metadata FROM agentgraph_checkpoints`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC, thread_id, ns"
	if opts.Limit > 0 && len(opts.Filter) == 0 {
		q += " LIMIT " + arg(opts.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var refs []checkpoint.Ref
	for rows.Next() {
		var r checkpoint.Ref
		var meta []byte
		if err := rows.Scan(&r.ThreadID, &r.Namespace, &r.ID, &meta); err != nil {
			return nil, err
		}
		if len(opts.Filter) > 0 {
			// The SQL filter is necessary, not sufficient.
			match, err := sqlsaver.Matches(meta, r, want)
			if err != nil {
				return nil, err
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
	return refs, rows.Err()
}

// jsonbFilter returns filter as it matches the metadata Put stored: with
// every U+0000 of its keys and string values as U+FFFD (see pgdb.JSONB).
func jsonbFilter(filter map[string]any) map[string]any {
	var out map[string]any
	for k, v := range filter {
		if s, _ := v.(string); strings.Contains(k, "\x00") || strings.Contains(s, "\x00") {
			out = make(map[string]any, len(filter))
			break
		}
	}
	if out == nil {
		return filter
	}
	for k, v := range filter {
		if s, ok := v.(string); ok {
			v = pgdb.Text(s)
		}
		out[pgdb.Text(k)] = v
	}
	return out
}

// DeleteThread implements [checkpoint.ThreadDeleter]: it deletes the
// thread's checkpoints, values and pending writes in every namespace, in
// one transaction.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint/postgres: delete thread: %w", err)
	}
	s.cache.forgetThread(threadID)
	b := &pgx.Batch{}
	fenced := queueFence(ctx, b, threadID)
	var namespaces []string
	b.Queue(selectThreadNamespaces, threadID).Query(func(rows pgx.Rows) error {
		var err error
		namespaces, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if err := fenced(); err != nil {
			return err
		}
		// The Puts of the thread's namespaces are locked out before the
		// rows go: a Put reads the blobs its deltas build on before it
		// writes them (the long way), and a delete between the two would
		// leave a delta without its base. Locks in key order, as any
		// other holder of several takes them.
		keys := make([]int64, 0, len(namespaces))
		for _, ns := range namespaces {
			keys = append(keys, threadLockKey(threadID, ns))
		}
		slices.Sort(keys)
		d := &pgx.Batch{}
		for _, k := range slices.Compact(keys) {
			d.Queue(lockThread, k)
		}
		for _, table := range []string{"agentgraph_checkpoints", "agentgraph_blobs", "agentgraph_writes"} {
			d.Queue(`DELETE FROM `+table+` WHERE thread_id = $1`, threadID)
		}
		return tx.SendBatch(ctx, d).Close()
	})
	if err != nil {
		return fmt.Errorf("checkpoint/postgres: delete thread %q: %w", threadID, err)
	}
	return nil
}
