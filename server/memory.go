package server

import (
	"bytes"
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/server/internal/jsonb"
)

// MemoryBackend is a [Backend] and a [CronBackend] that holds threads,
// runs, their events, assistants and crons in the memory of one process, as [checkpoint.NewMemory] holds
// checkpoints: a restart forgets them. A [Server] made without
// [WithBackend] keeps its threads and runs in one of its own.
//
// Its memory stays bounded: it remembers a bounded number of ended runs
// (the oldest ended runs are forgotten: [Backend.Run] fails with
// [ErrNotFound] and [Backend.ListRuns] no longer lists them), and of the
// ended runs' events it keeps only those of runs created
// stream_resumable, up to a bound in bytes of event data beyond which the
// events of the runs that ended first, and that no stream reads, are
// dropped ([Backend.Events] then
// fails with an error a join of their stream reports). The events of a run
// that was not stream_resumable are dropped when it ended and no stream
// reads them but how it ended: its "error", if it failed, and its "end".
// The events of runs still pending or running are not bounded.
//
// The records it returns share nothing it changes later, but their maps
// and raw JSON may be shared with it and must not be modified; nor may
// the data given to [MemoryBackend.AppendEvent], which it keeps as given.
type MemoryBackend struct {
	memoryCrons // the crons; FireCron and DeleteThread below use it

	keptRuns       int
	keptEventBytes int64

	mu         sync.Mutex
	threads    map[string]*memThread
	runs       map[string]*memRun
	active     []*memRun // pending and running runs, oldest first
	assistants map[string]*memAssistant
	seq        int64
	ended      list.List // of *memRun: ended runs, oldest first (see keptRuns)
	kept       list.List // of *memRun: ended resumable runs keeping their events
	keptBytes  int64
	readers    map[string]int // run id → streams holding its events (see holdEvents)
}

// memThread is a thread of a MemoryBackend.
type memThread struct {
	rec ThreadRecord
	// resetTo, after a rollback, is the checkpoint the thread's next run
	// starts from ("" for an empty thread).
	resetTo *string
	runs    []*memRun // in creation order
}

// memRun is a run of a MemoryBackend, with its event log.
type memRun struct {
	rec             RunRecord
	seq             int64
	holder          string
	leaseExpires    time.Time
	cancelled       string // why it was cancelled; "" while it is not
	rollback        bool
	startCheckpoint string
	resetTo         *string // the rollback point its first claim took

	events     []Event
	nextEvent  int   // the id of the run's next event
	eventBytes int64 // of the events' names and data
	resumable  bool  // created stream_resumable: keeps its events once ended
	forgotten  bool  // ended, not resumable: its events were dropped but its error and end
	dropped    bool  // ended, resumable: its events were dropped past keptEventBytes
	endedElem  *list.Element
	keptElem   *list.Element
}

// memAssistant is an assistant of a MemoryBackend with its versions.
type memAssistant struct {
	cur      AssistantRecord
	versions []AssistantRecord // by version, ascending
	last     int               // the highest version made
}

// NewMemoryBackend returns an empty [MemoryBackend] that remembers the
// last [DefaultKeptRuns] ended runs and keeps [DefaultKeptEventBytes] of
// ended resumable runs' events.
func NewMemoryBackend() *MemoryBackend {
	return newMemoryBackend(DefaultKeptRuns, DefaultKeptEventBytes)
}

func newMemoryBackend(keptRuns int, keptEventBytes int64) *MemoryBackend {
	return &MemoryBackend{keptRuns: keptRuns, keptEventBytes: keptEventBytes,
		threads: map[string]*memThread{}, runs: map[string]*memRun{}, assistants: map[string]*memAssistant{}, readers: map[string]int{}}
}

// eventsDroppedError is the error of [MemoryBackend.Events] for a run whose
// events were dropped past its bound.
type eventsDroppedError struct {
	runID string
	bound int64
}

func (e *eventsDroppedError) Error() string {
	return fmt.Sprintf("the events of run %s were dropped: this server keeps at most %d bytes of ended runs' events (server.WithKeptEventBytes); the run's result and thread state remain", e.runID, e.bound)
}

// eventHolder is a Backend that drops the events of ended runs no stream
// reads (the MemoryBackend): a stream holds a run's events, from before
// the run is created, while it reads them.
type eventHolder interface {
	holdEvents(runID string) (release func())
}

// holdEvents keeps the events of run runID (made or to be made) until
// release is called (once), even once it ended.
func (b *MemoryBackend) holdEvents(runID string) func() {
	b.mu.Lock()
	b.readers[runID]++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.readers[runID]--; b.readers[runID] > 0 {
			return
		}
		delete(b.readers, runID)
		if r := b.runs[runID]; r != nil && r.rec.ended() {
			b.forgetEventsLocked(r)
			b.trimKeptLocked()
			b.trimEndedLocked()
		}
	}
}

// activeRuns returns the ids of the pending and running runs, oldest
// first.
func (b *MemoryBackend) activeRuns() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, len(b.active))
	for i, r := range b.active {
		ids[i] = r.rec.ID
	}
	return ids
}

// ---- copying ----

// cloneJSON returns a deep copy of v, a value as encoding/json decodes
// into an any.
func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneObject(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneJSON(x)
		}
		return out
	}
	return v
}

func cloneObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = cloneJSON(x)
	}
	return out
}

// plainJSON reports whether v holds only what encoding/json decodes into
// an any.
func plainJSON(v any) bool {
	switch v := v.(type) {
	case nil, string, float64, bool:
		return true
	case map[string]any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	case []any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	}
	return false
}

// storedObject returns m as a SQL Backend would store and read it back:
// a copy, with its values as encoding/json decodes them; nil is {}.
func storedObject(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	if plainJSON(m) {
		return cloneObject(m), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("server: memory backend: encoding %T: %w", m, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("server: memory backend: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// storedRaw returns a copy of raw JSON, def when it is empty.
func storedRaw(b json.RawMessage, def string) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(def)
	}
	return bytes.Clone(b)
}

func (t *memThread) record() ThreadRecord {
	r := t.rec
	r.Metadata, r.Config = cloneObject(r.Metadata), cloneObject(r.Config)
	return r
}

// record returns the run's record. A run's metadata never changes once
// stored: the record shares it.
func (r *memRun) record() RunRecord { return r.rec }

func (a AssistantRecord) clone() AssistantRecord {
	a.Config, a.Metadata = cloneObject(a.Config), cloneObject(a.Metadata)
	if a.Description != nil {
		d := *a.Description
		a.Description = &d
	}
	return a
}

// pageOf returns all[offset:offset+limit], within bounds.
func pageOf[T any](all []T, limit, offset int) []T {
	lo := min(max(offset, 0), len(all))
	return all[lo:min(lo+max(limit, 0), len(all))]
}

// ---- threads ----

// CreateThread implements [Backend].
func (b *MemoryBackend) CreateThread(ctx context.Context, t ThreadRecord, ifExists string) (ThreadRecord, error) {
	md, err := storedObject(t.Metadata)
	if err != nil {
		return t, err
	}
	cfg, err := storedObject(t.Config)
	if err != nil {
		return t, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old := b.threads[t.ID]; old != nil {
		if ifExists != "do_nothing" {
			return t, fmt.Errorf("thread %s: %w", t.ID, ErrExists)
		}
		return old.record(), nil
	}
	rec := ThreadRecord{ID: t.ID, CreatedAt: t.CreatedAt, UpdatedAt: t.CreatedAt, Metadata: md, Status: t.Status, Config: cfg,
		Values: storedRaw(t.Values, "null"), Interrupts: storedRaw(t.Interrupts, "{}")}
	th := &memThread{rec: rec}
	b.threads[t.ID] = th
	return th.record(), nil
}

// Thread implements [Backend].
func (b *MemoryBackend) Thread(ctx context.Context, id string) (ThreadRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[id]
	if t == nil {
		return ThreadRecord{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	return t.record(), nil
}

// threadOrder orders threads by the column asked, then by id.
func threadOrder(by string) (func(a, c *memThread) int, error) {
	var col func(a, c *memThread) int
	switch by {
	case "thread_id":
		col = func(a, c *memThread) int { return 0 }
	case "status":
		col = func(a, c *memThread) int { return strings.Compare(a.rec.Status, c.rec.Status) }
	case "updated_at":
		col = func(a, c *memThread) int { return a.rec.UpdatedAt.Compare(c.rec.UpdatedAt) }
	case "created_at", "":
		col = func(a, c *memThread) int { return a.rec.CreatedAt.Compare(c.rec.CreatedAt) }
	default:
		return nil, fmt.Errorf("server: memory backend: cannot sort threads by %q", by)
	}
	return func(a, c *memThread) int { return cmp.Or(col(a, c), strings.Compare(a.rec.ID, c.rec.ID)) }, nil
}

// SearchThreads implements [Backend].
func (b *MemoryBackend) SearchThreads(ctx context.Context, q ThreadQuery) ([]ThreadRecord, int, error) {
	order, err := threadOrder(q.SortBy)
	if err != nil {
		return nil, 0, err
	}
	md, err := storedObject(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	vals, err := storedObject(q.Values)
	if err != nil {
		return nil, 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var all []*memThread
	for _, t := range b.threads {
		if len(q.IDs) > 0 && !slices.Contains(q.IDs, t.rec.ID) ||
			q.Status != "" && t.rec.Status != q.Status ||
			!jsonb.Contains(t.rec.Metadata, md) {
			continue
		}
		if len(vals) > 0 {
			var v any
			if json.Unmarshal(t.rec.Values, &v) != nil || !jsonb.Contains(v, vals) {
				continue
			}
		}
		all = append(all, t)
	}
	total := len(all)
	if q.Limit == 0 {
		return nil, total, nil
	}
	slices.SortFunc(all, func(a, c *memThread) int {
		if q.Desc {
			return order(c, a)
		}
		return order(a, c)
	})
	if q.Limit < 0 {
		q.Limit = total
	}
	var out []ThreadRecord
	for _, t := range pageOf(all, q.Limit, q.Offset) {
		out = append(out, t.record())
	}
	return out, total, nil
}

// PatchThread implements [Backend].
func (b *MemoryBackend) PatchThread(ctx context.Context, id string, metadata map[string]any) (ThreadRecord, error) {
	md, err := storedObject(metadata)
	if err != nil {
		return ThreadRecord{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[id]
	if t == nil {
		return ThreadRecord{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	if g, ok := md["graph_id"]; ok && g != nil {
		if cur, ok := t.rec.Metadata["graph_id"]; ok && cur != nil && cur != g {
			return ThreadRecord{}, fmt.Errorf("thread %s holds the state of graph %v; its graph_id cannot change: %w", id, cur, ErrGraphMismatch)
		}
	}
	merged := maps.Clone(t.rec.Metadata) // stored maps are never changed in place
	maps.Copy(merged, md)
	t.rec.Metadata = merged
	t.rec.UpdatedAt = time.Now()
	return t.record(), nil
}

// busy reports whether thread id has a pending or running run; b.mu is
// held.
func (b *MemoryBackend) busyLocked(id string) bool {
	return slices.ContainsFunc(b.active, func(r *memRun) bool { return r.rec.ThreadID == id })
}

// setStateLocked records st as t's state: nil values or interrupts keep
// the stored ones, and a thread with pending or running runs stays busy.
func (b *MemoryBackend) setStateLocked(t *memThread, st ThreadState, now time.Time) {
	if st.Values != nil {
		t.rec.Values = bytes.Clone(st.Values)
	}
	if st.Interrupts != nil {
		t.rec.Interrupts = bytes.Clone(st.Interrupts)
	}
	t.rec.Status = st.Status
	if b.busyLocked(t.rec.ID) {
		t.rec.Status = statusBusy
	}
	t.rec.UpdatedAt = now
}

// SetThreadState implements [Backend].
func (b *MemoryBackend) SetThreadState(ctx context.Context, id string, st ThreadState) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[id]
	if t == nil {
		return fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	b.setStateLocked(t, st, time.Now())
	return nil
}

// DeleteThread implements [Backend].
func (b *MemoryBackend) DeleteThread(ctx context.Context, id string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[id]
	if t == nil {
		return nil, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	delete(b.threads, id)
	b.memoryCrons.deleteThread(id) // takes no lock of b's
	var running []string
	for _, r := range t.runs {
		if r.rec.Status == runRunning {
			if r.cancelled == "" {
				r.cancelled = "thread deleted"
			}
			running = append(running, r.rec.ID)
			continue
		}
		b.deleteRunLocked(r)
	}
	return running, nil
}

// FireCron implements [CronBackend]: the tick is taken, then the run
// created as [MemoryBackend.CreateRun] creates it.
func (b *MemoryBackend) FireCron(ctx context.Context, id string, due, next time.Time, run *RunRecord, create *ThreadRecord) (RunRecord, error) {
	return b.memoryCrons.fire(id, due, next, run, func() (RunRecord, error) { return b.CreateRun(ctx, *run, create) })
}

// ---- runs ----

// CreateRun implements [Backend].
func (b *MemoryBackend) CreateRun(ctx context.Context, r RunRecord, create *ThreadRecord) (RunRecord, error) {
	md, err := storedObject(r.Metadata)
	if err != nil {
		return r, err
	}
	if len(r.Kwargs) > 0 && !json.Valid(r.Kwargs) {
		return r, fmt.Errorf("server: memory backend: run %s: kwargs are not JSON", r.ID)
	}
	var kw struct {
		StreamResumable bool `json:"stream_resumable"`
	}
	if bytes.Contains(r.Kwargs, []byte(`"stream_resumable"`)) { // not decoded for nothing
		_ = json.Unmarshal(r.Kwargs, &kw) // kwargs of another shape are stored as they are
	}
	var tmd map[string]any
	if create != nil {
		if tmd, err = storedObject(create.Metadata); err != nil {
			return r, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	t := b.threads[r.ThreadID]
	created := false // stored once the run is
	if t == nil && create != nil && create.ID == r.ThreadID {
		t = &memThread{rec: ThreadRecord{ID: create.ID, CreatedAt: create.CreatedAt, UpdatedAt: create.CreatedAt, Metadata: tmd,
			Status: statusIdle, Config: map[string]any{}, Values: json.RawMessage("null"), Interrupts: json.RawMessage("{}")}}
		created = true
	}
	if t == nil {
		return r, fmt.Errorf("thread %s: %w", r.ThreadID, ErrNotFound)
	}
	if g, ok := t.rec.Metadata["graph_id"]; ok && g != nil && g != any(r.GraphID) {
		return r, fmt.Errorf("thread %s holds the state of graph %v, not %q: %w", r.ThreadID, g, r.GraphID, ErrGraphMismatch)
	}
	busy := b.busyLocked(r.ThreadID)
	switch {
	case busy && r.MultitaskStrategy == "reject":
		return r, fmt.Errorf("thread %s: %w", r.ThreadID, ErrThreadBusy)
	case r.MultitaskStrategy == "interrupt" || r.MultitaskStrategy == "rollback":
		why := "interrupted by a new run (multitask_strategy interrupt)"
		if r.MultitaskStrategy == "rollback" {
			why = "rolled back by a new run (multitask_strategy rollback)"
		}
		for _, x := range slices.Clone(t.runs) {
			switch {
			case x.rec.Status == runRunning:
				if x.cancelled == "" {
					x.cancelled = why
				}
				x.rollback = x.rollback || r.MultitaskStrategy == "rollback"
			case x.rec.Status == runPending && r.MultitaskStrategy == "interrupt":
				// The thread's pending runs end too, as in LangGraph:
				// cancelled, or deleted for a rollback.
				x.cancelled = why
				b.endPendingLocked(x, now)
			case x.rec.Status == runPending:
				b.deleteRunLocked(x)
			}
		}
	}
	if created {
		b.threads[t.rec.ID] = t
	}
	b.seq++
	run := &memRun{seq: b.seq, resumable: kw.StreamResumable, rec: RunRecord{ID: r.ID, ThreadID: r.ThreadID, AssistantID: r.AssistantID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.CreatedAt, Status: runPending, Metadata: md, MultitaskStrategy: r.MultitaskStrategy,
		Kwargs: storedRaw(r.Kwargs, "{}"), GraphID: r.GraphID}}
	b.runs[r.ID] = run
	b.active = append(b.active, run)
	t.runs = append(t.runs, run)
	tm := maps.Clone(t.rec.Metadata)
	tm["graph_id"], tm["assistant_id"] = r.GraphID, r.AssistantID
	t.rec.Metadata, t.rec.Status, t.rec.UpdatedAt = tm, statusBusy, now
	return run.record(), nil
}

// appendLocked adds an event to r's log; b.mu is held.
func (r *memRun) appendLocked(name string, data json.RawMessage) int {
	id := r.nextEvent
	r.nextEvent++
	r.events = append(r.events, Event{ID: id, Name: name, Data: data})
	r.eventBytes += int64(len(name) + len(data))
	return id
}

// endPendingLocked ends the pending run r interrupted, with an end event,
// its thread idle when nothing else is queued on it; b.mu is held.
func (b *MemoryBackend) endPendingLocked(r *memRun, now time.Time) {
	r.rec.Status, r.rec.Result, r.rec.UpdatedAt = runInterrupted, json.RawMessage("null"), now
	r.appendLocked("end", json.RawMessage("null"))
	b.endedLocked(r)
	if t := b.threads[r.rec.ThreadID]; t != nil && t.rec.Status == statusBusy && !b.busyLocked(t.rec.ID) {
		t.rec.Status, t.rec.UpdatedAt = statusIdle, now
	}
}

// endedLocked records that r ended: it leaves the active runs, its
// events are kept or dropped, and the oldest ended runs beyond keptRuns
// are forgotten; b.mu is held.
func (b *MemoryBackend) endedLocked(r *memRun) {
	b.active = slices.DeleteFunc(b.active, func(x *memRun) bool { return x == r })
	r.holder, r.leaseExpires = "", time.Time{}
	if r.resumable {
		r.keptElem = b.kept.PushBack(r)
		b.keptBytes += r.eventBytes
		b.trimKeptLocked()
	} else if b.readers[r.rec.ID] == 0 {
		b.forgetEventsLocked(r)
	}
	r.endedElem = b.ended.PushBack(r)
	b.trimEndedLocked()
}

// trimEndedLocked forgets the runs that ended before the last keptRuns,
// but not those a stream reads (see holdEvents): a stream would otherwise
// find its run gone before it read the run's last events, and end as if
// it had. Such a run stays beyond the bound, in its place among the
// ended runs, and is forgotten when its last reader lets go, if it is
// still beyond; b.mu is held.
func (b *MemoryBackend) trimEndedLocked() {
	e := b.ended.Front()
	for over := b.ended.Len() - b.keptRuns; over > 0 && e != nil; over-- {
		old := e.Value.(*memRun)
		e = e.Next()
		if b.readers[old.rec.ID] == 0 {
			b.deleteRunLocked(old)
		}
	}
}

// trimKeptLocked drops the events of the ended resumable runs that ended
// first, but not those of runs a stream reads (see holdEvents), until the
// kept events are within keptEventBytes; b.mu is held.
func (b *MemoryBackend) trimKeptLocked() {
	for e := b.kept.Front(); e != nil && b.keptBytes > b.keptEventBytes; {
		old := e.Value.(*memRun)
		e = e.Next()
		if b.readers[old.rec.ID] == 0 {
			b.unkeepLocked(old)
			old.events, old.eventBytes, old.dropped = nil, 0, true
		}
	}
}

// forgetEventsLocked drops the events of r, an ended run that was not
// resumable, but how it ended: its "error", if it failed, and its "end"
// (see Events); b.mu is held.
func (b *MemoryBackend) forgetEventsLocked(r *memRun) {
	if r.resumable || r.forgotten {
		return
	}
	var kept []Event
	var size int64
	if n := len(r.events); n >= 2 && r.events[n-2].Name == "error" {
		kept = []Event{r.events[n-2]}
		size = int64(len(kept[0].Name) + len(kept[0].Data))
	}
	r.events, r.eventBytes, r.forgotten = kept, size, true
}

// unkeepLocked takes r off the runs keeping their events; b.mu is held.
func (b *MemoryBackend) unkeepLocked(r *memRun) {
	if r.keptElem != nil {
		b.kept.Remove(r.keptElem)
		r.keptElem = nil
		b.keptBytes -= r.eventBytes
	}
}

// deleteRunLocked forgets r and its events; b.mu is held.
func (b *MemoryBackend) deleteRunLocked(r *memRun) {
	if b.runs[r.rec.ID] == r {
		delete(b.runs, r.rec.ID)
	}
	b.active = slices.DeleteFunc(b.active, func(x *memRun) bool { return x == r })
	b.unkeepLocked(r)
	if r.endedElem != nil {
		b.ended.Remove(r.endedElem)
		r.endedElem = nil
	}
	if t := b.threads[r.rec.ThreadID]; t != nil {
		t.runs = slices.DeleteFunc(t.runs, func(x *memRun) bool { return x == r })
	}
	r.events = nil
}

// ClaimRun implements [Backend].
func (b *MemoryBackend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*Claim, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.active) == 0 {
		return nil, nil
	}
	now := time.Now()
	b.endDeadCancelledLocked(now)
	busy := map[string]bool{} // threads with a running run, or an older pending one
	for _, r := range b.active {
		if r.rec.Status == runRunning {
			busy[r.rec.ThreadID] = true
		}
	}
	for _, r := range b.active { // oldest first
		switch r.rec.Status {
		case runRunning:
			if !r.leaseExpires.Before(now) {
				continue
			}
		case runPending:
			if busy[r.rec.ThreadID] {
				continue
			}
			busy[r.rec.ThreadID] = true
		}
		t := b.threads[r.rec.ThreadID]
		if graphs != nil && t != nil {
			// A run whose thread is gone is claimable by any process (it
			// ends at once); one whose thread's graph this process does
			// not serve is not.
			g, _ := t.rec.Metadata["graph_id"].(string)
			if !slices.Contains(graphs, g) {
				continue
			}
		}
		if r.rec.Attempt == 0 && t != nil {
			// The first claim takes over the thread's rollback point.
			r.resetTo, t.resetTo = t.resetTo, nil
		}
		r.rec.Status, r.rec.Attempt, r.rec.UpdatedAt = runRunning, r.rec.Attempt+1, now
		r.holder, r.leaseExpires = holder, now.Add(ttl)
		c := &Claim{Run: r.record(), Holder: holder}
		if r.resetTo != nil {
			to := *r.resetTo
			c.ResetTo = &to
		}
		return c, nil
	}
	return nil, nil
}

// endDeadCancelledLocked ends the cancelled runs whose holder stopped
// renewing their lease: interrupted, or deleted for a rollback (the
// thread's next run starting from where it started); b.mu is held.
func (b *MemoryBackend) endDeadCancelledLocked(now time.Time) {
	for _, r := range slices.Clone(b.active) {
		if r.rec.Status != runRunning || r.cancelled == "" || !r.leaseExpires.Before(now) {
			continue
		}
		t := b.threads[r.rec.ThreadID]
		if r.rollback {
			b.deleteRunLocked(r)
			if t != nil {
				to := r.startCheckpoint
				t.resetTo = &to
			}
		} else {
			r.rec.Status, r.rec.UpdatedAt = runInterrupted, now
			if r.rec.Result == nil {
				r.rec.Result = json.RawMessage("null")
			}
			r.appendLocked("end", json.RawMessage("null"))
			b.endedLocked(r)
		}
		if t != nil && t.rec.Status == statusBusy && !b.busyLocked(t.rec.ID) {
			t.rec.Status, t.rec.UpdatedAt = statusIdle, now
		}
	}
}

// claimedLocked returns the run c holds, or an error wrapping
// ErrLeaseLost; b.mu is held.
func (b *MemoryBackend) claimedLocked(c *Claim) (*memRun, error) {
	r := b.runs[c.Run.ID]
	if r == nil || r.rec.Status != runRunning || r.holder != c.Holder || r.rec.Attempt != c.Run.Attempt {
		return nil, fmt.Errorf("run %s, attempt %d of %s: %w", c.Run.ID, c.Run.Attempt, c.Holder, ErrLeaseLost)
	}
	return r, nil
}

// RenewLease implements [Backend].
func (b *MemoryBackend) RenewLease(ctx context.Context, c *Claim, ttl time.Duration) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.claimedLocked(c)
	if err != nil {
		return "", err
	}
	r.leaseExpires = time.Now().Add(ttl)
	return r.cancelled, nil
}

// StartRun implements [Backend].
func (b *MemoryBackend) StartRun(ctx context.Context, c *Claim, checkpointID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.claimedLocked(c)
	if err != nil {
		return err
	}
	r.startCheckpoint = checkpointID
	return nil
}

// ReleaseRun implements [Backend].
func (b *MemoryBackend) ReleaseRun(ctx context.Context, c *Claim) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.claimedLocked(c)
	if err != nil {
		return err
	}
	r.leaseExpires = time.Time{}
	return nil
}

// FinishRun implements [Backend].
func (b *MemoryBackend) FinishRun(ctx context.Context, c *Claim, res RunResult) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.claimedLocked(c)
	if err != nil {
		return err
	}
	now := time.Now()
	t := b.threads[r.rec.ThreadID]
	if r.rollback || t == nil {
		b.deleteRunLocked(r)
		if r.rollback && t != nil {
			to := r.startCheckpoint
			t.resetTo = &to
		}
	} else {
		r.rec.Status, r.rec.Result, r.rec.UpdatedAt = res.Status, storedRaw(res.Result, "null"), now
		if res.Error != nil {
			r.appendLocked("error", storedRaw(res.Error, "null"))
		}
		r.appendLocked("end", json.RawMessage("null"))
		b.endedLocked(r)
	}
	if t == nil {
		return nil
	}
	if res.DropThread {
		delete(b.threads, t.rec.ID)
		return nil
	}
	b.setStateLocked(t, res.Thread, now)
	return nil
}

// AppendEvent implements [Backend].
func (b *MemoryBackend) AppendEvent(ctx context.Context, c *Claim, name string, data json.RawMessage) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.claimedLocked(c)
	if err != nil {
		return 0, err
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return r.appendLocked(name, data), nil // kept as given, not copied
}

// Events implements [Backend]. Of a run whose events were dropped it
// returns its end alone when it was not resumable (after its "error",
// when it failed), and an error saying so when it was (see
// [MemoryBackend]).
func (b *MemoryBackend) Events(ctx context.Context, runID string, from int) ([]Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[runID]
	switch {
	case r == nil:
		return nil, nil
	case r.dropped:
		return nil, &eventsDroppedError{runID: runID, bound: b.keptEventBytes}
	case r.forgotten:
		var out []Event
		for _, ev := range r.events { // its error, if it failed
			if ev.ID >= from {
				out = append(out, ev)
			}
		}
		if end := r.nextEvent - 1; from <= end {
			out = append(out, Event{ID: end, Name: "end", Data: json.RawMessage("null")})
		}
		return out, nil
	}
	i, _ := slices.BinarySearchFunc(r.events, from, func(ev Event, id int) int { return cmp.Compare(ev.ID, id) })
	if i == len(r.events) {
		return nil, nil
	}
	return slices.Clone(r.events[i:]), nil
}

// Run implements [Backend].
func (b *MemoryBackend) Run(ctx context.Context, id string) (RunRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[id]
	if r == nil {
		return RunRecord{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r.record(), nil
}

// ListRuns implements [Backend].
func (b *MemoryBackend) ListRuns(ctx context.Context, threadID, status string, limit, offset int) ([]RunRecord, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[threadID]
	if t == nil {
		return nil, 0, nil
	}
	var all []*memRun
	for _, r := range t.runs {
		if status == "" || r.rec.Status == status {
			all = append(all, r)
		}
	}
	var out []RunRecord
	for _, r := range pageOf(all, limit, offset) {
		out = append(out, r.record())
	}
	return out, len(all), nil
}

// CancelRun implements [Backend].
func (b *MemoryBackend) CancelRun(ctx context.Context, id, reason string) (RunRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[id]
	if r == nil {
		return RunRecord{}, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	switch r.rec.Status {
	case runPending:
		r.cancelled = reason
		b.endPendingLocked(r, time.Now())
	case runRunning:
		if r.cancelled == "" {
			r.cancelled = reason
		}
	}
	return r.record(), nil
}

// DeleteRun implements [Backend].
func (b *MemoryBackend) DeleteRun(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.runs[id]
	if r == nil {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if !r.rec.ended() {
		return fmt.Errorf("run %s: %w", id, ErrThreadBusy)
	}
	b.deleteRunLocked(r)
	return nil
}

// ---- assistants ----

// CreateAssistant implements [Backend].
func (b *MemoryBackend) CreateAssistant(ctx context.Context, a AssistantRecord, ifExists string) (AssistantRecord, error) {
	cfg, err := storedObject(a.Config)
	if err != nil {
		return a, err
	}
	md, err := storedObject(a.Metadata)
	if err != nil {
		return a, err
	}
	cx := storedRaw(a.Context, "{}")
	if !json.Valid(cx) {
		return a, fmt.Errorf("server: memory backend: assistant %s: context is not JSON", a.ID)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old := b.assistants[a.ID]; old != nil {
		if ifExists != "do_nothing" {
			return a, fmt.Errorf("assistant %s: %w", a.ID, ErrExists)
		}
		return old.cur.clone(), nil
	}
	rec := AssistantRecord{ID: a.ID, GraphID: a.GraphID, Config: cfg, Context: cx, Metadata: md, Name: a.Name,
		Description: a.Description, Version: 1, CreatedAt: a.CreatedAt, UpdatedAt: a.CreatedAt}
	rec = rec.clone()
	b.assistants[a.ID] = &memAssistant{cur: rec, versions: []AssistantRecord{rec.clone()}, last: 1}
	return rec.clone(), nil
}

// Assistant implements [Backend].
func (b *MemoryBackend) Assistant(ctx context.Context, id string) (AssistantRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.assistants[id]
	if a == nil {
		return AssistantRecord{}, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	return a.cur.clone(), nil
}

// SearchAssistants implements [Backend].
func (b *MemoryBackend) SearchAssistants(ctx context.Context, q AssistantQuery) ([]AssistantRecord, int, error) {
	md, err := storedObject(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	name := strings.ToLower(q.Name)
	b.mu.Lock()
	defer b.mu.Unlock()
	var all []*memAssistant
	for _, a := range b.assistants {
		if (q.GraphID == "" || a.cur.GraphID == q.GraphID) && strings.Contains(strings.ToLower(a.cur.Name), name) && jsonb.Contains(a.cur.Metadata, md) {
			all = append(all, a)
		}
	}
	if q.Limit == 0 {
		return nil, len(all), nil
	}
	slices.SortFunc(all, func(x, y *memAssistant) int {
		return cmp.Or(y.cur.CreatedAt.Compare(x.cur.CreatedAt), strings.Compare(x.cur.ID, y.cur.ID))
	})
	out := []AssistantRecord{}
	for _, a := range pageOf(all, q.Limit, q.Offset) {
		out = append(out, a.cur.clone())
	}
	return out, len(all), nil
}

// PatchAssistant implements [Backend].
func (b *MemoryBackend) PatchAssistant(ctx context.Context, id string, p AssistantPatch) (AssistantRecord, error) {
	md, err := storedObject(p.Metadata)
	if err != nil {
		return AssistantRecord{}, err
	}
	var cfg map[string]any
	if p.Config != nil {
		if cfg, err = storedObject(p.Config); err != nil {
			return AssistantRecord{}, err
		}
	}
	if len(p.Context) > 0 && !json.Valid(p.Context) {
		return AssistantRecord{}, fmt.Errorf("server: memory backend: assistant %s: context is not JSON", id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.assistants[id]
	if a == nil {
		return AssistantRecord{}, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	next := a.cur.clone()
	if p.GraphID != "" {
		next.GraphID = p.GraphID
	}
	if cfg != nil {
		next.Config = cfg
	}
	if len(p.Context) > 0 {
		next.Context = bytes.Clone(p.Context)
	}
	maps.Copy(next.Metadata, md)
	if p.Name != "" {
		next.Name = p.Name
	}
	if p.Description != nil {
		d := *p.Description
		next.Description = &d
	}
	a.last++
	next.Version, next.UpdatedAt = a.last, time.Now()
	a.cur = next
	v := next.clone()
	v.CreatedAt = next.UpdatedAt // a version's times are when it was made
	a.versions = append(a.versions, v)
	return next.clone(), nil
}

// DeleteAssistant implements [Backend].
func (b *MemoryBackend) DeleteAssistant(ctx context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.assistants[id] == nil {
		return fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	delete(b.assistants, id)
	return nil
}

// AssistantVersions implements [Backend].
func (b *MemoryBackend) AssistantVersions(ctx context.Context, id string, metadata map[string]any, limit, offset int) ([]AssistantRecord, int, error) {
	md, err := storedObject(metadata)
	if err != nil {
		return nil, 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.assistants[id]
	if a == nil {
		return nil, 0, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	var all []AssistantRecord
	for _, v := range slices.Backward(a.versions) {
		if jsonb.Contains(v.Metadata, md) {
			all = append(all, v)
		}
	}
	out := []AssistantRecord{}
	for _, v := range pageOf(all, limit, offset) {
		out = append(out, v.clone())
	}
	return out, len(all), nil
}

// SetLatestAssistantVersion implements [Backend].
func (b *MemoryBackend) SetLatestAssistantVersion(ctx context.Context, id string, version int) (AssistantRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.assistants[id]
	if a == nil {
		return AssistantRecord{}, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	i := slices.IndexFunc(a.versions, func(v AssistantRecord) bool { return v.Version == version })
	if i < 0 {
		return AssistantRecord{}, fmt.Errorf("assistant %s version %d: %w", id, version, ErrNotFound)
	}
	cur := a.versions[i].clone()
	cur.CreatedAt, cur.UpdatedAt = a.cur.CreatedAt, time.Now()
	a.cur = cur
	return cur.clone(), nil
}

// errEventsDropped reports whether err says a run's events were dropped.
func errEventsDropped(err error) bool {
	_, ok := errors.AsType[*eventsDroppedError](err)
	return ok
}
