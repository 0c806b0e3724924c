package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"
	"unsafe"

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
	// Done reports that the task finished: its writes are saved, or —
	// for the only task of its step, which saves none — the checkpoint
	// its step produced exists (in a snapshot of an older checkpoint).
	Done bool
	// Error is the error of its last attempt, if it failed.
	Error string
	// Interrupts are the interrupts the task raised in this step. A task
	// answered by a resume keeps them until the step completes, finished
	// or not (as LangGraph's tasks do); [Snapshot.Interrupts] lists only
	// those still pending.
	Interrupts []Interruption
	// Writes is what the task wrote, when it finished (LangGraph's
	// tasks[].result). For the only task of a step it is derived from the
	// checkpoint the step produced: each field whose version changed, with
	// a write of the same effect — the new value of a last-value field,
	// the elements appended, the amount added, the entries set or
	// deleted, or else an overwrite with the new value.
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
		return nil, &SaverError{Op: opLoad, Thread: l.cfg.thread, Err: err}
	}
	snap, err := l.snapshot(t, l.cfg.checkpointID == "")
	if err != nil || l.cfg.checkpointID == "" || !loneTaskPending(snap) {
		return snap, err
	}
	child, err := g.stepChild(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("graph: loading the checkpoint after %s: %w", t.ID, err)
	}
	if err := l.completeLoneTask(snap, t, child); err != nil {
		return nil, err
	}
	return snap, nil
}

// loneTaskPending reports whether the snapshot's next step has one task,
// not done: one whose writes the checkpoint after it may tell.
func loneTaskPending[S any](snap *Snapshot[S]) bool {
	return len(snap.Tasks) == 1 && !snap.Tasks[0].Done
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
		// The checkpoints each step produced, by the one it ran from:
		// newest first, a checkpoint comes after its children.
		children := map[string]*checkpoint.Tuple{}
		for t, err := range g.saver.List(ctx, thread, lo) {
			if err != nil {
				yield(nil, err)
				return
			}
			if t.Metadata.Source == "loop" && t.ParentID != "" {
				if o, ok := children[t.ParentID]; !ok || t.ID < o.ID {
					children[t.ParentID] = t
				}
			}
			l := g.newLoop([]RunOption{WithThread(thread)})
			snap, err := l.snapshot(t, false)
			if err == nil && loneTaskPending(snap) {
				child := children[t.ID]
				if child != nil && !isStepChild(t, child) {
					child = nil
				}
				if child == nil && (c.before != "" || c.filter != nil) {
					// Its child may be outside what is listed.
					child, err = g.stepChild(ctx, t)
				}
				if err == nil {
					err = l.completeLoneTask(snap, t, child)
				}
			}
			delete(children, t.ID)
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
		return "", &SaverError{Op: opLoad, Thread: l.cfg.thread, Err: err}
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
		rctx.hdr.env = &taskEnv{Context: ctx, run: &runShared{ns: l.ns, stop: l.step + 1, names: g.hdrNames}, emit: noEmit}
		rctx.hdr.setPos(l.step, 0, false, asNode, g.nameIndex(asNode, g.nodes[asNode]))
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

// A step of one task saves no pending writes (the checkpoint after it
// records what the task did), so a snapshot of the checkpoint the step ran
// from would show that task as not done. LangGraph saves them; saving them
// costs every step an encoding and a write to the saver, so instead the
// snapshot of an older checkpoint derives them, when it is read, from the
// checkpoint the step produced: the fields whose version changed, each
// with a write that turns the value before into the value after.

// stepChild returns the checkpoint that the step after t produced — the
// oldest of t's children of source "loop" one step later — or nil.
func (g *Graph[S]) stepChild(ctx context.Context, t *checkpoint.Tuple) (*checkpoint.Tuple, error) {
	ns := t.Namespace
	lo := checkpoint.ListOptions{Namespace: &ns, Filter: map[string]any{"source": "loop", "step": t.Metadata.Step + 1}}
	var child *checkpoint.Tuple
	for c, err := range g.saver.List(ctx, t.ThreadID, lo) {
		if err != nil {
			return nil, err
		}
		if isStepChild(t, c) && (child == nil || c.ID < child.ID) {
			child = c
		}
	}
	return child, nil
}

// isStepChild reports whether c is a checkpoint the step after t
// produced.
func isStepChild(t, c *checkpoint.Tuple) bool {
	return c.ParentID == t.ID && c.Metadata.Source == "loop" && c.Metadata.Step == t.Metadata.Step+1
}

// completeLoneTask marks the single task of snap, the snapshot of t, done
// with the writes that made child from t, and drops its interrupts from
// the pending ones (the step went on past them).
func (l *loop[S]) completeLoneTask(snap *Snapshot[S], t, child *checkpoint.Tuple) error {
	if len(snap.Tasks) != 1 || snap.Tasks[0].Done || child == nil || t.Shape != l.g.shape || child.Shape != l.g.shape {
		return nil
	}
	w, err := l.g.derivedWrites(t, child)
	if err != nil {
		return corrupt(child, err)
	}
	info := &snap.Tasks[0]
	info.Done, info.Writes = true, w
	snap.Interrupts = slices.DeleteFunc(snap.Interrupts, func(in Interruption) bool {
		return slices.ContainsFunc(info.Interrupts, func(x Interruption) bool { return x.ID == in.ID })
	})
	return nil
}

// derivedWrites returns, for each field whose version differs between
// checkpoints t and child, a write that turns its value in t into its
// value in child: a last-value field's new value, the elements appended
// to a list or message history, the amount added to a sum, the entries
// set in a map — or, when none of these gives child's value, an
// overwrite with it.
func (g *Graph[S]) derivedWrites(t, child *checkpoint.Tuple) (Writes, error) {
	before := make(map[string]checkpoint.Channel, len(t.Channels))
	for _, ch := range t.Channels {
		before[ch.Name] = ch
	}
	w := Writes{}
	for _, ch := range child.Channels {
		fi, ok := g.sc.index[ch.Name]
		if !ok {
			continue
		}
		old, had := before[ch.Name]
		if had && old.Version == ch.Version {
			continue
		}
		b, err := g.writeBetween(fi, old.Value, ch.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", ch.Name, err)
		}
		w[ch.Name] = b
	}
	return w, nil
}

// writeBetween returns a write of field fi that turns the value old (nil:
// none) into cur; see derivedWrites.
func (g *Graph[S]) writeBetween(fi int, old, cur []byte) (json.RawMessage, error) {
	for _, cand := range writeCandidates(old, cur) {
		if b, ok := g.reproduces(fi, old, cand, cur); ok {
			return b, nil
		}
	}
	var s S
	c := g.sc.ch(unsafe.Pointer(&s), fi)
	if err := c.UnmarshalJSON(cur); err != nil {
		return nil, err
	}
	c.WriteValue()
	return c.MarshalWrite()
}

// reproduces returns write w of field fi as the field encodes it, when
// applying it to the value old gives the value cur.
func (g *Graph[S]) reproduces(fi int, old, w, cur []byte) (json.RawMessage, bool) {
	var s, ws S
	c := g.sc.ch(unsafe.Pointer(&s), fi)
	if old != nil && c.UnmarshalJSON(old) != nil {
		return nil, false
	}
	wc := g.sc.ch(unsafe.Pointer(&ws), fi)
	if wc.UnmarshalWrite(w) != nil || !wc.Written() {
		return nil, false
	}
	enc, err := wc.MarshalWrite()
	if err != nil || string(enc) == "null" {
		return nil, false
	}
	if c.MergeWrites([]stateChannel{wc}) != nil {
		return nil, false
	}
	got, err := c.MarshalJSON()
	if err != nil || !jsonEqual(got, cur) {
		return nil, false
	}
	return enc, true
}

// writeCandidates returns the writes writeBetween tries, in order.
func writeCandidates(old, cur []byte) [][]byte {
	cands := [][]byte{cur} // a last-value field's
	updates := func(u any) {
		if b, err := json.Marshal(map[string]any{"updates": u}); err == nil {
			cands = append(cands, b)
		}
	}
	none := old == nil || string(old) == "null"
	// A list's or a message history's appended elements.
	var was, is []json.RawMessage
	if json.Unmarshal(cur, &is) == nil && (none || json.Unmarshal(old, &was) == nil) &&
		len(was) <= len(is) && slices.EqualFunc(was, is[:len(was)], jsonEqual) {
		added := is[len(was):]
		updates(added)
		msgs := make([]map[string]json.RawMessage, len(added))
		for i, m := range added {
			msgs[i] = map[string]json.RawMessage{"m": m}
		}
		updates(msgs)
	}
	// A sum's increment.
	var a, b json.Number
	if json.Unmarshal(cur, &b) == nil && (none || json.Unmarshal(old, &a) == nil) {
		if a == "" {
			a = "0"
		}
		ai, err1 := a.Int64()
		bi, err2 := b.Int64()
		if err1 == nil && err2 == nil {
			updates([]int64{bi - ai})
		} else if af, err := a.Float64(); err == nil {
			if bf, err := b.Float64(); err == nil {
				updates([]float64{bf - af})
			}
		}
	}
	// A map's entries set and deleted.
	var om, cm map[string]json.RawMessage
	if json.Unmarshal(cur, &cm) == nil && cm != nil && (none || json.Unmarshal(old, &om) == nil) {
		var ops []map[string]any
		for _, k := range slices.Sorted(maps.Keys(cm)) {
			if v, ok := om[k]; !ok || !jsonEqual(v, cm[k]) {
				ops = append(ops, map[string]any{"k": k, "v": cm[k]})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(om)) {
			if _, ok := cm[k]; !ok {
				ops = append(ops, map[string]any{"k": k, "d": true})
			}
		}
		updates(ops)
	}
	return cands
}

// jsonEqual reports whether a and b are the same JSON, spacing aside.
func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
