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

// payloads are a payload of each SDK kind, for test events.
var payloads = map[events.Kind]events.Payload{
	events.KindRunStarted:     events.RunStarted{},
	events.KindRunEnded:       events.RunEnded{Status: events.StatusCompleted},
	events.KindNodeStarted:    events.NodeStarted{},
	events.KindNodeEnded:      events.NodeEnded{},
	events.KindModelCall:      events.ModelCall{Model: "m"},
	events.KindToolCall:       events.ToolCall{ID: "c1", Name: "shell"},
	events.KindToolResult:     events.ToolResult{ID: "c1", Name: "shell"},
	events.KindInterrupt:      events.Interrupt{ID: "i1"},
	events.KindCustom:         events.Custom{Value: "x"},
	events.KindError:          events.Error{Message: "boom"},
	events.KindSandboxWarning: events.SandboxWarning{Mode: "auto", Reason: "no bwrap"},
}

// ev builds a test event of kind stamped with t0.
func ev(kind events.Kind, runID string, step int) events.Event {
	return events.Event{RunID: runID, Step: step, Time: t0, Data: payloads[kind]}
}

// evs returns custom events for run "r" with the given steps.
func evs(steps ...int) []events.Event {
	out := make([]events.Event, len(steps))
	for i, it := range steps {
		out[i] = ev(events.KindCustom, "r", it)
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
