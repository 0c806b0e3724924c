package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit: the one-round-trip writes of concurrent callers (Puts and
// PutWrites, see pipeline.go) share pipelined batches, so that many
// threads checkpointing on one Saver pay one round trip and one commit per
// batch instead of one per write.
//
// It is the SQLite saver's leader/follower scheme, without a goroutine of
// its own. A write that arrives while no batch of the group is in flight
// is its own batch, sent at once on the caller's goroutine: a lone writer
// waits for nobody. A write that arrives while one is in flight queues.
// When the leader's batch ends, it takes the queue (up to maxBatch writes,
// in arrival order) as the next batch and hands it to the goroutine of its
// first write, which sends it as the next leader. Each caller waits for
// its own write, so one thread's writes reach the queue in the order it
// makes them, and a batch keeps arrival order: per-thread order holds.
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
// A caller whose context is done while its write is still queued is
// dropped (the write is never made) and gets the context's error; a write
// already taken into a batch is committed or refused with the batch,
// whatever its context, and its caller is told which.

// maxBatch caps the writes of one batch.
const maxBatch = 256

// errSaverClosed is the error of a write queued or made after Close.
var errSaverClosed = errors.New("checkpoint/postgres: saver closed")

// groupWrite is one write waiting in, or taken by, the group.
type groupWrite struct {
	ctx   context.Context // the caller's
	queue func(*pgx.Batch)
	err   error
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
	busy   bool // a leader's batch is in flight
	closed bool
	// conn is the connection the leaders send their batches on, taken
	// from the pool by the first and kept while batches follow each other
	// (only the leader uses it), so that a leader does not wait for a
	// connection behind the pool's other users at every batch; it goes
	// back to the pool when the group turns idle.
	conn *pgxpool.Conn
}

// do sends the statements that queue queues, in a batch of pool shared
// with the writes queued beside it, and returns their error.
func (g *group) do(ctx context.Context, pool *pgxpool.Pool, queue func(*pgx.Batch)) error {
	w := &groupWrite{ctx: ctx, queue: queue}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errSaverClosed
	}
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		g.lead(pool, []*groupWrite{w})
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
		g.lead(pool, w.batch)
	}
	return w.err
}

// lead sends batch, then hands the next batch to its first write's
// goroutine, or marks the group idle.
func (g *group) lead(pool *pgxpool.Pool, batch []*groupWrite) {
	g.commit(pool, batch)
	for _, w := range batch[1:] {
		w.done <- struct{}{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := g.take()
	if len(next) == 0 {
		if g.conn != nil {
			g.conn.Release()
			g.conn = nil
		}
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

// close fails the queued writes and waits for the batch in flight and the
// batches already taken. Writes made after it fail.
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

// commit sends the writes of batch as one pipelined batch (one implicit
// transaction), setting each write's err. A lone write is sent under its
// caller's context.
func (g *group) commit(pool *pgxpool.Pool, batch []*groupWrite) {
	if len(batch) == 1 {
		w := batch[0]
		b := &pgx.Batch{}
		w.queue(b)
		_, w.err = g.send(w.ctx, pool, b)
		return
	}
	// The batch runs under a context no caller can cancel: one caller
	// giving up must not undo the others' writes.
	ctx := context.WithoutCancel(batch[0].ctx)
	batch = slices.Clone(batch) // the leader's is the list to tell
	for len(batch) > 0 {
		b := &pgx.Batch{}
		ends := make([]int, len(batch)) // ends[i]: the statements of batch[:i+1]
		for i, w := range batch {
			w.queue(b)
			ends[i] = b.Len()
		}
		failed, err := g.send(ctx, pool, b)
		if err == nil {
			for _, w := range batch {
				w.err = nil
			}
			return
		}
		if failed < 0 {
			for _, w := range batch {
				w.err = err
			}
			return
		}
		// One statement failed, which rolled the batch back: its write
		// alone gets the error; the others go again.
		i, _ := slices.BinarySearch(ends, failed+1)
		batch[i].err = err
		batch = slices.Delete(batch, i, i+1)
	}
}

// send sends b and reads its results in order. It returns the index of
// the statement that failed, with its error, or -1 with the error of the
// batch.
func (g *group) send(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) (int, error) {
	if g.conn == nil {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return -1, err
		}
		g.conn = c
	}
	failed, err := sendOn(ctx, g.conn, b)
	if err != nil && g.conn.Conn().IsClosed() {
		g.conn.Release() // the pool drops a closed connection
		g.conn = nil
	}
	return failed, err
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
