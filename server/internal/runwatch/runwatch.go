// Package runwatch fans the changes of runs out to the requests of one
// process watching them, for the server backends (server/postgres,
// server/sqlite): whatever the number of watchers, the process has one
// source of changes (a LISTEN connection, a poller) and, while runs are
// watched, one poll query over all of them at a time.
//
// A [Hub] hands each watcher a channel closed at the run's next change.
// Changes come from two places: [Hub.Changed], called when the backend
// learns that a run changed (a notification, a write of this process),
// and the hub's poll, which reads a [Mark] of every watched run and wakes
// the watchers of the runs whose mark differs from the one it saw before.
// A watch never misses a change. While the backend's source of
// notifications is live ([Hub.SetLive]) every change is notified; when it
// stops being live, every watcher is woken, since a notification may have
// been lost. A poll wakes the watchers of a run whose mark differs from
// the one the previous poll saw, and a watcher that came while the hub was
// not live before any poll saw its run (the poll cannot tell what it
// read). A wake may be spurious; a watcher reads the run again and waits
// again.
package runwatch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Mark is what a poll sees of a run: enough to tell that it changed for a
// watcher (an event appended, its status changed, it was deleted).
type Mark struct {
	Exists    bool
	Status    string
	LastEvent int // the id of its last event, -1 for none
}

// PollFunc returns the marks of the runs ids names; a run it leaves out
// does not exist.
type PollFunc func(ctx context.Context, ids []string) (map[string]Mark, error)

// Config configures a [Hub].
type Config struct {
	// Poll reads the marks of the watched runs.
	Poll PollFunc
	// Interval is the time between two polls while runs are watched; it
	// is asked again after each poll (a backend polls slowly while it is
	// notified of changes, often when it is not).
	Interval func() time.Duration
	// Source, if not nil, runs while the hub is active, until its context
	// is done: a backend's notification listener, which calls
	// [Hub.Changed] and [Hub.PollNow].
	Source func(ctx context.Context, h *Hub)
	// Linger is how long the hub stays active (polling, running Source)
	// after its last watcher left; 0 stops it at once.
	Linger time.Duration
	// Name names the hub in its log lines.
	Name string
}

// Hub fans changes out to the watchers of runs. Create one with [New];
// its loop runs only while runs are watched (and Linger after), and
// [Hub.Close] stops it.
type Hub struct {
	cfg Config

	mu      sync.Mutex
	runs    map[string]*entry
	active  bool          // the loop runs
	closed  bool          // Close was called
	live    bool          // every change is notified (SetLive)
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the loop returned
	kick    chan struct{} // polls now
	changed chan struct{} // the watched set changed (a first watcher, a last one left)

	polls atomic.Int64
	woken atomic.Int64
}

// entry is the watchers of one run.
type entry struct {
	ch    chan struct{} // closed and replaced at a change
	n     int           // watchers
	base  Mark          // what the last poll saw
	based bool          // base is set
	// unsafe: a watch was made while the hub was not live since a poll
	// last dealt with the entry.
	unsafe bool
}

// New returns a Hub; nothing runs until a run is watched.
func New(cfg Config) *Hub {
	return &Hub{cfg: cfg, runs: map[string]*entry{}, stop: make(chan struct{}),
		kick: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
}

// Watch returns a channel closed once run id may have changed after Watch
// was called, and the function to call when done waiting.
func (h *Hub) Watch(id string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.runs[id]
	if e == nil {
		e = &entry{ch: make(chan struct{})}
		h.runs[id] = e
		signal(h.changed)
	}
	e.n++
	if !h.live {
		e.unsafe = true
	}
	ch := e.ch
	if !h.active && !h.closed {
		h.active = true
		h.done = make(chan struct{})
		go h.loop(h.done)
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if e.n--; e.n == 0 && h.runs[id] == e {
				delete(h.runs, id)
				signal(h.changed)
			}
		})
	}
}

// Changed wakes the watchers of run id.
func (h *Hub) Changed(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.runs[id]; e != nil {
		close(e.ch)
		e.ch = make(chan struct{})
	}
}

// SetLive tells the hub whether every change of a run is notified
// through [Hub.Changed] from now on (a LISTEN is in effect): a watch made
// while it is live is woken by notifications, one made while it is not by
// a poll too. Live lost wakes every watcher.
func (h *Hub) SetLive(live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live && !live {
		for _, e := range h.runs {
			close(e.ch)
			e.ch = make(chan struct{})
			e.based, e.unsafe = false, false
		}
	}
	h.live = live
}

// PollNow makes the hub poll at once (a notification source that was
// down polls to catch up with the changes it missed).
func (h *Hub) PollNow() { signal(h.kick) }

// Watched returns how many runs are watched.
func (h *Hub) Watched() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.runs)
}

// Polls returns how many polls the hub made.
func (h *Hub) Polls() int64 { return h.polls.Load() }

// Woken returns how many times a poll woke the watchers of a run.
func (h *Hub) Woken() int64 { return h.woken.Load() }

// Close stops the hub's loop and waits until it returned. Watches made
// after Close are woken by [Hub.Changed] only.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	done := h.done
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// loop polls while runs are watched and Linger after, running Source
// alongside. It marks the hub inactive only once its Source returned, so
// that the Source of the next loop never overlaps this one's.
func (h *Hub) loop(done chan struct{}) {
	defer close(done)
	for h.serve() {
	}
}

// serve runs Source and polls until nothing was watched for Linger, or
// the hub is closed. It reports whether to serve again: runs were watched
// again while its Source stopped.
func (h *Hub) serve() bool {
	ctx, cancel := context.WithCancel(context.Background())
	var src sync.WaitGroup
	defer func() {
		cancel()
		src.Wait()
	}()
	if h.cfg.Source != nil {
		src.Go(func() { h.cfg.Source(ctx, h) })
	}
	go func() { // Close cancels a poll under way
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var idleSince, warned time.Time
	timer := time.NewTimer(h.cfg.Interval())
	defer timer.Stop()
	for {
		h.mu.Lock()
		n := len(h.runs)
		if n > 0 {
			idleSince = time.Time{}
		} else if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if h.closed || n == 0 && time.Since(idleSince) >= h.cfg.Linger {
			h.mu.Unlock()
			break
		}
		h.mu.Unlock()
		var linger <-chan time.Time
		if n == 0 {
			linger = time.After(h.cfg.Linger - time.Since(idleSince))
		}
		select {
		case <-h.stop:
			continue
		case <-h.changed:
			continue
		case <-linger:
			continue
		case <-h.kick:
		case <-timer.C:
		}
		if err := h.poll(ctx); err != nil && ctx.Err() == nil && time.Since(warned) > 10*time.Second {
			warned = time.Now()
			slog.Warn("server: polling the watched runs", "backend", h.cfg.Name, "err", err)
		}
		timer.Reset(h.cfg.Interval())
	}
	cancel()
	src.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed && len(h.runs) > 0 {
		return true
	}
	h.active = false
	return false
}

// poll reads the marks of the watched runs and wakes the watchers of
// those that changed since the last poll, and of those watched since
// then while changes may have gone unnotified.
func (h *Hub) poll(ctx context.Context) error {
	h.mu.Lock()
	if len(h.runs) == 0 {
		h.mu.Unlock()
		return nil
	}
	ids := make([]string, 0, len(h.runs))
	based := make(map[*entry]bool, len(h.runs)) // of the entries asked about
	for id, e := range h.runs {
		ids = append(ids, id)
		based[e] = e.based
	}
	h.mu.Unlock()
	h.polls.Add(1)
	marks, err := h.cfg.Poll(ctx, ids)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		e := h.runs[id]
		wasBased, ok := based[e]
		if e == nil || !ok {
			continue // gone, or a new entry the poll did not ask about
		}
		m := marks[id]
		// A watch made while not live before any poll saw the run may
		// have read it before what the marks show. One made since is told
		// by the marks' difference from the base, which is older than its
		// read (or equal to the marks, so that its read saw them: marks
		// only move forward), one made while live by a notification.
		changed := wasBased && e.base != m
		blind := e.unsafe && !wasBased
		if changed || blind {
			close(e.ch)
			e.ch = make(chan struct{})
			h.woken.Add(1)
		}
		if e.based == wasBased { // live was not lost meanwhile
			e.base, e.based, e.unsafe = m, true, false
		} // else the watches made since it was lost are the next poll's to wake
	}
	return nil
}
