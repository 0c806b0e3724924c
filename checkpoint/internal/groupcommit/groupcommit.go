// Package groupcommit lets the writes of concurrent callers share
// transactions: the group commit of the SQL savers.
//
// It is a leader/follower scheme, without a goroutine of its own. A write
// that arrives while no batch of the group is in flight is its own batch,
// committed at once on the caller's goroutine: a lone writer waits for
// nobody. A write that arrives while one is in flight queues. When the
// leader's batch ends, it takes the queue (up to MaxBatch writes, in
// arrival order) as the next batch and hands it to the goroutine of its
// first write, which commits it as the next leader. Each caller waits for
// its own write, so one caller's writes reach the queue in the order it
// makes them, and a batch keeps arrival order.
//
// A caller whose context is done while its write is still queued is
// dropped (the write is never made) and gets the context's error; a write
// already taken into a batch is committed or refused with the batch,
// whatever its context, and its caller is told which. How a batch is made
// — one transaction, what one write's failure does to the others — is the
// saver's Commit.
package groupcommit

import (
	"context"
	"slices"
	"sync"
)

// Write is one write waiting in, or taken by, a [Group].
type Write[T any] struct {
	// Ctx is the caller's context.
	Ctx context.Context
	// Op is what to write, as the caller gave it to [Group.Do].
	Op T
	// Err is the write's outcome, set by [Group.Commit].
	Err error
	// done receives once: when the write's batch ended (Err is set), or
	// when its goroutine is to lead batch.
	done  chan struct{}
	batch []*Write[T] // set for the next leader
}

// Group batches writes. Its exported fields are set before its first use
// and not changed afterwards.
type Group[T any] struct {
	// Commit makes the writes of batch (one or more, in arrival order),
	// setting the Err of each. One leader at a time calls it.
	Commit func(batch []*Write[T])
	// Idle, when set, is called when the group turns idle: no batch is in
	// flight and none is queued. It runs under the group's lock.
	Idle func()
	// MaxBatch caps the writes of one batch.
	MaxBatch int
	// Closed is the error of a write made or still queued once Close was
	// called.
	Closed error

	mu     sync.Mutex
	idle   sync.Cond // signalled when busy turns false
	queue  []*Write[T]
	busy   bool // a leader's batch is in flight
	closed bool
}

// Do makes the write op, in a batch shared with the writes queued beside
// it, and returns its error.
func (g *Group[T]) Do(ctx context.Context, op T) error {
	w := &Write[T]{Ctx: ctx, Op: op}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return g.Closed
	}
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		g.lead([]*Write[T]{w})
		return w.Err
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
		g.lead(w.batch)
	}
	return w.Err
}

// lead commits batch, then hands the next batch to its first write's
// goroutine, or marks the group idle.
func (g *Group[T]) lead(batch []*Write[T]) {
	g.Commit(batch)
	for _, w := range batch[1:] {
		w.done <- struct{}{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := g.take()
	if len(next) == 0 {
		if g.Idle != nil {
			g.Idle()
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
func (g *Group[T]) take() []*Write[T] {
	var batch []*Write[T]
	n := 0
	for _, w := range g.queue {
		if len(batch) == g.MaxBatch {
			break
		}
		n++
		if err := w.Ctx.Err(); err != nil {
			w.Err = err
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

// Close fails the queued writes with Closed and waits for the batch in
// flight and the batches already taken. Writes made after it fail.
func (g *Group[T]) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, w := range g.queue {
		w.Err = g.Closed
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

// Queued returns how many writes wait for the batch in flight.
func (g *Group[T]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Closing reports whether Close was called.
func (g *Group[T]) Closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}
