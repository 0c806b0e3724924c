package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// LogMessage is the message of the log records written by [LogTo] for
// events.
const LogMessage = "agent event"

// LogTo consumes sub and logs each event to logger: at Error level for
// [KindError] events and at Info level otherwise. The record's time is the
// event's Time, its message is [LogMessage], and it carries the attributes
// kind, run_id, iteration and a group "payload" holding the payload entries
// (sorted by key). Lost events are logged at Warn level with message
// "events lost" and attribute lost=N.
//
// LogTo takes ownership of sub and closes it when it returns. It returns nil
// when the subscription ends (bus closed, or the subscription's own context
// done), ctx.Err() if ctx is done, or the first error returned by the
// logger's handler.
func LogTo(ctx context.Context, logger *slog.Logger, sub *Subscription) error {
	defer sub.Close()
	h := logger.Handler()
	for ev, err := range sub.events(ctx.Done()) {
		var r slog.Record
		if lost, ok := errors.AsType[*LostError](err); ok {
			r = slog.NewRecord(time.Now(), slog.LevelWarn, "events lost", 0)
			r.AddAttrs(slog.Int("lost", lost.N))
		} else {
			r = eventRecord(ev)
		}
		if !h.Enabled(ctx, r.Level) {
			continue
		}
		if err := h.Handle(ctx, r); err != nil {
			return fmt.Errorf("events: log event: %w", err)
		}
	}
	return ctx.Err()
}

func eventRecord(ev Event) slog.Record {
	level := slog.LevelInfo
	if ev.Kind == KindError {
		level = slog.LevelError
	}
	r := slog.NewRecord(ev.Time, level, LogMessage, 0)
	r.AddAttrs(
		slog.String("kind", string(ev.Kind)),
		slog.String("run_id", ev.RunID),
		slog.Int("iteration", ev.Iteration),
	)
	if len(ev.Payload) > 0 {
		keys := slices.Sorted(maps.Keys(ev.Payload))
		attrs := make([]any, 0, len(keys))
		for _, k := range keys {
			attrs = append(attrs, slog.Any(k, ev.Payload[k]))
		}
		r.AddAttrs(slog.Group("payload", attrs...))
	}
	return r
}
