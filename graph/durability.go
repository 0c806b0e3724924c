package graph

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// durabilityMode is the strategy behind a [Durability]: how a run writes
// the checkpoints it makes and the pending writes of its tasks. The loop
// makes a checkpoint current (its ID, step and parent) and calls
// checkpoint; the mode decides when it is built and saved, and streams a
// [ModeCheckpoints] event for every checkpoint it saves. A new mode is one
// more implementation here.
type durabilityMode[S any] interface {
	// checkpoint saves (or schedules) the loop's current checkpoint.
	checkpoint(ctx context.Context, l *loop[S], parent, source string, fork bool) error
	// writes saves (or schedules) pending writes against a checkpoint. It
	// may be called from several of a step's workers at once.
	writes(ctx context.Context, l *loop[S], ref checkpoint.Ref, ws []checkpoint.Write) error
	// failed reports that a write done in the background failed: the run
	// stops at its next step.
	failed() bool
	// close ends the run's saving: it waits for background writes, or
	// writes what was held back, and returns their first error.
	close(ctx context.Context, l *loop[S]) error
}

// newDurability returns the mode of d for a run of thread whose context is
// ctx, saving to saver.
func newDurability[S any](ctx context.Context, thread string, saver checkpoint.Saver, d Durability) durabilityMode[S] {
	switch d {
	case DurabilityAsync:
		return newAsyncDurability[S](ctx, thread, saver)
	case DurabilityExit:
		return &exitDurability[S]{}
	}
	return syncDurability[S]{}
}

// syncDurability writes every checkpoint and pending write before the run
// goes on.
type syncDurability[S any] struct{}

func (syncDurability[S]) checkpoint(ctx context.Context, l *loop[S], parent, source string, fork bool) error {
	cp, err := l.checkpoint(parent, source, fork)
	if err != nil {
		return err
	}
	if err := l.saver.Put(ctx, cp); err != nil {
		return &SaverError{Op: opSave, Thread: l.cfg.thread, Err: err}
	}
	l.emitCheckpoint(cp)
	return nil
}

func (syncDurability[S]) writes(ctx context.Context, l *loop[S], ref checkpoint.Ref, ws []checkpoint.Write) error {
	return l.saver.PutWrites(ctx, ref, ws)
}

func (syncDurability[S]) failed() bool { return false }

func (syncDurability[S]) close(context.Context, *loop[S]) error { return nil }

// asyncDurability performs saver calls in order on one goroutine, so that a
// run overlaps checkpointing with its next step without keeping a chain of
// pending futures alive. Up to asyncDepth calls may wait behind the one in
// progress (beyond that the run waits for the saver), so a crash loses at
// most that many steps; the run stops at the next step once a call failed.
//
// A saver that is a [checkpoint.Batcher] gets what queued up while it
// saved the previous batch as one batch: a run that makes steps faster
// than its saver commits them pays one commit for many steps rather than
// one each, which is what makes the background worth having on a
// database.
type asyncDurability[S any] struct {
	jobs   chan checkpoint.Op
	done   chan struct{}
	thread string
	err    error // set by the saving goroutine, read after done
	fail   atomic.Bool
}

const asyncDepth = 64

// newAsyncDurability starts the saving goroutine of a run of thread whose
// context is ctx, saving to saver. Its saver calls are made with ctx's
// values (the run's lease among them) but not its cancellation: a write
// already scheduled is made even when the run is cancelled, as a
// synchronous one would have been. The lease is put again above the layer
// that drops the cancellation, so that a saver finds it without walking
// through that layer, which allocates on every look-up.
func newAsyncDurability[S any](ctx context.Context, thread string, saver checkpoint.Saver) *asyncDurability[S] {
	a := &asyncDurability[S]{jobs: make(chan checkpoint.Op, asyncDepth), done: make(chan struct{}), thread: thread}
	lease, leased := checkpoint.LeaseFrom(ctx, thread)
	ctx = context.WithoutCancel(ctx)
	if leased {
		ctx = checkpoint.WithLease(ctx, lease)
	}
	go a.save(ctx, saver)
	return a
}

// save makes the queued saver calls until the queue is closed.
func (a *asyncDurability[S]) save(ctx context.Context, saver checkpoint.Saver) {
	defer close(a.done)
	batcher, _ := saver.(checkpoint.Batcher)
	var batch []checkpoint.Op
	for op := range a.jobs {
		batch = append(batch[:0], op)
		if batcher != nil {
			batch = takeQueued(a.jobs, batch)
		}
		if a.err != nil {
			continue // failed: the rest is dropped
		}
		var err error
		what := opSave
		if len(batch) > 1 {
			err = batcher.PutBatch(ctx, batch)
		} else if op.Checkpoint != nil {
			err = saver.Put(ctx, op.Checkpoint)
		} else {
			what = opWrites
			err = saver.PutWrites(ctx, op.Ref, op.Writes)
		}
		if err != nil {
			a.err = &SaverError{Op: what, Thread: a.thread, Err: err}
			a.fail.Store(true)
		}
		clear(batch) // keep no checkpoint alive until the next batch
	}
}

// takeQueued appends to batch the ops waiting in jobs, without waiting for
// more.
func takeQueued(jobs <-chan checkpoint.Op, batch []checkpoint.Op) []checkpoint.Op {
	for len(batch) < asyncDepth+1 {
		select {
		case op, ok := <-jobs:
			if !ok {
				return batch
			}
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

func (a *asyncDurability[S]) checkpoint(ctx context.Context, l *loop[S], parent, source string, fork bool) error {
	cp, err := l.checkpoint(parent, source, fork)
	if err != nil {
		return err
	}
	// Saved in the background: the event says it is on its way (a failure
	// stops the run at its next step and is its error).
	l.emitCheckpoint(cp)
	a.jobs <- checkpoint.Op{Checkpoint: cp}
	return nil
}

func (a *asyncDurability[S]) writes(ctx context.Context, l *loop[S], ref checkpoint.Ref, ws []checkpoint.Write) error {
	a.jobs <- checkpoint.Op{Ref: ref, Writes: ws}
	return nil
}

func (a *asyncDurability[S]) failed() bool { return a.fail.Load() }

func (a *asyncDurability[S]) close(context.Context, *loop[S]) error {
	close(a.jobs)
	<-a.done
	return a.err
}

// exitDurability writes one checkpoint, the last, when the run ends or
// pauses, with the pending writes made against it.
type exitDurability[S any] struct {
	mu      sync.Mutex // guards writes, which a step's workers append to
	held    []checkpoint.Write
	pending bool // a checkpoint was made
	parent  string
	source  string
	fork    bool
}

func (e *exitDurability[S]) checkpoint(ctx context.Context, l *loop[S], parent, source string, fork bool) error {
	e.mu.Lock()
	e.held = nil // they were made against an older checkpoint
	e.mu.Unlock()
	if !e.pending {
		// The one checkpoint written follows what the run started from.
		e.pending, e.parent, e.fork = true, parent, fork
	}
	e.source = source
	return nil
}

func (e *exitDurability[S]) writes(ctx context.Context, l *loop[S], ref checkpoint.Ref, ws []checkpoint.Write) error {
	e.mu.Lock()
	e.held = append(e.held, ws...)
	e.mu.Unlock()
	return nil
}

func (e *exitDurability[S]) failed() bool { return false }

func (e *exitDurability[S]) close(ctx context.Context, l *loop[S]) error {
	ctx = context.WithoutCancel(ctx)
	if e.pending {
		cp, err := l.checkpoint(e.parent, e.source, e.fork)
		if err != nil {
			return err
		}
		if err := l.saver.Put(ctx, cp); err != nil {
			return &SaverError{Op: opSave, Thread: l.cfg.thread, Err: err}
		}
		l.emitCheckpoint(cp)
	}
	if len(e.held) == 0 {
		return nil
	}
	byTask := make(map[string][]checkpoint.Write)
	var order []string
	for _, w := range e.held {
		if _, ok := byTask[w.TaskID]; !ok {
			order = append(order, w.TaskID)
		}
		byTask[w.TaskID] = append(byTask[w.TaskID], w)
	}
	ref := checkpoint.Ref{ThreadID: l.cfg.thread, Namespace: l.ns, ID: l.cpID}
	for _, id := range order {
		if err := l.saver.PutWrites(ctx, ref, byTask[id]); err != nil {
			return &SaverError{Op: opWrites, Thread: l.cfg.thread, Err: err}
		}
	}
	return nil
}
