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
		lost, isLost := errors.AsType[*LostError](err)
		level := slog.LevelWarn
		if !isLost {
			level = eventLevel(ev)
		}
		if !h.Enabled(ctx, level) {
			continue
		}
		var r slog.Record
		if isLost {
			r = slog.NewRecord(time.Now(), level, "events lost", 0)
			r.AddAttrs(slog.Int("lost", lost.N))
		} else {
			r = eventRecord(ev, level)
		}
		if err := h.Handle(ctx, r); err != nil {
			return fmt.Errorf("events: log event: %w", err)
		}
	}
	return ctx.Err()
}

// eventLevel is the level ev is logged at.
func eventLevel(ev Event) slog.Level {
	if ev.Kind == KindError {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// eventRecord builds the log record of ev at level.
func eventRecord(ev Event, level slog.Level) slog.Record {
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
