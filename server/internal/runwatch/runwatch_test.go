package runwatch

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// table is a fake backend: the marks of its runs, set by the test.
type table struct {
	mu     sync.Mutex
	marks  map[string]Mark
	calls  int
	during func() // runs inside the next poll, as if while its query ran
}

func (t *table) set(id string, m Mark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marks[id] = m
}

func (t *table) poll(_ context.Context, ids []string) (map[string]Mark, error) {
	t.mu.Lock()
	during := t.during
	t.during = nil
	t.mu.Unlock()
	if during != nil {
		during()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	out := map[string]Mark{}
	for _, id := range ids {
		if m, ok := t.marks[id]; ok {
			out[id] = m
		}
	}
	return out, nil
}

// newHub returns a hub that polls only when the test calls poll.
func newHub(t *testing.T) (*Hub, *table) {
	tb := &table{marks: map[string]Mark{"a": {Exists: true, Status: "pending", LastEvent: -1}, "b": {Exists: true, Status: "pending", LastEvent: -1}}}
	h := New(Config{Poll: tb.poll, Interval: func() time.Duration { return time.Hour }})
	t.Cleanup(h.Close)
	return h, tb
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestChangedWakesTheWatchersOfThatRunOnly(t *testing.T) {
	h, _ := newHub(t)
	a1, stop1 := h.Watch("a")
	defer stop1()
	a2, stop2 := h.Watch("a")
	defer stop2()
	b, stop3 := h.Watch("b")
	defer stop3()
	h.Changed("a")
	require.True(t, closed(a1))
	require.True(t, closed(a2))
	require.False(t, closed(b))
}

func TestAPollWakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs before the watch is made, between after it and
		// before the poll.
		before, between func(h *Hub, tb *table)
		woken           bool
	}{
		{name: "a watch made while not live (the poll cannot know what it read)", woken: true},
		{name: "no watch made while live, the run unchanged",
			before: func(h *Hub, _ *table) { h.SetLive(true) }},
		{name: "a watch made while live whose run changed (the notification tells)",
			before:  func(h *Hub, _ *table) { h.SetLive(true) },
			between: func(_ *Hub, tb *table) { tb.set("a", Mark{Exists: true, Status: "running", LastEvent: 0}) }},
		{name: "a watch made while live, then live lost and regained (a notification may be lost)", woken: true,
			before:  func(h *Hub, _ *table) { h.SetLive(true) },
			between: func(h *Hub, _ *table) { h.SetLive(false); h.SetLive(true) }},
		{name: "a watch made while live, live lost since", woken: true,
			before:  func(h *Hub, _ *table) { h.SetLive(true) },
			between: func(h *Hub, _ *table) { h.SetLive(false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, tb := newHub(t)
			if tc.before != nil {
				tc.before(h, tb)
			}
			ch, stop := h.Watch("a")
			defer stop()
			if tc.between != nil {
				tc.between(h, tb)
			}
			require.NoError(t, h.poll(t.Context()))
			require.Equal(t, tc.woken, closed(ch))
		})
	}
}

func TestAPollWakesTheWatchersOfARunWhoseMarkChangedSinceThePreviousPoll(t *testing.T) {
	h, tb := newHub(t)
	h.SetLive(true) // the marks alone decide
	a, stopA := h.Watch("a")
	defer stopA()
	b, stopB := h.Watch("b")
	defer stopB()
	require.NoError(t, h.poll(t.Context()))
	require.False(t, closed(a), "nothing changed")

	tb.set("a", Mark{Exists: true, Status: "running", LastEvent: 3})
	require.NoError(t, h.poll(t.Context()))
	require.True(t, closed(a), "an event appended")
	require.False(t, closed(b))

	tb.mu.Lock()
	delete(tb.marks, "b")
	tb.mu.Unlock()
	require.NoError(t, h.poll(t.Context()))
	require.True(t, closed(b), "the run deleted")
}

func TestTheHubPollsOnlyTheWatchedRunsAndNotAtAllWhenNoneIs(t *testing.T) {
	h, tb := newHub(t)
	require.NoError(t, h.poll(t.Context()))
	require.Zero(t, tb.calls)
	_, stop := h.Watch("a")
	stop()
	stop() // twice is harmless
	require.Zero(t, h.Watched())
	require.NoError(t, h.poll(t.Context()))
	require.Zero(t, tb.calls)
}

func TestTheLoopPollsEveryIntervalWhileRunsAreWatched(t *testing.T) {
	tb := &table{marks: map[string]Mark{}}
	h := New(Config{Poll: tb.poll, Interval: func() time.Duration { return time.Millisecond }})
	defer h.Close()
	ch, stop := h.Watch("a")
	defer stop()
	<-ch // the first poll wakes the watch, made while not live
	require.Eventually(t, func() bool { return h.Polls() >= 3 }, 10*time.Second, time.Millisecond)
}

func TestAWatchMadeWhileNotLiveBetweenTwoPollsThatSawItsRunUnchangedSleeps(t *testing.T) {
	h, _ := newHub(t)
	_, stop := h.Watch("a")
	defer stop()
	require.NoError(t, h.poll(t.Context())) // the run seen
	ch, stop2 := h.Watch("a")
	defer stop2()
	require.NoError(t, h.poll(t.Context()))
	require.False(t, closed(ch))
}

func TestAWatchMadeWhileNotLiveWhileAPollRan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		seen, change bool
		woken        bool
	}{
		{name: "on a run a poll saw before sleeps while the run is unchanged", seen: true},
		{name: "on a run a poll saw before is woken when the run changed", seen: true, change: true, woken: true},
		{name: "on a run no poll saw is woken (it may have read the run before the poll)", woken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, tb := newHub(t)
			_, stop := h.Watch("a")
			defer stop()
			if tc.seen {
				require.NoError(t, h.poll(t.Context()))
			}
			var ch <-chan struct{}
			tb.mu.Lock()
			tb.during = func() {
				var stop func()
				ch, stop = h.Watch("a")
				t.Cleanup(stop)
				if tc.change {
					tb.set("a", Mark{Exists: true, Status: "running", LastEvent: 0})
				}
			}
			tb.mu.Unlock()
			require.NoError(t, h.poll(t.Context()))
			require.NotNil(t, ch)
			require.Equal(t, tc.woken, closed(ch))
		})
	}
}

func TestTheSourcesOfTwoLoopsNeverOverlapAndALateWatchIsServed(t *testing.T) {
	tb := &table{marks: map[string]Mark{}}
	var running, most, started atomic.Int64
	h := New(Config{Poll: tb.poll, Interval: func() time.Duration { return time.Millisecond },
		Source: func(ctx context.Context, h *Hub) {
			started.Add(1)
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-ctx.Done()
			running.Add(-1)
		}})
	defer h.Close()
	// Watches come and go, so that loops stop (Linger 0) and start again.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				_, stop := h.Watch(string(rune('a' + i)))
				stop()
			}
		})
	}
	wg.Wait()
	ch, stop := h.Watch("z")
	defer stop()
	<-ch // a loop serves it: its first poll wakes it (made while not live)
	require.Equal(t, int64(1), most.Load(), "two sources ran at once")
	require.Positive(t, started.Load())
}

func TestAWatchMadeAfterLiveWasLostWhileAPollRanIsWokenAtItsRunsChange(t *testing.T) {
	h, tb := newHub(t)
	h.SetLive(true)
	_, stop := h.Watch("a")
	defer stop()
	require.NoError(t, h.poll(t.Context())) // the run seen
	var ch <-chan struct{}
	tb.mu.Lock()
	tb.during = func() {
		h.SetLive(false) // wakes the first watch
		var stop func()
		ch, stop = h.Watch("a") // its watcher reads the run, then it changes
		t.Cleanup(stop)
	}
	tb.mu.Unlock()
	require.NoError(t, h.poll(t.Context()))
	tb.set("a", Mark{Exists: true, Status: "success", LastEvent: 2})
	require.NoError(t, h.poll(t.Context()))
	require.True(t, closed(ch))
}
