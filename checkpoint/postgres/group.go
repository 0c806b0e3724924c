package postgres

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit"
)

// Group commit: the one-round-trip writes of concurrent callers (Puts and
// PutWrites, see pipeline.go) share pipelined batches, so that many
// threads checkpointing on one Saver pay one round trip and one commit per
// batch instead of one per write.
//
// It is the SQLite saver's scheme (package groupcommit): a write that
// finds no batch of the group in flight is sent at once, alone; writes
// that arrive meanwhile share the next batch, in arrival order, so
// per-thread order holds.
//
// A batch is one implicit transaction: the writes' statements, each
// write's checks in its own last statement, then the Sync that commits.
// A write whose check fails raises an error that rolls the whole batch
// back (there is no savepoint to return to within a pipeline: the server
// skips everything up to the Sync); that write alone gets the error — its
// caller then makes it again the long way, which returns its own typed
// error (a conflict, a fenced lease) — and the others are sent again, in a
// new batch, without it. Any other error of a statement is its write's,
// and the others are sent again likewise; an error that is not a
// statement's (the connection's) is every write's of the batch.
//
// A batch of several of the saver's own writes is sent set-based first: a
// handful of statements over arrays whatever its size (set.go), with the
// same outcome for each write.

// Lock order. A batch takes the advisory locks of every write in it: each
// fenced write the shared lock of its thread's lease, each Put and
// PutWrites the exclusive lock of its thread and namespace, under which
// are all the rows the saver writes (checkpoints, blobs, pending writes),
// so that no two transactions wait for each other's rows. Batches of two
// processes (or two Savers) that write the same threads — a stale
// holder's write beside its successor's, several threads' Puts of one
// PutBatch — would take them in their own arrival orders and could wait
// for each other: the server breaks such a deadlock only after
// deadlock_timeout (a second by default), failing one batch, whose writes
// are then sent again and can meet the next one the same way. So every
// transaction of the saver that holds several of these locks takes them in
// one order — the lease locks (shared) by key, then the Put locks
// (exclusive) by key, as putInTx, DeleteThread and a single write do by
// themselves — and a batch whose statements would not, takes all of its
// locks first, in that order, in one statement, and is sent without the
// writes' own lock statements (orderLocks).

// takeLocksInOrder takes the lease locks $1 shared, then the Put locks $2
// exclusive, each list in key order: the aggregate evaluates its argument
// row by row in the subquery's order.
const takeLocksInOrder = `SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(k) ELSE pg_advisory_xact_lock_shared(k) END)
	FROM (SELECT DISTINCT k, x FROM (SELECT unnest($1::bigint[]) AS k, false AS x UNION ALL SELECT unnest($2::bigint[]), true) AS l
		ORDER BY x, k) AS o`

// orderLocks returns b, or, when b's statements take advisory locks in an
// order other than the saver's (see "Lock order" above), a batch whose
// first statement takes them all in order, followed by b's statements
// without their own lock statements (which would find every lock held),
// and origin: the index in b of each statement of the returned batch, -1
// for the first. origin is nil when b is returned.
func orderLocks(b *pgx.Batch) (*pgx.Batch, []int) {
	if lockStatements(b) < 2 {
		return b, nil // a lone write's: in order
	}
	var shared, exclusive []int64 // in the order b takes them, each once
	ordered := true
	take := func(key int64, x bool) {
		switch {
		case x && slices.Contains(exclusive, key), !x && slices.Contains(shared, key):
			return // held already
		case x:
			ordered = ordered && (len(exclusive) == 0 || key > exclusive[len(exclusive)-1])
			exclusive = append(exclusive, key)
		default:
			ordered = ordered && len(exclusive) == 0 && (len(shared) == 0 || key > shared[len(shared)-1])
			shared = append(shared, key)
		}
	}
	locks := 0
	for _, q := range b.QueuedQueries {
		switch q.SQL {
		case lockThread:
			take(q.Arguments[0].(int64), true)
			locks++
		case lockThreadFenced:
			take(q.Arguments[1].(int64), false)
			take(q.Arguments[0].(int64), true)
			locks++
		}
	}
	if ordered {
		return b, nil
	}
	o := &pgx.Batch{}
	o.Queue(takeLocksInOrder, shared, exclusive)
	origin := make([]int, 1, b.Len()-locks+1)
	origin[0] = -1
	for i, q := range b.QueuedQueries {
		if q.SQL != lockThread && q.SQL != lockThreadFenced {
			o.QueuedQueries = append(o.QueuedQueries, q)
			origin = append(origin, i)
		}
	}
	return o, origin
}

// lockStatements returns how many statements of b take locks.
func lockStatements(b *pgx.Batch) int {
	n := 0
	for _, q := range b.QueuedQueries {
		if q.SQL == lockThread || q.SQL == lockThreadFenced {
			n++
		}
	}
	return n
}

// maxBatch caps the writes of one batch.
const maxBatch = 256

// errSaverClosed is the error of a write queued or made after Close.
var errSaverClosed = errors.New("checkpoint/postgres: saver closed")

// groupWrite is one write waiting in, or taken by, the group.
type groupWrite = groupcommit.Write[groupOp]

// sender sends the group's batches.
type sender struct {
	pool *pgxpool.Pool
	// conn is the connection the leaders send their batches on, taken
	// from the pool by the first and kept while batches follow each other
	// (only the leader uses it), so that a leader does not wait for a
	// connection behind the pool's other users at every batch; it goes
	// back to the pool when the group turns idle.
	conn *pgxpool.Conn
	// sets, refused, upserts and fallbacks count the set-based batches
	// sent, the writes they refused at their check, the batches sent
	// again with ON CONFLICT and those sent again as statements, and
	// aloneUpserts the lone writes sent again with ON CONFLICT (for
	// tests).
	sets, refused, upserts, fallbacks, aloneUpserts atomic.Int64
}

// initGroup sets up the group commit of s's writes.
func (s *Saver) initGroup() {
	snd := &sender{pool: s.pool}
	s.sender = snd
	s.group.Commit = snd.commit
	s.group.Idle = snd.release
	s.group.MaxBatch = maxBatch
	s.group.Closed = errSaverClosed
}

// release gives the connection back to the pool.
func (g *sender) release() {
	if g.conn != nil {
		g.conn.Release()
		g.conn = nil
	}
}

// commit sends the writes of batch as one pipelined batch (one implicit
// transaction), setting each write's err. A lone write is sent under its
// caller's context (commitAlone).
func (g *sender) commit(batch []*groupWrite) {
	if len(batch) == 1 {
		w := batch[0]
		w.Err = g.commitAlone(w.Ctx, w.Op)
		return
	}
	// The batch runs under a context no caller can cancel: one caller
	// giving up must not undo the others' writes.
	ctx := context.WithoutCancel(batch[0].Ctx)
	batch = slices.Clone(batch) // the leader's is the list to tell
	if setBased(batch) {
		// Set-based (set.go); what it cannot tell apart by write is sent
		// again as statements.
		batch = g.commitSet(ctx, batch)
	}
	for len(batch) > 0 {
		b := &pgx.Batch{}
		ends := make([]int, len(batch)) // ends[i]: the statements of batch[:i+1]
		for i, w := range batch {
			w.Op.queue(b, true) // a unique violation would be its write's error
			ends[i] = b.Len()
		}
		ob, origin := orderLocks(b)
		failed, err := g.send(ctx, ob)
		if failed >= 0 && origin != nil {
			failed = origin[failed] // -1 when the lock statement failed: every write's error
		}
		if err == nil {
			for _, w := range batch {
				w.Err = nil
			}
			return
		}
		if failed < 0 {
			for _, w := range batch {
				w.Err = err
			}
			return
		}
		// One statement failed, which rolled the batch back: its write
		// alone gets the error; the others go again.
		i, _ := slices.BinarySearch(ends, failed+1)
		batch[i].Err = err
		batch = slices.Delete(batch, i, i+1)
	}
}

// commitAlone sends op, a lone write, as statements: its Puts' inserts
// without ON CONFLICT first, the cheaper statements for the server, with
// the check they leave to make (see putPlan.queue); a unique violation —
// a blob or a checkpoint stored already: a Put made again, a version
// another saver stored — rolls that batch back, and op is sent again
// upserted, which has the one-by-one semantics (a blob stored already is
// kept when its value is the same, a checkpoint row is replaced).
func (g *sender) commitAlone(ctx context.Context, op groupOp) error {
	b := &pgx.Batch{}
	op.queue(b, false)
	b, _ = orderLocks(b) // a PutBatch may write several threads
	_, err := g.send(ctx, b)
	if err == nil || !isUniqueViolation(err) || !op.hasPut() {
		return err
	}
	g.aloneUpserts.Add(1)
	b = &pgx.Batch{}
	op.queue(b, true)
	b, _ = orderLocks(b)
	_, err = g.send(ctx, b)
	return err
}

// hasPut reports whether op holds a Put, whose inserts its queue chooses.
func (op groupOp) hasPut() bool {
	for _, it := range op.items {
		if it.plan != nil {
			return true
		}
	}
	return false
}

// send sends b and reads its results in order. It returns the index of
// the statement that failed, with its error, or -1 with the error of the
// batch.
func (g *sender) send(ctx context.Context, b *pgx.Batch) (int, error) {
	c, err := g.connect(ctx)
	if err != nil {
		return -1, err
	}
	failed, err := sendOn(ctx, c, b)
	g.dropIfClosed(err)
	return failed, err
}

// connect returns the group's connection, taken from the pool when it
// has none.
func (g *sender) connect(ctx context.Context) (*pgxpool.Conn, error) {
	if g.conn == nil {
		c, err := g.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		g.conn = c
	}
	return g.conn, nil
}

// dropIfClosed gives the group's connection back after err when the
// connection closed (the pool drops it).
func (g *sender) dropIfClosed(err error) {
	if err != nil && g.conn != nil && g.conn.Conn().IsClosed() {
		g.conn.Release()
		g.conn = nil
	}
}

// sendOn sends b on c and reads its results in order.
func sendOn(ctx context.Context, c *pgxpool.Conn, b *pgx.Batch) (int, error) {
	br := c.SendBatch(ctx, b)
	failed := -1
	var err error
	for i, qq := range b.QueuedQueries {
		if qq.Fn != nil {
			err = qq.Fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			if _, ok := errors.AsType[*pgconn.PgError](err); ok {
				failed = i
			}
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return failed, err
}
