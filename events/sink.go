package events

import (
	"context"
	"io"
	"log/slog"
)

// sinkQueueSize is the queue length of a sink's subscription unless its
// options set one: sinks are meant to record every event.
const sinkQueueSize = 4096

// Sink consumes the events of a [Bus] in a goroutine of its own, from
// when it is made until [Sink.Close]: [NewJSONLSink] writes them as JSON
// Lines, [NewLogSink] logs them. Close it when the run it records has
// returned — after [Bridge], which publishes every event of a run before
// it returns:
//
//	sink := events.NewJSONLSink(bus, f)
//	runErr := events.Bridge(ctx, bus, runID, g.Stream(ctx, in, graph.WithStreamModes(events.StreamModes)))
//	if err := sink.Close(); err != nil { // every event of the run is in f
//		return err
//	}
//
// A Sink is safe for concurrent use.
type Sink struct {
	sub  *Subscription
	done chan struct{}
	err  error // written before done is closed
}

// startSink subscribes to bus with opts (after a queue of sinkQueueSize)
// and runs consume on the subscription in a new goroutine.
func startSink(bus *Bus, opts []SubscribeOption, consume func(*Subscription) error) *Sink {
	opts = append([]SubscribeOption{QueueSize(sinkQueueSize)}, opts...)
	s := &Sink{sub: bus.Subscribe(context.Background(), opts...), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = consume(s.sub)
	}()
	return s
}

// NewJSONLSink subscribes to bus with opts ([FilterRunIDs], …) and writes
// the events published from now on to w, as [WriteJSONL] does, in a
// goroutine of its own until [Sink.Close]. Its queue holds 4096 events
// unless opts set another size ([QueueSize]); events lost because it was
// full are recorded as gap markers. If w has a method Flush() error (a
// *bufio.Writer), the sink calls it once it has written its last event.
// It never closes w.
func NewJSONLSink(bus *Bus, w io.Writer, opts ...SubscribeOption) *Sink {
	return startSink(bus, opts, func(sub *Subscription) error {
		err := WriteJSONL(context.Background(), w, sub)
		if f, ok := w.(interface{ Flush() error }); ok && err == nil {
			err = f.Flush()
		}
		return err
	})
}

// NewLogSink subscribes to bus with opts and logs the events published
// from now on to logger, as [LogTo] does, in a goroutine of its own until
// [Sink.Close]. Its queue is that of [NewJSONLSink].
func NewLogSink(bus *Bus, logger *slog.Logger, opts ...SubscribeOption) *Sink {
	return startSink(bus, opts, func(sub *Subscription) error {
		return LogTo(context.Background(), logger, sub)
	})
}

// Close stops the sink once it has consumed every event published on the
// bus before Close was called (events published later are not
// consumed), waits for its goroutine to return, and returns the sink's
// error: the first write or log error, which also stopped it earlier.
// Close is idempotent; every call returns the same error.
func (s *Sink) Close() error {
	s.sub.drain()
	<-s.done
	return s.err
}

// Done returns a channel that is closed when the sink's goroutine has
// returned: after [Sink.Close], after an error, or once the bus was
// closed and the sink consumed what was queued for it.
func (s *Sink) Done() <-chan struct{} { return s.done }
