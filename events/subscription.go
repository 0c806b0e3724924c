package events

import (
	"context"
	"fmt"
	"iter"
	"sync"
)

// SubscribeOption configures a [Subscription]; pass it to [Bus.Subscribe].
type SubscribeOption func(*subConfig)

type subConfig struct {
	queueSize int
	filter    filter
}

// FilterRunIDs restricts a subscription to events whose RunID is one of ids.
// Several FilterRunIDs options add up (any listed run matches). Calling it
// with no ids has no effect.
func FilterRunIDs(ids ...string) SubscribeOption {
	return func(c *subConfig) {
		if len(ids) == 0 {
			return
		}
		if c.filter.runIDs == nil {
			c.filter.runIDs = make(map[string]struct{}, len(ids))
		}
		for _, id := range ids {
			c.filter.runIDs[id] = struct{}{}
		}
	}
}

// FilterKinds restricts a subscription to events of the given kinds. Several
// FilterKinds options add up (any listed kind matches). Calling it with no
// kinds has no effect. Combined with [FilterRunIDs], an event must pass both.
func FilterKinds(kinds ...Kind) SubscribeOption {
	return func(c *subConfig) {
		if len(kinds) == 0 {
			return
		}
		if c.filter.kinds == nil {
			c.filter.kinds = make(map[Kind]struct{}, len(kinds))
		}
		for _, k := range kinds {
			c.filter.kinds[k] = struct{}{}
		}
	}
}

// QueueSize sets this subscription's queue length, overriding the bus
// default ([WithBufferSize]). Values below 1 are treated as 1.
func QueueSize(n int) SubscribeOption {
	return func(c *subConfig) { c.queueSize = max(n, 1) }
}

type filter struct {
	runIDs map[string]struct{}
	kinds  map[Kind]struct{}
}

func (f filter) match(ev Event) bool {
	if f.runIDs != nil {
		if _, ok := f.runIDs[ev.RunID]; !ok {
			return false
		}
	}
	if f.kinds != nil {
		if _, ok := f.kinds[ev.Kind()]; !ok {
			return false
		}
	}
	return true
}

// LostError reports that a subscriber's queue overflowed and the N oldest
// queued events were dropped. [Subscription.Events] yields it (with a zero
// Event) just before the next event that was kept.
type LostError struct {
	// N is the number of events dropped since the previous delivery.
	N int
}

// Error implements the error interface.
func (e *LostError) Error() string {
	return fmt.Sprintf("events: subscriber too slow, lost %d event(s)", e.N)
}

type subState int

const (
	stateActive   subState = iota // receiving events
	stateDraining                 // bus closed: deliver the queue, then end
	stateEnded                    // cancelled or closed: end now
)

// Subscription is one subscriber's view of a [Bus]: a bounded queue of
// matching events, consumed with [Subscription.Events]. It is meant to be
// consumed by a single goroutine; concurrent iteration is safe but splits
// the events between the iterating goroutines.
type Subscription struct {
	bus    *Bus
	ctx    context.Context
	filter filter
	limit  int

	wake chan struct{} // capacity 1; signalled after each push
	done chan struct{} // closed when the state leaves stateActive

	mu        sync.Mutex
	state     subState
	queue     []Event // live events are queue[head:]
	head      int
	lost      int // dropped and not yet reported
	totalLost int
	stop      func() bool // unregisters the context.AfterFunc
}

func newSubscription(b *Bus, ctx context.Context, c subConfig) *Subscription {
	return &Subscription{
		bus:    b,
		ctx:    ctx,
		filter: c.filter,
		limit:  c.queueSize,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// Events returns an iterator over the subscription's events. Each step
// yields either a delivered event with a nil error, or a zero Event with a
// [*LostError] announcing how many events were dropped (oldest first) right
// before the event that follows.
//
// The iteration blocks while the queue is empty and ends when the bus is
// closed and the queue has been drained, or — immediately — when the
// subscription's context is done or [Subscription.Close] is called.
// Breaking out of the loop does not unsubscribe: events keep being queued
// and a later call to Events resumes where the previous one stopped.
func (s *Subscription) Events() iter.Seq2[Event, error] {
	return s.events(nil)
}

// events is Events with an additional stop channel: when it is closed the
// iteration ends, without unsubscribing.
func (s *Subscription) events(stop <-chan struct{}) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			if s.ctx.Err() != nil {
				s.Close()
				return
			}
			select {
			case <-stop:
				return
			default:
			}

			ev, lost, st := s.take()
			switch st {
			case takeEnded:
				return
			case takeLost:
				if !yield(Event{}, &LostError{N: lost}) {
					return
				}
				continue
			case takeEvent:
				if !yield(ev, nil) {
					return
				}
				continue
			}

			select {
			case <-s.wake:
			case <-s.done:
			case <-s.ctx.Done():
			case <-stop:
				return
			}
		}
	}
}

// Lost returns the total number of events this subscription has dropped so
// far because its queue was full.
func (s *Subscription) Lost() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalLost
}

// Close unregisters the subscription and ends its iteration immediately,
// discarding queued events. It is idempotent and safe to call concurrently
// with iteration.
func (s *Subscription) Close() {
	s.bus.remove(s)
	s.finish(stateEnded)
}

// drain unregisters the subscription and ends its iteration once it has
// delivered the events already queued, as [Bus.Close] does for every
// subscription.
func (s *Subscription) drain() {
	s.bus.remove(s)
	s.finish(stateDraining)
}

// push queues ev, dropping the oldest queued event if the queue is full.
// It is called with the bus lock held and never blocks.
func (s *Subscription) push(ev Event) {
	s.mu.Lock()
	if s.state != stateActive {
		s.mu.Unlock()
		return
	}
	if len(s.queue)-s.head >= s.limit {
		s.queue[s.head] = Event{}
		s.head++
		s.lost++
		s.totalLost++
	}
	// Compact once more than half the backing slice is consumed, keeping
	// appends amortized O(1) and memory bounded by about twice the limit.
	if s.head > 0 && s.head >= len(s.queue)-s.head {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue = s.queue[:n]
		s.head = 0
	}
	s.queue = append(s.queue, ev)
	s.mu.Unlock()

	select {
	case s.wake <- struct{}{}:
	default:
	}
}

type takeResult int

const (
	takeEmpty takeResult = iota
	takeEvent
	takeLost
	takeEnded
)

// take removes the next item from the queue without blocking.
func (s *Subscription) take() (Event, int, takeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateEnded {
		return Event{}, 0, takeEnded
	}
	if s.lost > 0 {
		n := s.lost
		s.lost = 0
		return Event{}, n, takeLost
	}
	if s.head < len(s.queue) {
		ev := s.queue[s.head]
		s.queue[s.head] = Event{}
		s.head++
		if s.head == len(s.queue) {
			s.queue = s.queue[:0]
			s.head = 0
		}
		return ev, 0, takeEvent
	}
	if s.state == stateDraining {
		return Event{}, 0, takeEnded
	}
	return Event{}, 0, takeEmpty
}

// finish moves the subscription to state to (stateDraining or stateEnded).
// An ended subscription stays ended.
func (s *Subscription) finish(to subState) {
	s.mu.Lock()
	if s.state == stateActive {
		close(s.done)
	}
	if s.state != stateEnded {
		s.state = to
	}
	if to == stateEnded {
		s.queue, s.head, s.lost = nil, 0, 0
	}
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()

	if stop != nil {
		stop()
	}
}

// setStop records the function that cancels the context.AfterFunc
// registration, calling it at once if the subscription already finished.
func (s *Subscription) setStop(stop func() bool) {
	s.mu.Lock()
	if s.state == stateActive {
		s.stop = stop
		stop = nil
	}
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}
