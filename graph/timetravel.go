package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Snapshot is the state of a thread at one checkpoint.
type Snapshot[S any] struct {
	// Values is the state. For the latest checkpoint of a thread it
	// includes the writes of tasks that finished in a step that then failed
	// or paused.
	Values S
	// Next names the tasks that will run when the thread is resumed
	// (triggered nodes by name, then Send targets).
	Next []string
	// Tasks describes those tasks, with their errors and interrupts.
	Tasks []TaskInfo
	// Interrupts lists every pending interrupt.
	Interrupts   []Interruption
	CheckpointID string
	ParentID     string
	Metadata     checkpoint.Metadata
	CreatedAt    time.Time
}

// TaskInfo describes a task of a checkpoint's next step.
type TaskInfo struct {
	ID   string
	Name string
	// Done reports that the task finished and its writes are saved.
	Done bool
	// Error is the error of its last attempt, if it failed.
	Error string
	// Interrupts are the interrupts the task raised in this step. A task
	// answered by a resume keeps them until the step completes, finished
	// or not (as LangGraph's tasks do); [Snapshot.Interrupts] lists only
	// those still pending.
	Interrupts []Interruption
	// Writes is what the task wrote, when it finished (LangGraph's
	// tasks[].result).
	Writes Writes
}

// GetState returns the latest checkpoint of the thread given with
// [WithThread] (or the one given with [WithCheckpointID]). A thread with no
// checkpoint gives an empty snapshot.
func (g *Graph[S]) GetState(ctx context.Context, opts ...RunOption) (*Snapshot[S], error) {
	if err := g.compiled(); err != nil {
		return nil, err
	}
	l := g.newLoop(opts)
	if l.saver == nil {
		return nil, ErrNoCheckpointer
	}
	if l.cfg.thread == "" {
		return nil, ErrNoThread
	}
	t, err := l.saver.Get(ctx, checkpoint.Ref{ThreadID: l.cfg.thread, ID: l.cfg.checkpointID})
	if errors.Is(err, checkpoint.ErrNotFound) && l.cfg.checkpointID == "" {
		return &Snapshot[S]{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("graph: loading checkpoint of thread %q: %w", l.cfg.thread, err)
	}
	return l.snapshot(t, l.cfg.checkpointID == "")
}

// snapshot builds the Snapshot of a checkpoint; applyDone merges the
// writes of finished tasks into the values.
func (l *loop[S]) snapshot(t *checkpoint.Tuple, applyDone bool) (*Snapshot[S], error) {
	if err := l.restore(t); err != nil {
		return nil, err
	}
	if err := l.restorePending(t); err != nil {
		return nil, err
	}
	l.step = t.Metadata.Step + 1
	snap := &Snapshot[S]{CheckpointID: t.ID, ParentID: t.ParentID, Metadata: t.Metadata, CreatedAt: t.CreatedAt}
	tasks := l.prepare()
	var done []*task[S]
	for _, tk := range tasks {
		info := TaskInfo{ID: tk.hdr.ID(), Name: tk.name, Done: tk.done}
		if r := l.restored[info.ID]; r != nil {
			info.Error = r.err
			info.Interrupts = r.interrupts
			if !r.done {
				snap.Interrupts = append(snap.Interrupts, r.interrupts...)
			}
		}
		if tk.done {
			info.Writes = l.g.writesView(&tk.out)
		}
		snap.Tasks = append(snap.Tasks, info)
		if tk.done && applyDone {
			done = append(done, tk)
			continue
		}
		snap.Next = append(snap.Next, tk.name)
	}
	if len(done) > 0 {
		if err := l.merge(done, &l.vals); err != nil {
			return nil, err
		}
	}
	snap.Values = l.vals
	return snap, nil
}

// HistoryOption narrows [Graph.History]; it is made by [WithLimit],
// [WithBefore] and [WithFilter].
type HistoryOption interface{ applyHistory(*historyConfig) }

// historyOption is a HistoryOption that is a function.
type historyOption func(*historyConfig)

func (f historyOption) applyHistory(c *historyConfig) { f(c) }

// historyConfig is what the options of a History call chose.
type historyConfig struct {
	limit  int
	before string
	filter map[string]any
}

// Limit keeps at most n snapshots.
func WithLimit(n int) HistoryOption { return historyOption(func(c *historyConfig) { c.limit = n }) }

// Before keeps snapshots older than the checkpoint id.
func WithBefore(id string) HistoryOption {
	return historyOption(func(c *historyConfig) { c.before = id })
}

// Filter keeps snapshots whose metadata has these values ("source",
// "step", or keys given with [WithMetadata]).
func WithFilter(m map[string]any) HistoryOption {
	return historyOption(func(c *historyConfig) { c.filter = m })
}

// History yields the thread's checkpoints newest first, forks included.
// Pending writes are not applied to the values, so each snapshot's Next
// lists every task of its next step.
func (g *Graph[S]) History(ctx context.Context, thread string, opts ...HistoryOption) iter.Seq2[*Snapshot[S], error] {
	return func(yield func(*Snapshot[S], error) bool) {
		if err := g.compiled(); err != nil {
			yield(nil, err)
			return
		}
		if g.saver == nil {
			yield(nil, ErrNoCheckpointer)
			return
		}
		var c historyConfig
		for _, o := range opts {
			if o != nil {
				o.applyHistory(&c)
			}
		}
		root := ""
		lo := checkpoint.ListOptions{Namespace: &root, Limit: c.limit, Before: c.before, Filter: c.filter}
		for t, err := range g.saver.List(ctx, thread, lo) {
			if err != nil {
				yield(nil, err)
				return
			}
			l := g.newLoop([]RunOption{WithThread(thread)})
			snap, err := l.snapshot(t, false)
			if !yield(snap, err) || err != nil {
				return
			}
		}
	}
}

// Special values of asNode for [Graph.UpdateState].
const (
	// AsInput applies the values as new input: the run restarts from
	// Start when resumed.
	AsInput = "__input__"
	// AsCopy forks the checkpoint unchanged (the values are ignored): a
	// sibling of it that can be resumed independently.
	AsCopy = "__copy__"
)

// UpdateState writes values to the thread as if node asNode had returned
// them: they go through the reducers, and asNode's edges and branches
// decide what runs next. asNode may be [End] (finish: nothing runs next),
// [AsInput] or [AsCopy]; empty means the node that ran last. It writes a new
// checkpoint (source "update", or "fork" for AsCopy) after the latest one,
// or after the one given with [WithCheckpointID] — which forks the history —
// and returns its ID.
func (g *Graph[S]) UpdateState(ctx context.Context, values S, asNode string, opts ...RunOption) (id string, err error) {
	if err := g.compiled(); err != nil {
		return "", err
	}
	l := g.newLoop(opts)
	if l.saver == nil {
		return "", ErrNoCheckpointer
	}
	if l.cfg.thread == "" {
		return "", ErrNoThread
	}
	lease, err := g.acquireLease(ctx, l.saver, &l.cfg)
	if err != nil {
		return "", err
	}
	if lease != nil {
		ctx, l.saver = lease.fenced(ctx, l.saver)
		defer func() {
			if lost := lease.release(ctx); lost != nil && err == nil {
				id, err = "", lost
			}
		}()
	}
	l.fork = l.cfg.checkpointID != "" || asNode == AsCopy
	t, err := l.saver.Get(ctx, checkpoint.Ref{ThreadID: l.cfg.thread, ID: l.cfg.checkpointID})
	if err != nil && !(errors.Is(err, checkpoint.ErrNotFound) && l.cfg.checkpointID == "") {
		return "", fmt.Errorf("graph: loading checkpoint of thread %q: %w", l.cfg.thread, err)
	}
	metaStep := -2
	if t != nil {
		if err := l.restore(t); err != nil {
			return "", err
		}
		metaStep = t.Metadata.Step
	}
	l.step = metaStep + 1
	source := "update"
	switch {
	case asNode == AsCopy:
		if t == nil {
			return "", fmt.Errorf("%w: thread %q has no checkpoint to copy", ErrNothingToResume, l.cfg.thread)
		}
		source = "fork"
		l.cpID = t.ParentID
		l.saved = make([]int64, len(l.saved))
	case asNode == AsInput:
		l.fr = frontier[S]{input: &values, joins: l.fr.joins}
		source = "input"
	case asNode == End:
		if t != nil {
			if err := l.restorePending(t); err != nil {
				return "", err
			}
			tasks := l.prepare()
			var done []*task[S]
			for _, tk := range tasks {
				if tk.done {
					done = append(done, tk)
				}
			}
			done = append(done, &task[S]{hdr: new(taskHeader), name: End, out: values})
			if _, err := l.mergeVersions(done, &l.vals, true); err != nil {
				return "", err
			}
		}
		l.fr = frontier[S]{joins: l.fr.joins}
	default:
		if asNode == "" {
			asNode = l.lastNode(t)
			if asNode == "" {
				return "", errors.New("graph: ambiguous update, specify asNode")
			}
		}
		if asNode != Start && g.nodes[asNode] == nil {
			return "", fmt.Errorf("graph: node %q does not exist", asNode)
		}
		if t != nil && l.cfg.checkpointID == "" {
			// On the latest checkpoint, the writes of tasks that finished
			// in an interrupted or failed step count, as in GetState.
			if err := l.restorePending(t); err != nil {
				return "", err
			}
			var done []*task[S]
			for _, tk := range l.prepare() {
				if tk.done {
					done = append(done, tk)
				}
			}
			if len(done) > 0 {
				if _, err := l.mergeVersions(done, &l.vals, true); err != nil {
					return "", err
				}
			}
		}
		rctx := &taskCtx{}
		rctx.hdr.env = &taskEnv{Context: ctx, run: &runShared{ns: l.ns, stop: l.step + 1}, emit: noEmit}
		rctx.hdr.name, rctx.hdr.step = &asNode, l.step
		tk := &task[S]{hdr: &rctx.hdr, name: asNode, node: g.nodes[asNode], input: l.vals, out: values}
		if asNode == Start {
			l.fr.input = &values
		}
		if err := l.resolve(rctx, tk, nil, nil); err != nil {
			return "", &NodeError{Node: asNode, Err: err}
		}
		if _, err := l.apply([]*task[S]{tk}); err != nil {
			return "", err
		}
	}
	if err := l.save(ctx, source); err != nil {
		return "", err
	}
	return l.cpID, nil
}

// lastNode is the single node that wrote the checkpoint, Start for an
// input checkpoint, or "" when ambiguous.
func (l *loop[S]) lastNode(t *checkpoint.Tuple) string {
	if t == nil || t.Metadata.Source == "input" {
		return Start
	}
	last := sortedUnique(append([]string(nil), l.fr.last...))
	if len(last) == 1 {
		return last[0]
	}
	return ""
}
