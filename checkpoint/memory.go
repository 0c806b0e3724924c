package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Memory is an in-memory [Saver] for tests and short-lived programs. Like
// the persistent savers it stores a channel's value once per version, so
// unchanged channels cost nothing per checkpoint. The zero value is an
// empty saver ready to use, like the one [NewMemory] returns. It is safe
// for concurrent use.
type Memory struct {
	mu      sync.RWMutex
	threads map[string]map[string]*memNS // thread → namespace

	// The namespace the last Put wrote to: runs put checkpoint after
	// checkpoint on the same one.
	last               *memNS
	lastThread, lastNS string

	leases leaseTable // see memory_lease.go
}

// memNS holds one namespace of one thread. Checkpoints and each channel's
// values are kept in slices sorted by ID and version: both almost always
// arrive in increasing order, so a Put appends instead of growing a map.
type memNS struct {
	cps    []*Checkpoint // sorted by ID
	blobs  map[string]*memBlobs
	writes map[string]map[writeKey]Write // checkpoint ID → writes
}

// memBlobs holds one channel's values, sorted by version.
type memBlobs struct {
	versions []int64
	values   [][]byte
}

func (b *memBlobs) get(v int64) ([]byte, bool) {
	i, ok := slices.BinarySearch(b.versions, v)
	if !ok {
		return nil, false
	}
	return b.values[i], true
}

// conflicts reports whether v is already stored with bytes other than
// value.
func (b *memBlobs) conflicts(v int64, value []byte) bool {
	if n := len(b.versions); n == 0 || b.versions[n-1] < v {
		return false
	}
	old, ok := b.get(v)
	return ok && !bytes.Equal(old, value)
}

// put stores value under v unless v is already there.
func (b *memBlobs) put(v int64, value []byte) {
	if n := len(b.versions); n == 0 || b.versions[n-1] < v {
		b.versions = append(b.versions, v)
		b.values = append(b.values, value)
		return
	}
	i, ok := slices.BinarySearch(b.versions, v)
	if ok {
		return
	}
	b.versions = slices.Insert(b.versions, i, v)
	b.values = slices.Insert(b.values, i, value)
}

func (n *memNS) get(id string) *Checkpoint {
	if id == "" {
		if len(n.cps) == 0 {
			return nil
		}
		return n.cps[len(n.cps)-1]
	}
	i, ok := slices.BinarySearchFunc(n.cps, id, func(cp *Checkpoint, id string) int { return strings.Compare(cp.ID, id) })
	if !ok {
		return nil
	}
	return n.cps[i]
}

// latest returns the ID of the latest checkpoint other than id, or "".
func (n *memNS) latest(id string) string {
	for i := len(n.cps) - 1; i >= 0; i-- {
		if n.cps[i].ID != id {
			return n.cps[i].ID
		}
	}
	return ""
}

// put stores cp, replacing a checkpoint with the same ID.
func (n *memNS) put(cp *Checkpoint) {
	if k := len(n.cps); k == 0 || n.cps[k-1].ID < cp.ID {
		n.cps = append(n.cps, cp)
		return
	}
	i, ok := slices.BinarySearchFunc(n.cps, cp.ID, func(c *Checkpoint, id string) int { return strings.Compare(c.ID, id) })
	if ok {
		n.cps[i] = cp
		return
	}
	n.cps = slices.Insert(n.cps, i, cp)
}

type writeKey struct {
	task string
	idx  int
}

// NewMemory returns an empty in-memory saver.
func NewMemory() *Memory {
	return new(Memory)
}

func (m *Memory) ns(thread, ns string, create bool) *memNS {
	if m.last != nil && m.lastThread == thread && m.lastNS == ns {
		return m.last
	}
	nss := m.threads[thread]
	if nss == nil {
		if !create {
			return nil
		}
		if m.threads == nil {
			m.threads = make(map[string]map[string]*memNS)
		}
		nss = make(map[string]*memNS)
		m.threads[thread] = nss
	}
	n := nss[ns]
	if n == nil && create {
		n = &memNS{blobs: make(map[string]*memBlobs), writes: make(map[string]map[writeKey]Write)}
		nss[ns] = n
	}
	return n
}

// Get implements [Saver].
func (m *Memory) Get(ctx context.Context, ref Ref) (*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var cp *Checkpoint
	n := m.ns(ref.ThreadID, ref.Namespace, false)
	if n != nil {
		cp = n.get(ref.ID)
	}
	if cp == nil {
		return nil, fmt.Errorf("checkpoint: thread %q namespace %q id %q: %w", ref.ThreadID, ref.Namespace, ref.ID, ErrNotFound)
	}
	return n.tuple(cp), nil
}

func (n *memNS) tuple(cp *Checkpoint) *Tuple {
	t := &Tuple{Checkpoint: *cp.Clone()}
	for i := range t.Channels {
		ch := &t.Channels[i]
		if bs := n.blobs[ch.Name]; bs != nil {
			if b, ok := bs.get(ch.Version); ok {
				ch.Value = slices.Clone(b)
			}
		}
	}
	for _, w := range n.writes[cp.ID] {
		w.Value = slices.Clone(w.Value)
		t.PendingWrites = append(t.PendingWrites, w)
	}
	sort.Slice(t.PendingWrites, func(i, j int) bool {
		a, b := t.PendingWrites[i], t.PendingWrites[j]
		if a.TaskID != b.TaskID {
			return a.TaskID < b.TaskID
		}
		return a.Idx < b.Idx
	})
	return t
}

// Put implements [Saver].
func (m *Memory) Put(ctx context.Context, cp *Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cp.ThreadID == "" || cp.ID == "" {
		return fmt.Errorf("checkpoint: put needs a thread ID and a checkpoint ID")
	}
	return m.fenced(ctx, cp.ThreadID, func() error { return m.put(cp) })
}

func (m *Memory) put(cp *Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.ns(cp.ThreadID, cp.Namespace, true)
	m.last, m.lastThread, m.lastNS = n, cp.ThreadID, cp.Namespace
	if err := n.check(cp); err != nil {
		return err
	}
	cp.Fork = false // not stored: a checkpoint read back is no fork
	sortChannels(cp.Channels)
	for i := range cp.Channels {
		ch := &cp.Channels[i]
		if ch.Value == nil {
			continue
		}
		bs := n.blobs[ch.Name]
		if bs == nil {
			bs = &memBlobs{}
			n.blobs[ch.Name] = bs
		}
		bs.put(ch.Version, ch.Value)
		ch.Value = nil // Put owns cp (see Saver.Put): its values now live in blobs
	}
	n.put(cp)
	return nil
}

// check returns the error Put returns for cp when storing it would fork
// the namespace silently or replace a stored value (see [Saver.Put]), and
// nil otherwise.
func (n *memNS) check(cp *Checkpoint) error {
	if !cp.Fork {
		if latest := n.latest(cp.ID); latest != cp.ParentID {
			return &ConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, CheckpointID: cp.ID, ParentID: cp.ParentID, LatestID: latest}
		}
	}
	for _, ch := range cp.Channels {
		if bs := n.blobs[ch.Name]; ch.Value != nil && bs != nil && bs.conflicts(ch.Version, ch.Value) {
			return &VersionConflictError{ThreadID: cp.ThreadID, Namespace: cp.Namespace, Channel: ch.Name, Version: ch.Version}
		}
	}
	return nil
}

// PutWrites implements [Saver].
func (m *Memory) PutWrites(ctx context.Context, ref Ref, writes []Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ref.ThreadID == "" || ref.ID == "" {
		return fmt.Errorf("checkpoint: put writes needs a thread ID and a checkpoint ID")
	}
	return m.fenced(ctx, ref.ThreadID, func() error { m.putWrites(ref, writes); return nil })
}

func (m *Memory) putWrites(ref Ref, writes []Write) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.ns(ref.ThreadID, ref.Namespace, true)
	ws := n.writes[ref.ID]
	if ws == nil {
		ws = make(map[writeKey]Write)
		n.writes[ref.ID] = ws
	}
	for _, w := range writes {
		k := writeKey{w.TaskID, w.Idx}
		if _, ok := ws[k]; ok && w.Idx >= 0 {
			continue
		}
		ws[k] = w
	}
}

// List implements [Saver].
func (m *Memory) List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error] {
	return func(yield func(*Tuple, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		type match struct {
			n  *memNS
			cp *Checkpoint
		}
		m.mu.RLock()
		var found []match
		for tid, nss := range m.threads {
			if threadID != "" && tid != threadID {
				continue
			}
			for ns, n := range nss {
				if opts.Namespace != nil && *opts.Namespace != ns {
					continue
				}
				for _, cp := range n.cps {
					if opts.Before != "" && cp.ID >= opts.Before {
						continue
					}
					if !cp.Metadata.Matches(opts.Filter) {
						continue
					}
					found = append(found, match{n, cp})
				}
			}
		}
		sort.Slice(found, func(i, j int) bool {
			a, b := found[i].cp, found[j].cp
			if a.ID != b.ID {
				return a.ID > b.ID
			}
			return strings.Compare(a.ThreadID+"\x00"+a.Namespace, b.ThreadID+"\x00"+b.Namespace) < 0
		})
		if opts.Limit > 0 && len(found) > opts.Limit {
			found = found[:opts.Limit]
		}
		// Copy out only the checkpoints that are yielded.
		out := make([]*Tuple, len(found))
		for i, f := range found {
			out[i] = f.n.tuple(f.cp)
		}
		m.mu.RUnlock()
		for _, t := range out {
			if !yield(t, nil) {
				return
			}
		}
	}
}

// DeleteThread implements [ThreadDeleter].
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.fenced(ctx, threadID, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.threads, threadID)
		if m.lastThread == threadID {
			m.last = nil
		}
		return nil
	})
}
