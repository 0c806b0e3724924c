package events_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/events"
)

// t0 is the fixed time used by test clocks.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

func fixedClock() time.Time { return t0 }

// item is one step of a subscription's iteration: a delivered event, or a
// loss notification (Lost > 0).
type item struct {
	Ev   events.Event
	Lost int
}

func toItem(t *testing.T, ev events.Event, err error) item {
	t.Helper()
	if err == nil {
		return item{Ev: ev}
	}
	lost, ok := errors.AsType[*events.LostError](err)
	if !ok {
		t.Fatalf("unexpected error from iteration: %v", err)
	}
	return item{Lost: lost.N}
}

// drain ranges over sub until its iteration ends.
func drain(t *testing.T, sub *events.Subscription) []item {
	t.Helper()
	var got []item
	for ev, err := range sub.Events() {
		got = append(got, toItem(t, ev, err))
	}
	return got
}

// ev builds a test event stamped with t0.
func ev(kind events.Kind, runID string, iteration int) events.Event {
	return events.Event{Kind: kind, RunID: runID, Iteration: iteration, Time: t0}
}

// evs returns log events for run "r" with the given iterations.
func evs(iterations ...int) []events.Event {
	out := make([]events.Event, len(iterations))
	for i, it := range iterations {
		out[i] = ev(events.KindLog, "r", it)
	}
	return out
}

// delivered returns the items of a gap-free delivery of list.
func delivered(list ...events.Event) []item {
	var out []item
	for _, e := range list {
		out = append(out, item{Ev: e})
	}
	return out
}

// settle gives asynchronous cleanup (context.AfterFunc callbacks, exiting
// goroutines) a chance to run until cond holds or attempts run out. It makes
// no assertion about how long anything takes.
func settle(cond func() bool) {
	for i := 0; i < 500 && !cond(); i++ {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
