package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// LogMessage is the message of the log records written by [LogTo] for
// events.
const LogMessage = "agent event"

// LogTo consumes sub and logs each event to logger: at Error level for
// [KindError] events, at Warn level for [KindSandboxWarning] events and at
// Info level otherwise. The record's time is the
// event's Time, its message is [LogMessage], and it carries the attributes
// kind, run_id and step, namespace, node and task when they are set, and
// data, the payload (a [slog.LogValuer] payload logs its LogValue). Lost
// events are logged at Warn level with message "events lost" and
// attribute lost=N. [NewLogSink] runs it in a goroutine of its own.
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
	switch ev.Kind() {
	case KindError:
		return slog.LevelError
	case KindSandboxWarning:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// eventRecord builds the log record of ev at level.
func eventRecord(ev Event, level slog.Level) slog.Record {
	r := slog.NewRecord(ev.Time, level, LogMessage, 0)
	r.AddAttrs(
		slog.String("kind", string(ev.Kind())),
		slog.String("run_id", ev.RunID),
		slog.Int("step", ev.Step),
	)
	for _, a := range []struct{ key, value string }{{"namespace", ev.Namespace}, {"node", ev.Node}, {"task", ev.Task}} {
		if a.value != "" {
			r.AddAttrs(slog.String(a.key, a.value))
		}
	}
	if ev.Data != nil {
		r.AddAttrs(slog.Any("data", ev.Data))
	}
	return r
}
