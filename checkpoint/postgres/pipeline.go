package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
)

// One round trip per write. A Put or PutWrites is sent, when it can be, as
// one pipelined batch with no BEGIN or COMMIT: PostgreSQL runs the
// statements of a pipeline up to its Sync as one implicit transaction,
// committed at the Sync, rolled back as a whole if one statement fails.
// So the write's checks cannot be read by the client between statements,
// as the two-round-trip path does (Put reads the latest checkpoint and the
// previous blobs, then writes): they are made by the server, in the last
// statement of the batch (checkWrite), which raises the error errStale —
// rolling the whole batch back — when one fails. The client then makes the
// write again the two-round-trip way, which finds what failed and returns
// its typed error (a conflict, a fenced lease), or succeeds when only the
// client's guess was stale.
//
// What the client must guess is the delta encoding of the changed values,
// which needs the stored paths of the previous versions. The saver
// remembers, per thread and namespace, the paths of the last checkpoint it
// wrote or read for a Put (pathCache), and a Put whose parent is that
// checkpoint (or that starts a thread) takes the one-round-trip path. The
// check statement proves the guess: the parent is the thread's latest
// checkpoint, every delta's base is stored with the hash and depth the
// client encoded against, and every changed channel's version is stored
// with the value's hash (a version stored before with another value is a
// version conflict; with the same value, the first is kept, as always) —
// which a blob's insert without ON CONFLICT proves by itself when it
// succeeds (see putPlan.queue).
// The locks are the two-round-trip path's: the Put lock of the thread and
// namespace, and, for a fenced write, the thread's lease lock shared (see
// Fencing in lease.go), in the batch's first statement; the check is a
// later statement, so it sees everything committed before the locks were
// granted.
//
// A batch runs to its end on the server whatever its client does once it
// was sent: a process paused after sending it holds no lock (unless it
// stops while the batch is still being sent, see Fencing).

// errStaleCode is the SQLSTATE that agentgraph_check raises.
const errStaleCode = "AGS01"

const (
	// checkFunction raises errStaleCode unless ok (a migration creates
	// it; plain SQL has no way to fail a statement on a condition).
	checkFunction = `CREATE FUNCTION agentgraph_check(ok boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'agentgraph: a write''s check failed; it is made again the long way' USING ERRCODE = 'AGS01';
	END IF;
END
$$`

	// lockThreadFenced is lockThread ($1) for a fenced write: it takes
	// the thread's lease lock ($2) shared, first (see "Lock order" in
	// group.go).
	lockThreadFenced = `SELECT pg_advisory_xact_lock_shared($2), pg_advisory_xact_lock($1)`

	// checkPut: $3 is the checkpoint's ID, $4 its parent's, "" for
	// none; $5 the lease token of a fenced write (NULL when not fenced);
	// $6–$9 the blobs that must be stored (channel, version, hash, and
	// depth, -1 for any). The blobs are looked up by a scalar subquery
	// with LIMIT 1 on the primary key, which the planner cannot turn into
	// a join over the thread's blobs (see selectPaths).
	//
	// The arrays are unnested in a target list (a ProjectSet, which
	// streams), not as unnest(…) in FROM (a function scan, which stores its
	// rows in a tuplestore first): the tuplestore's memory, taken and
	// freed at every statement, made the server's malloc give the top of
	// its heap back to the kernel and take it again at each check once a
	// group-commit batch had grown the transaction's memory — a brk and a
	// TLB shootdown per write, 40 % of the backend's time, which made
	// 1,000 threads slower on one saver than one thread (3,400 against
	// 4,500 steps/s; see bench/SAVERS.md). Both forms pad shorter arrays
	// with NULLs, in lockstep.
	checkPut = `SELECT agentgraph_check(` + checkParentAndFence + `
	AND NOT EXISTS (
		SELECT 1 FROM (SELECT unnest($6::text[]) AS channel, unnest($7::bigint[]) AS version, unnest($8::bytea[]) AS hash, unnest($9::bigint[]) AS depth) AS w
		WHERE (SELECT x.hash = w.hash AND (w.depth < 0 OR x.depth = w.depth) FROM agentgraph_blobs AS x
			WHERE x.thread_id = $1 AND x.ns = $2 AND x.channel = w.channel AND x.version = w.version LIMIT 1) IS NOT TRUE))`

	// checkParent is checkPut for a Put with no blob to verify ($1–$5):
	// the executor's work on checkPut's blob half is paid at every
	// statement, even over empty arrays (≈ 15 µs of the backend's time
	// per W5 step; see bench/SAVERS.md).
	checkParent = `SELECT agentgraph_check(` + checkParentAndFence + `)`

	// checkParentAndFence is the condition of checkPut and checkParent
	// on the parent and the lease.
	checkParentAndFence = `
	COALESCE((SELECT id FROM agentgraph_checkpoints WHERE thread_id = $1 AND ns = $2 AND id <> $3 ORDER BY id DESC LIMIT 1), '') = $4
	AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM agentgraph_leases WHERE thread_id = $1 AND token = $5 AND token <> ''))`

	// checkFence checks the fence of a PutWrites or a DeleteThread.
	checkFence = `SELECT agentgraph_check(EXISTS (SELECT 1 FROM agentgraph_leases WHERE thread_id = $1 AND token = $2 AND token <> ''))`
)

// isStale reports whether err is agentgraph_check's, or a deadlock the
// server broke by failing the write: the write is made again the long
// way, in a transaction of its own. The saver's own transactions take
// their locks in one order (see "Lock order" in group.go) and do not
// deadlock among themselves; a deadlock is some other holder's.
func isStale(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == errStaleCode || pe.Code == "40P01")
}

// maxCachedThreads bounds the pathCache.
const maxCachedThreads = 8192

// pathCache remembers the blob paths of the last checkpoint a Saver wrote
// per thread and namespace. It only ever saves round trips: whatever it
// holds, a write made from it is checked by the server.
type pathCache struct {
	mu sync.Mutex
	m  map[threadNS]*cachedPaths
}

type threadNS struct{ thread, ns string }

// cachedPaths are the paths of the channels of checkpoint id: for each,
// the metadata (no data) of the blobs from its value down to a whole
// value, sorted by depth. A channel that is missing is stored whole at
// its next version.
type cachedPaths struct {
	id    string
	paths channelPaths
}

// channelPaths are paths by channel, sorted by channel name, each name
// once. A slice, not a map: a write makes one, for a handful of channels,
// and a map's table was a twelfth of the bytes a 1,000-thread W5 run
// allocates.
type channelPaths []channelPath

// channelPath is the path of a channel.
type channelPath struct {
	name string
	path []deltas.Blob
}

// find returns the index of name in ps, or where it would be.
func (ps channelPaths) find(name string) (int, bool) {
	return slices.BinarySearchFunc(ps, name, func(p channelPath, name string) int { return strings.Compare(p.name, name) })
}

// get returns the path of name, nil for none.
func (ps channelPaths) get(name string) []deltas.Blob {
	if i, ok := ps.find(name); ok {
		return ps[i].path
	}
	return nil
}

// set makes path the path of name.
func (ps *channelPaths) set(name string, path []deltas.Blob) {
	i, ok := ps.find(name)
	if ok {
		(*ps)[i].path = path
		return
	}
	*ps = slices.Insert(*ps, i, channelPath{name, path})
}

// remove removes name's path.
func (ps *channelPaths) remove(name string) {
	if i, ok := ps.find(name); ok {
		*ps = slices.Delete(*ps, i, i+1)
	}
}

func (c *pathCache) get(thread, ns string) *cachedPaths {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[threadNS{thread, ns}]
}

func (c *pathCache) put(thread, ns string, p *cachedPaths) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[threadNS]*cachedPaths)
	}
	k := threadNS{thread, ns}
	if _, ok := c.m[k]; !ok && len(c.m) >= maxCachedThreads {
		for old := range c.m { // forget one: any
			delete(c.m, old)
			break
		}
	}
	c.m[k] = p
}

func (c *pathCache) forget(thread, ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, threadNS{thread, ns})
}

func (c *pathCache) forgetThread(thread string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.thread == thread {
			delete(c.m, k)
		}
	}
}

// meta returns b without its data.
func meta(b deltas.Blob) deltas.Blob {
	b.Data = nil
	return b
}

// newPath returns the path of blob, encoded against prev (sorted by
// depth): blob after the part of prev its base heads.
func newPath(blob deltas.Blob, prev []deltas.Blob) []deltas.Blob {
	if !blob.Delta {
		return []deltas.Blob{meta(blob)}
	}
	for i, b := range prev {
		if b.Version == blob.Base {
			return append(prev[:i+1:i+1], meta(blob))
		}
	}
	return nil // not reached: Encode bases a delta on prev
}

// putPlan is a Put ready to be sent as one batch.
type putPlan struct {
	cp      *checkpoint.Checkpoint
	args    []any // the checkpoint row
	blobs   []deltas.Blob
	names   []string // blobs[i]'s channel
	paths   channelPaths
	fenced  bool
	lease   checkpoint.Lease
	check   [4]any // the blobs checkPut verifies
	bases   [4]any // those of check that are delta bases, not blobs of p
	written []bool // whether blobs[i] was inserted
}

// planPut returns the one-batch plan of cp, or nil when cp needs the
// two-round-trip path: a fork, or a parent other than the checkpoint the
// cache holds for the thread, or a version not above its cached one.
func (s *Saver) planPut(ctx context.Context, cp *checkpoint.Checkpoint, row []any, changed []checkpoint.Channel) *putPlan {
	if cp.Fork {
		return nil
	}
	var cached *cachedPaths
	if cp.ParentID != "" {
		cached = s.cache.get(cp.ThreadID, cp.Namespace)
		if cached == nil || cached.id != cp.ParentID {
			return nil
		}
	}
	p := &putPlan{cp: cp, args: row, paths: make(channelPaths, 0, len(cp.Channels))}
	p.lease, p.fenced = checkpoint.LeaseFrom(ctx, cp.ThreadID)
	var check, bases blobChecks
	for _, ch := range changed {
		var prev []deltas.Blob
		if cached != nil {
			prev = cached.paths.get(ch.Name)
		}
		if len(prev) > 0 && prev[len(prev)-1].Version >= ch.Version {
			return nil
		}
		blob := deltas.Encode(ch.Version, ch.Value, prev, s.fanout)
		p.blobs = append(p.blobs, blob)
		p.names = append(p.names, ch.Name)
		p.paths.set(ch.Name, newPath(blob, prev))
		check.add(ch.Name, ch.Version, blob.Hash[:], -1)
		if blob.Delta {
			for _, b := range prev {
				if b.Version == blob.Base {
					check.add(ch.Name, b.Version, b.Hash[:], b.Depth)
					bases.add(ch.Name, b.Version, b.Hash[:], b.Depth)
				}
			}
		}
	}
	for _, ch := range cp.Channels {
		if ch.Value != nil || cached == nil {
			continue
		}
		if path := cached.paths.get(ch.Name); len(path) > 0 && path[len(path)-1].Version == ch.Version {
			p.paths.set(ch.Name, path)
		}
	}
	p.check, p.bases = check.boxed(), bases.boxed()
	p.written = make([]bool, len(p.blobs))
	return p
}

// blobChecks are the blobs a check statement verifies, as its four
// arrays: channel, version, hash and depth (-1: a blob of the Put itself,
// whose depth is not checked).
type blobChecks struct {
	chans            []string
	versions, depths []int64
	hashes           [][]byte
}

// add adds a blob to c.
func (c *blobChecks) add(channel string, version int64, hash []byte, depth int64) {
	c.chans, c.versions, c.hashes, c.depths = append(c.chans, channel), append(c.versions, version), append(c.hashes, hash), append(c.depths, depth)
}

// boxed returns c's arrays boxed once, in the check's argument order.
func (c *blobChecks) boxed() [4]any {
	return [4]any{c.chans, c.versions, c.hashes, c.depths}
}

// queue queues p's statements in b. The thread, namespace, ID and parent
// are the checkpoint row's values (p.args), boxed once.
//
// Upserted, the blobs are inserted unless stored already and the
// checkpoint row replaces one of the same ID, as the long way does, and
// the check verifies every blob of p.check. Otherwise the inserts have no
// ON CONFLICT clause (which costs the server a speculative insertion per
// row): a row stored already fails the batch with a unique violation, and
// the write is sent again upserted (sender.commitAlone). A blob the plain
// insert stored is p's own, so the check verifies only the delta bases
// (p.bases), and with none, the parent and the lease alone (checkParent).
func (p *putPlan) queue(b *pgx.Batch, upsert bool) {
	cp := p.cp
	thread, ns, id, parent := p.args[0], p.args[1], p.args[2], p.args[3]
	if p.fenced {
		b.Queue(lockThreadFenced, threadLockKey(cp.ThreadID, cp.Namespace), leaseLockKey(cp.ThreadID))
	} else {
		b.Queue(lockThread, threadLockKey(cp.ThreadID, cp.Namespace))
	}
	blobSQL, cpSQL, check := insertNewBlob, insertNewCheckpoint, p.bases
	if upsert {
		blobSQL, cpSQL, check = insertBlob, upsertCheckpoint, p.check
	}
	for i, blob := range p.blobs {
		var base *int64
		if blob.Delta {
			base = &blob.Base
		}
		b.Queue(blobSQL, thread, ns, p.names[i], blob.Version, base, blob.Depth, blob.Size, blob.Hash[:], blob.Data).Exec(func(ct pgconn.CommandTag) error {
			p.written[i] = ct.RowsAffected() == 1
			return nil
		})
	}
	b.Queue(cpSQL, p.args...)
	var token *string
	if p.fenced {
		token = &p.lease.Token
	}
	if len(check[0].([]string)) == 0 {
		b.Queue(checkParent, thread, ns, id, parent, token)
		return
	}
	b.Queue(checkPut, thread, ns, id, parent, token, check[0], check[1], check[2], check[3])
}

// committed records p's paths once its batch committed. A blob that was
// stored already (the same value under the same version) may be encoded
// otherwise than p's: its channel is forgotten.
func (p *putPlan) committed(c *pathCache) {
	for i, ok := range p.written {
		if !ok {
			p.paths.remove(p.names[i])
		}
	}
	c.put(p.cp.ThreadID, p.cp.Namespace, &cachedPaths{id: p.cp.ID, paths: p.paths})
}

// checkpointRow returns the arguments of upsertCheckpoint for cp: its
// thread, namespace, ID and parent first (see putPlan.queue).
func checkpointRow(cp *checkpoint.Checkpoint, meta, versions string) []any {
	var created *time.Time
	if !cp.CreatedAt.IsZero() {
		created = &cp.CreatedAt
	}
	return []any{cp.ThreadID, cp.Namespace, cp.ID, cp.ParentID, created, meta, versions, sqlsaver.NotNull(cp.Frontier), cp.Shape}
}

// queueWrites queues the statements of a PutWrites in b: the locks (the
// fence's first when fenced), the inserts, then the fence's check. The
// rows are under the thread and namespace's Put lock, as a Put's are: two
// savers' batches writing the same pending writes (a stale holder's and
// its successor's, whose task IDs are the same) would otherwise wait for
// each other's rows outside the lock order.
func queueWrites(b *pgx.Batch, ref checkpoint.Ref, writes []checkpoint.Write, lease *checkpoint.Lease) {
	if lease != nil {
		b.Queue(lockThreadFenced, threadLockKey(ref.ThreadID, ref.Namespace), leaseLockKey(ref.ThreadID))
	} else {
		b.Queue(lockThread, threadLockKey(ref.ThreadID, ref.Namespace))
	}
	for _, w := range writes {
		q := insertWriteIgnore
		if w.Idx < 0 {
			q = insertWriteReplace
		}
		b.Queue(q, ref.ThreadID, ref.Namespace, ref.ID, w.TaskID, w.Idx, w.Channel, w.TaskPath, sqlsaver.NotNull(w.Value))
	}
	if lease != nil {
		b.Queue(checkFence, ref.ThreadID, lease.Token)
	}
}

// sortedPath returns a copy of path sorted by depth, without data.
func sortedPath(path []deltas.Blob) []deltas.Blob {
	out := make([]deltas.Blob, len(path))
	for i, b := range path {
		out[i] = meta(b)
	}
	slices.SortFunc(out, func(a, b deltas.Blob) int { return cmp.Compare(a.Depth, b.Depth) })
	return out
}
