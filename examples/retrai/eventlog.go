package main

import (
	"context"
	"slices"
	"sync"

	"github.com/agentgraph/agentgraph/events"
)

// eventLog records the events of the runs a server executes, so that a
// client that starts following a run late — the dashboard selecting a run
// that is half done — first gets what it missed. It is the only subscriber
// of the manager's bus that the server needs: it republishes every event
// on its own bus (feed) under the same lock as it appends it to the
// history, so that [eventLog.follow] can return a history and a
// subscription that neither overlap nor leave a gap.
type eventLog struct {
	feed *events.Bus
	done chan struct{} // closed when the manager's bus is closed

	mu        sync.Mutex
	runs      map[string]*runHistory
	order     []string // run IDs, oldest first seen first
	maxRuns   int      // the histories kept
	maxEvents int      // the events kept per run (the latest)
}

// runHistory is the recorded events of one run.
type runHistory struct {
	events  []events.Event
	dropped int // the oldest events dropped to stay within maxEvents
}

// Limits of an eventLog.
const (
	eventLogRuns   = 256
	eventLogEvents = 5000
)

// newEventLog records the events of bus until it is closed or ctx is done.
// after, if not nil, returns for each event the events of the server's own
// to record right after it (the workspace changes that follow a human
// check); it runs on the log's goroutine, before the next event.
func newEventLog(ctx context.Context, bus *events.Bus, after func(events.Event) []events.Event) *eventLog {
	l := &eventLog{
		feed:      events.NewBus(),
		done:      make(chan struct{}),
		runs:      map[string]*runHistory{},
		maxRuns:   eventLogRuns,
		maxEvents: eventLogEvents,
	}
	sub := bus.Subscribe(ctx, events.QueueSize(1<<14))
	go func() {
		defer close(l.done)
		defer l.feed.Close()
		for ev, err := range sub.Events() {
			if err == nil && ev.RunID != "" {
				l.add(ev)
				if after != nil {
					for _, x := range after(ev) {
						l.add(x)
					}
				}
			}
		}
	}()
	return l
}

// add records ev and publishes it on the feed.
func (l *eventLog) add(ev events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.runs[ev.RunID]
	if !ok {
		h = &runHistory{}
		l.runs[ev.RunID] = h
		l.order = append(l.order, ev.RunID)
		if len(l.order) > l.maxRuns {
			delete(l.runs, l.order[0])
			l.order = slices.Delete(l.order, 0, 1)
		}
	}
	if len(h.events) >= l.maxEvents {
		h.events = slices.Delete(h.events, 0, 1)
		h.dropped++
	}
	h.events = append(h.events, ev)
	l.feed.Publish(ev)
}

// follow returns the events of run id recorded so far, how many older ones
// were dropped, and a subscription (ended by ctx, or Close) to the events
// recorded from now on.
func (l *eventLog) follow(ctx context.Context, id string) ([]events.Event, int, *events.Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sub := l.feed.Subscribe(ctx, events.FilterRunIDs(id), events.QueueSize(1<<12))
	h, ok := l.runs[id]
	if !ok {
		return nil, 0, sub
	}
	return slices.Clone(h.events), h.dropped, sub
}
