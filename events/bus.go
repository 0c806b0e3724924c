package events

import (
	"context"
	"slices"
	"sync"
	"time"
)

// DefaultBufferSize is the per-subscriber queue length used when
// [WithBufferSize] is not given.
const DefaultBufferSize = 256

// Option configures a [Bus].
type Option func(*busConfig)

type busConfig struct {
	bufferSize int
	clock      func() time.Time
}

// WithBufferSize sets the default queue length of each subscriber
// ([DefaultBufferSize] if not given). Values below 1 are treated as 1.
// [QueueSize] overrides it for a single subscription.
func WithBufferSize(n int) Option {
	return func(c *busConfig) { c.bufferSize = max(n, 1) }
}

// WithClock sets the function [Bus.Publish] uses to stamp events whose Time
// is zero (default time.Now). It is called while the bus is locked, so it
// must be cheap and must not call back into the bus. A nil clock is ignored.
func WithClock(now func() time.Time) Option {
	return func(c *busConfig) {
		if now != nil {
			c.clock = now
		}
	}
}

// Publisher receives events: a [*Bus], or anything that forwards them
// (to a bus, after looking at them). [Bridge] publishes on one.
type Publisher interface {
	// Publish delivers ev. It must not block for long: it runs on the
	// goroutine of the run whose events it receives.
	Publish(ev Event)
}

// Bus fans published events out to subscribers. The zero value is not
// usable; create one with [NewBus]. All methods are safe for concurrent use.
type Bus struct {
	bufferSize int
	clock      func() time.Time

	mu     sync.Mutex
	closed bool
	subs   []*Subscription
}

// NewBus returns an open Bus.
func NewBus(opts ...Option) *Bus {
	c := busConfig{bufferSize: DefaultBufferSize, clock: time.Now}
	for _, o := range opts {
		o(&c)
	}
	return &Bus{bufferSize: c.bufferSize, clock: c.clock}
}

// Publish delivers ev to every subscriber whose filter matches it. It never
// waits for subscribers: a subscriber whose queue is full loses its oldest
// queued event instead (and is told so, see [Subscription.Events]). If
// ev.Time is zero it is set from the bus clock. Publish after [Bus.Close] is
// a no-op.
//
// Concurrent Publish calls are serialized, so every subscriber sees the same
// relative order of events.
func (b *Bus) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = b.clock()
	}
	for _, s := range b.subs {
		if s.filter.match(ev) {
			s.push(ev)
		}
	}
}

// Subscribe registers a new subscriber and returns its [Subscription].
// Events published from now on that pass the subscription's filters are
// queued for it. When ctx is done the subscription is unregistered and its
// iteration ends, whether or not anybody is iterating at the time. A nil ctx
// is treated as [context.Background]. Subscribing to a closed bus returns a
// subscription whose iteration ends immediately.
func (b *Bus) Subscribe(ctx context.Context, opts ...SubscribeOption) *Subscription {
	if ctx == nil {
		ctx = context.Background()
	}
	c := subConfig{queueSize: b.bufferSize}
	for _, o := range opts {
		o(&c)
	}
	s := newSubscription(b, ctx, c)

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		s.finish(stateDraining)
		return s
	}
	b.subs = append(b.subs, s)
	b.mu.Unlock()

	stop := context.AfterFunc(ctx, s.Close)
	s.setStop(stop)
	return s
}

// Subscribers returns the number of currently registered subscribers.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close closes the bus: later Publish calls are ignored, and every
// subscription's iteration ends after it has delivered the events already
// queued for it. Close is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	subs := b.subs
	b.subs = nil
	b.mu.Unlock()

	for _, s := range subs {
		s.finish(stateDraining)
	}
}

// remove unregisters s; it is a no-op if s is not registered.
func (b *Bus) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.subs, s); i >= 0 {
		b.subs = slices.Delete(b.subs, i, i+1)
	}
}
