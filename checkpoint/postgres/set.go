package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
)

// Set-based batches. A batch of the group of two writes or more, all of
// them the saver's own (Puts and PutWrites, not a test's statements), is
// sent as a handful of statements whatever its size: the locks of every write in one statement
// (see "Lock order" in group.go), then, for each table, one statement over
// arrays (unnested in its target list, for the reason given at checkPut)
// and one statement that checks every write, in place of the three or four
// statements of each write (putPlan.queue, queueWrites).
//
// Two writes of one thread and namespace in one such statement would not
// be made in order: the check of the first would see the second's
// checkpoint as the latest, and an insert over arrays must not hold one
// key twice (ON CONFLICT DO UPDATE refuses to touch a row twice). So
// the batch is cut, in arrival order, into runs (setRun) in which each
// thread and namespace has one write at most, and each run has its own
// statements, its check after its writes: what the check of a write sees
// is then what it sees when the writes are made one by one.
//
// The check (checkSet) returns a row per write it checks (a Put, a fenced
// PutWrites), in the run's order, and raises errStaleCode at the first write whose check fails,
// rolling the batch back: the rows read before the error tell which write
// failed. That write alone gets the error, as in a batch of statements,
// and the others are sent again. A unique violation of an insert (a blob
// stored already, a checkpoint written again) sends the batch again with
// the inserts' ON CONFLICT clauses (see insertBlobs). Any other error of
// a statement cannot be told apart by write (an insert over arrays fails
// as a whole): the batch is then sent again as statements
// (sender.commit), which gives the error to its write alone. A lone write is sent as statements: for one write
// the arrays save no statement. So is a batch of more than maxSetBytes of
// values: its arrays could exceed a message.

const (
	// insertBlobs is insertBlob over arrays, and insertCheckpoints
	// upsertCheckpoint, both without their ON CONFLICT clause, which
	// cost a fifth of the server's time per write (bench/SAVERS.md): a
	// blob stored already, or a checkpoint written again (a Put retried,
	// a branch that stores a version again, a stale lease holder's write
	// beside its successor's), fails the statement with a unique
	// violation, and the batch is sent again with the clauses
	// (upsertBlobs, upsertCheckpoints).
	insertBlobs = `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
	SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::bigint[]), unnest($5::bigint[]),
		unnest($6::bigint[]), unnest($7::bigint[]), unnest($8::bytea[]), unnest($9::bytea[])`
	insertCheckpoints = `INSERT INTO agentgraph_checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
	SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]), unnest($5::timestamptz[]),
		unnest($6::text[])::jsonb, unnest($7::text[])::jsonb, unnest($8::bytea[]), unnest($9::text[])`
	// upsertBlobs is insertBlobs keeping a blob stored already; it
	// returns the keys of those it inserted.
	upsertBlobs = insertBlobs + `
	ON CONFLICT DO NOTHING RETURNING thread_id, ns, channel, version`
	// upsertCheckpoints is upsertCheckpoint over arrays.
	upsertCheckpoints = insertCheckpoints + `
	ON CONFLICT (thread_id, ns, id) DO UPDATE SET
		parent_id = excluded.parent_id, created_at = excluded.created_at, metadata = excluded.metadata,
		versions = excluded.versions, frontier = excluded.frontier, shape = excluded.shape`
	// insertWritesIgnoreSet is insertWriteIgnore over arrays.
	insertWritesIgnoreSet = `INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
	SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]), unnest($5::integer[]),
		unnest($6::text[]), unnest($7::text[]), unnest($8::bytea[])
	ON CONFLICT DO NOTHING`
	// insertWritesReplaceSet is insertWriteReplace over arrays, which
	// must not hold one key twice.
	insertWritesReplaceSet = `INSERT INTO agentgraph_writes (thread_id, ns, checkpoint_id, task_id, idx, channel, task_path, value)
	SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), unnest($4::text[]), unnest($5::integer[]),
		unnest($6::text[]), unnest($7::text[]), unnest($8::bytea[])
	ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO UPDATE SET
		channel = excluded.channel, task_path = excluded.task_path, value = excluded.value`

	// checkSet is checkPut and checkFence over arrays, a row per write
	// ($1 thread, $2 namespace, $3 checkpoint ID): $4 the parent the
	// write expects (NULL for a PutWrites, which checks none), $5 the
	// lease token of a fenced write (NULL when not fenced), and $6–$7 the
	// first and last index (from 1) of the write's blobs to verify in
	// $8–$11, as in checkPut. It returns a row per write that passes, in
	// order, and raises errStaleCode at the first that does not.
	checkSet = `SELECT agentgraph_check(
	(w.parent IS NULL OR COALESCE((SELECT c.id FROM agentgraph_checkpoints AS c
		WHERE c.thread_id = w.thread AND c.ns = w.ns AND c.id <> w.id ORDER BY c.id DESC LIMIT 1), '') = w.parent)
	AND (w.token IS NULL OR EXISTS (SELECT 1 FROM agentgraph_leases AS l WHERE l.thread_id = w.thread AND l.token = w.token AND l.token <> ''))
	AND NOT EXISTS (
		SELECT 1 FROM (SELECT unnest(($8::text[])[w.lo:w.hi]) AS channel, unnest(($9::bigint[])[w.lo:w.hi]) AS version,
			unnest(($10::bytea[])[w.lo:w.hi]) AS hash, unnest(($11::bigint[])[w.lo:w.hi]) AS depth) AS b
		WHERE (SELECT x.hash = b.hash AND (b.depth < 0 OR x.depth = b.depth) FROM agentgraph_blobs AS x
			WHERE x.thread_id = w.thread AND x.ns = w.ns AND x.channel = b.channel AND x.version = b.version LIMIT 1) IS NOT TRUE))
	FROM (SELECT unnest($1::text[]) AS thread, unnest($2::text[]) AS ns, unnest($3::text[]) AS id, unnest($4::text[]) AS parent,
		unnest($5::text[]) AS token, unnest($6::integer[]) AS lo, unnest($7::integer[]) AS hi) AS w`
)

// groupOp is a write of the group: the Puts and PutWrites of one call, in
// order, or, for a test's write (DoInGroup), the statements raw queues.
type groupOp struct {
	items []batchItem
	raw   func(*pgx.Batch)
}

// batchItem is a Put (plan) or a PutWrites (ref, writes and, when fenced,
// lease).
type batchItem struct {
	plan   *putPlan
	ref    checkpoint.Ref
	writes []checkpoint.Write
	lease  *checkpoint.Lease
}

// queue queues op's statements, one by one, in b; upsert is its Puts'
// (see putPlan.queue).
func (op groupOp) queue(b *pgx.Batch, upsert bool) {
	if op.raw != nil {
		op.raw(b)
		return
	}
	for _, it := range op.items {
		if it.plan != nil {
			it.plan.queue(b, upsert)
		} else {
			queueWrites(b, it.ref, it.writes, it.lease)
		}
	}
}

// key returns the thread and namespace it writes.
func (it *batchItem) key() threadNS {
	if it.plan != nil {
		return threadNS{it.plan.cp.ThreadID, it.plan.cp.Namespace}
	}
	return threadNS{it.ref.ThreadID, it.ref.Namespace}
}

// fenced reports whether it is a fenced write.
func (it *batchItem) fenced() bool {
	if it.plan != nil {
		return it.plan.fenced
	}
	return it.lease != nil
}

// maxSetBytes bounds the bytes a set-based batch carries. Each of its
// arrays is a parameter of one message, which pgx refuses to encode above
// 1 GiB — an error of the whole batch, before it is sent, that no write
// can be told by — where statements send a message per value. A larger
// batch is sent as statements, whose cost its values' transfer outweighs.
const maxSetBytes = 64 << 20

// setBased reports whether every write of batch can be sent set-based.
func setBased(batch []*groupWrite) bool {
	n := 0
	for _, w := range batch {
		if w.Op.raw != nil {
			return false
		}
		for i := range w.Op.items {
			n += w.Op.items[i].size()
		}
	}
	return n <= maxSetBytes
}

// size returns about how many bytes it puts in a set-based batch's
// arrays.
func (it *batchItem) size() int {
	if p := it.plan; p != nil {
		cp := p.cp
		n := len(cp.ThreadID) + len(cp.Namespace) + len(cp.ID) + len(cp.ParentID) + len(cp.Shape) + len(cp.Frontier) +
			len(p.args[5].(string)) + len(p.args[6].(string))
		for i, b := range p.blobs {
			n += len(cp.ThreadID) + len(cp.Namespace) + len(p.names[i]) + len(b.Data) + 2*len(b.Hash)
		}
		return n
	}
	n := 0
	for _, w := range it.writes {
		n += len(it.ref.ThreadID) + len(it.ref.Namespace) + len(it.ref.ID) + len(w.TaskID) + len(w.Channel) + len(w.TaskPath) + len(w.Value)
	}
	return n
}

// What a statement of a set-based batch is, to tell whose its error is.
const (
	stmtLocks = iota
	stmtWrite // an insert, whose error is the batch's
	stmtBlobs // upsertBlobs
	stmtCheck
)

// setStmt is a statement of a set-based batch.
type setStmt struct {
	kind int
	// rows: for stmtCheck, the index in the batch of the write each row
	// checks.
	rows []int
	// written: for stmtBlobs, where to record that a blob was inserted.
	written map[blobKey]*bool
}

// blobKey is the key of a blob.
type blobKey struct {
	thread, ns, channel string
	version             int64
}

// setRun holds the arrays of a run of writes with one write at most per
// thread and namespace.
type setRun struct {
	// blobs
	bThread, bNS, bChannel []string
	bVersion               []int64
	bBase                  []*int64
	bDepth, bSize          []int64
	bHash, bData           [][]byte
	bWritten               []*bool // where to record that blob i was inserted
	// checkpoints
	cThread, cNS, cID, cParent []string
	cCreated                   []*time.Time
	cMeta, cVersions, cShape   []string
	cFrontier                  [][]byte
	// pending writes: those whose row, when stored already, is kept, and
	// those (index < 0) that replace it, each key once
	ignore, replace writeArrays
	replaceAt       map[writeKey]int
	// checks
	kThread, kNS, kID []string
	kParent, kToken   []*string
	kLo, kHi          []int32
	kChannel          []string
	kVersion, kDepth  []int64
	kHash             [][]byte
	rows              []int
}

// writeKey is the key of a pending write.
type writeKey struct {
	ref  checkpoint.Ref
	task string
	idx  int
}

// writeArrays are the arrays of a pending writes insert.
type writeArrays struct {
	thread, ns, id, task []string
	idx                  []int64
	channel, path        []string
	value                [][]byte
}

func (a *writeArrays) add(ref checkpoint.Ref, w checkpoint.Write) {
	a.thread, a.ns, a.id, a.task = append(a.thread, ref.ThreadID), append(a.ns, ref.Namespace), append(a.id, ref.ID), append(a.task, w.TaskID)
	a.idx = append(a.idx, int64(w.Idx))
	a.channel, a.path, a.value = append(a.channel, w.Channel), append(a.path, w.TaskPath), append(a.value, sqlsaver.NotNull(w.Value))
}

func (a *writeArrays) set(i int, w checkpoint.Write) {
	a.channel[i], a.path[i], a.value[i] = w.Channel, w.TaskPath, sqlsaver.NotNull(w.Value)
}

func (a *writeArrays) args() []any {
	return []any{a.thread, a.ns, a.id, a.task, a.idx, a.channel, a.path, a.value}
}

// runSizes counts what writes put in a run's arrays.
type runSizes struct{ writes, puts, blobs, checks, checked int }

// add counts it.
func (n *runSizes) add(it *batchItem) {
	n.writes++
	if p := it.plan; p != nil {
		n.puts++
		n.blobs += len(p.blobs)
		n.checks++
		n.checked += len(p.check[0].([]string))
	} else if it.lease != nil {
		n.checks++
	}
}

// newSetRun returns a run whose arrays are made for n, so that a batch's
// arrays are allocated once, not grown write by write (their garbage was
// 8 % of the bytes a 1,000-thread W5 run allocates).
func newSetRun(n runSizes) *setRun {
	return &setRun{
		bThread:   capped[[]string](n.blobs),
		bNS:       capped[[]string](n.blobs),
		bChannel:  capped[[]string](n.blobs),
		bVersion:  capped[[]int64](n.blobs),
		bBase:     capped[[]*int64](n.blobs),
		bDepth:    capped[[]int64](n.blobs),
		bSize:     capped[[]int64](n.blobs),
		bHash:     capped[[][]byte](n.blobs),
		bData:     capped[[][]byte](n.blobs),
		bWritten:  capped[[]*bool](n.blobs),
		cThread:   capped[[]string](n.puts),
		cNS:       capped[[]string](n.puts),
		cID:       capped[[]string](n.puts),
		cParent:   capped[[]string](n.puts),
		cCreated:  capped[[]*time.Time](n.puts),
		cMeta:     capped[[]string](n.puts),
		cVersions: capped[[]string](n.puts),
		cShape:    capped[[]string](n.puts),
		cFrontier: capped[[][]byte](n.puts),
		kThread:   capped[[]string](n.checks),
		kNS:       capped[[]string](n.checks),
		kID:       capped[[]string](n.checks),
		kParent:   capped[[]*string](n.checks),
		kToken:    capped[[]*string](n.checks),
		kLo:       capped[[]int32](n.checks),
		kHi:       capped[[]int32](n.checks),
		rows:      capped[[]int](n.checks),
		kChannel:  capped[[]string](n.checked),
		kVersion:  capped[[]int64](n.checked),
		kDepth:    capped[[]int64](n.checked),
		kHash:     capped[[][]byte](n.checked),
	}
}

// capped returns an empty slice with room for n elements, nil for none
// (as an array never appended to is).
func capped[S ~[]E, E any](n int) S {
	if n == 0 {
		return nil
	}
	return make(S, 0, n)
}

// add adds it, of the batch's write i, to r.
func (r *setRun) add(i int, it *batchItem) {
	if p := it.plan; p != nil {
		r.addPut(i, p)
		return
	}
	for _, w := range it.writes {
		if w.Idx >= 0 {
			r.ignore.add(it.ref, w) // a key twice: the first is kept, as one by one
			continue
		}
		k := writeKey{it.ref, w.TaskID, w.Idx}
		if j, ok := r.replaceAt[k]; ok {
			r.replace.set(j, w) // a key twice: the last is kept, as one by one
			continue
		}
		if r.replaceAt == nil {
			r.replaceAt = make(map[writeKey]int)
		}
		r.replaceAt[k] = len(r.replace.thread)
		r.replace.add(it.ref, w)
	}
	if it.lease != nil {
		r.addCheck(i, it.ref.ThreadID, it.ref.Namespace, "", nil, &it.lease.Token, nil, nil, nil, nil)
	}
}

func (r *setRun) addPut(i int, p *putPlan) {
	cp := p.cp
	for j, blob := range p.blobs {
		var base *int64
		if blob.Delta {
			base = &blob.Base
		}
		r.bThread, r.bNS, r.bChannel = append(r.bThread, cp.ThreadID), append(r.bNS, cp.Namespace), append(r.bChannel, p.names[j])
		r.bVersion, r.bBase, r.bDepth, r.bSize = append(r.bVersion, blob.Version), append(r.bBase, base), append(r.bDepth, blob.Depth), append(r.bSize, blob.Size)
		r.bHash, r.bData = append(r.bHash, blob.Hash[:]), append(r.bData, blob.Data)
		p.written[j] = false
		r.bWritten = append(r.bWritten, &p.written[j])
	}
	row := p.args // checkpointRow's
	r.cThread, r.cNS, r.cID, r.cParent = append(r.cThread, cp.ThreadID), append(r.cNS, cp.Namespace), append(r.cID, cp.ID), append(r.cParent, cp.ParentID)
	r.cCreated = append(r.cCreated, row[4].(*time.Time))
	r.cMeta, r.cVersions = append(r.cMeta, row[5].(string)), append(r.cVersions, row[6].(string))
	r.cFrontier, r.cShape = append(r.cFrontier, row[7].([]byte)), append(r.cShape, cp.Shape)
	var token *string
	if p.fenced {
		token = &p.lease.Token
	}
	parent := cp.ParentID
	r.addCheck(i, cp.ThreadID, cp.Namespace, cp.ID, &parent, token,
		p.check[0].([]string), p.check[1].([]int64), p.check[2].([][]byte), p.check[3].([]int64))
}

func (r *setRun) addCheck(i int, thread, ns, id string, parent, token *string, channels []string, versions []int64, hashes [][]byte, depths []int64) {
	r.kThread, r.kNS, r.kID, r.kParent, r.kToken = append(r.kThread, thread), append(r.kNS, ns), append(r.kID, id), append(r.kParent, parent), append(r.kToken, token)
	r.kLo = append(r.kLo, int32(len(r.kChannel)+1))
	r.kChannel, r.kVersion, r.kHash, r.kDepth = append(r.kChannel, channels...), append(r.kVersion, versions...), append(r.kHash, hashes...), append(r.kDepth, depths...)
	r.kHi = append(r.kHi, int32(len(r.kChannel)))
	r.rows = append(r.rows, i)
}

// queue queues r's statements in b and records them in stmts; upsert
// chooses the inserts with ON CONFLICT.
func (r *setRun) queue(b *pgx.Batch, stmts []setStmt, upsert bool) []setStmt {
	if len(r.bThread) > 0 {
		args := presize(r.bThread, r.bNS, r.bChannel, r.bVersion, r.bBase, r.bDepth, r.bSize, r.bHash, r.bData)
		if upsert {
			b.Queue(upsertBlobs, args...)
			written := make(map[blobKey]*bool, len(r.bWritten))
			for i, w := range r.bWritten {
				written[blobKey{r.bThread[i], r.bNS[i], r.bChannel[i], r.bVersion[i]}] = w
			}
			stmts = append(stmts, setStmt{kind: stmtBlobs, written: written})
		} else {
			b.Queue(insertBlobs, args...)
			stmts = append(stmts, setStmt{kind: stmtWrite})
		}
	}
	if len(r.cThread) > 0 {
		q := insertCheckpoints
		if upsert {
			q = upsertCheckpoints
		}
		b.Queue(q, presize(r.cThread, r.cNS, r.cID, r.cParent, r.cCreated, r.cMeta, r.cVersions, r.cFrontier, r.cShape)...)
		stmts = append(stmts, setStmt{kind: stmtWrite})
	}
	if len(r.ignore.thread) > 0 {
		b.Queue(insertWritesIgnoreSet, r.ignore.args()...)
		stmts = append(stmts, setStmt{kind: stmtWrite})
	}
	if len(r.replace.thread) > 0 {
		b.Queue(insertWritesReplaceSet, r.replace.args()...)
		stmts = append(stmts, setStmt{kind: stmtWrite})
	}
	if len(r.rows) > 0 {
		b.Queue(checkSet, presize(r.kThread, r.kNS, r.kID, r.kParent, r.kToken, r.kLo, r.kHi, r.kChannel, r.kVersion, r.kHash, r.kDepth)...)
		stmts = append(stmts, setStmt{kind: stmtCheck, rows: r.rows})
	}
	return stmts
}

// setBatch returns batch as a set-based pipelined batch and what each of
// its statements is; upsert chooses the inserts with ON CONFLICT.
func setBatch(batch []*groupWrite, upsert bool) (*pgx.Batch, []setStmt) {
	b := &pgx.Batch{}
	var items, fenced int
	for _, w := range batch {
		for i := range w.Op.items {
			items++
			if w.Op.items[i].fenced() {
				fenced++
			}
		}
	}
	shared, exclusive := capped[[]int64](fenced), capped[[]int64](items)
	for _, w := range batch {
		for _, it := range w.Op.items {
			k := it.key()
			if it.fenced() {
				shared = append(shared, leaseLockKey(k.thread))
			}
			exclusive = append(exclusive, threadLockKey(k.thread, k.ns))
		}
	}
	b.Queue(takeLocksInOrder, shared, exclusive)
	stmts := []setStmt{{kind: stmtLocks}}
	// The runs, cut in arrival order (see the top of the file), sized
	// first.
	runs := []runSizes{{}}
	keys := make(map[threadNS]bool, len(batch))
	for _, w := range batch {
		for j := range w.Op.items {
			it := &w.Op.items[j]
			if k := it.key(); keys[k] {
				clear(keys)
				runs = append(runs, runSizes{})
			}
			keys[it.key()] = true
			runs[len(runs)-1].add(it)
		}
	}
	r, n := newSetRun(runs[0]), 0
	for i, w := range batch {
		for j := range w.Op.items {
			if n == runs[0].writes {
				stmts = r.queue(b, stmts, upsert)
				runs = runs[1:]
				r, n = newSetRun(runs[0]), 0
			}
			r.add(i, &w.Op.items[j])
			n++
		}
	}
	return b, r.queue(b, stmts, upsert)
}

// sendSet sends b, whose statements are stmts, and reads its results. It
// returns, when a statement failed, the index in the batch of the write
// whose error it is, -1 when it is every write's (the locks', or the
// connection's), or -2 when it cannot be told (an insert's); and the
// error.
func (g *sender) sendSet(ctx context.Context, b *pgx.Batch, stmts []setStmt) (int, error) {
	c, err := g.connect(ctx)
	if err != nil {
		return -1, err
	}
	br := c.SendBatch(ctx, b)
	failed := -1
	for _, st := range stmts {
		var n int
		switch st.kind {
		case stmtCheck:
			n, err = countRows(br, nil)
		case stmtBlobs:
			n, err = countRows(br, func(rows pgx.Rows) error {
				var k blobKey
				if err := rows.Scan(&k.thread, &k.ns, &k.channel, &k.version); err != nil {
					return err
				}
				if w := st.written[k]; w != nil {
					*w = true
				}
				return nil
			})
		default:
			_, err = br.Exec()
		}
		if err == nil {
			continue
		}
		pe, ok := errors.AsType[*pgconn.PgError](err)
		switch {
		case !ok || st.kind == stmtLocks:
		case st.kind == stmtCheck && pe.Code == errStaleCode && n < len(st.rows):
			failed = st.rows[n] // the rows before it passed
		default:
			failed = -2
		}
		break
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	g.dropIfClosed(err)
	return failed, err
}

// countRows reads the rows of br's next result, calling each (when set)
// for each, and returns how many it read before it ended or failed.
func countRows(br pgx.BatchResults, each func(pgx.Rows) error) (int, error) {
	rows, err := br.Query()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if each != nil {
			if err := each(rows); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, rows.Err()
}

// commitSet commits batch set-based, setting each write's err, and
// returns the writes left to send as statements (nil when none is).
func (g *sender) commitSet(ctx context.Context, batch []*groupWrite) []*groupWrite {
	upsert := false
	for len(batch) > 0 {
		b, stmts := setBatch(batch, upsert)
		g.sets.Add(1)
		failed, err := g.sendSet(ctx, b, stmts)
		switch {
		case err == nil:
			for _, w := range batch {
				w.Err = nil
				for _, it := range w.Op.items {
					if it.plan != nil && !upsert {
						for j := range it.plan.written {
							it.plan.written[j] = true // or the insert failed
						}
					}
				}
			}
			return nil
		case failed == -1:
			for _, w := range batch {
				w.Err = err
			}
			return nil
		case failed == -2 && !upsert && isUniqueViolation(err):
			// A blob stored already, a checkpoint written again.
			g.upserts.Add(1)
			upsert = true
			continue
		case failed == -2:
			g.fallbacks.Add(1)
			return batch
		}
		// A write's check failed, which rolled the batch back: it alone
		// gets the error; the others go again.
		g.refused.Add(1)
		batch[failed].Err = err
		batch = slices.Delete(batch, failed, failed+1)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique violation.
func isUniqueViolation(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "23505"
}
