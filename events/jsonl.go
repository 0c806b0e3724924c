package events

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
)

// lostRecord is a gap marker line of a JSONL stream, {"lost":N}: N events
// were dropped at that point.
type lostRecord struct {
	Lost int `json:"lost"`
}

// WriteJSONL consumes sub and writes each event to w as one JSON object per
// line (the [Event] JSON encoding). When the subscription reports lost events
// it writes a gap marker line {"lost":N} instead, which [ReadJSONL] turns
// back into a [*LostError]. Each line is written with a single Write call.
//
// WriteJSONL takes ownership of sub and closes it when it returns. It returns
// nil when the subscription ends (bus closed, or the subscription's own
// context done), ctx.Err() if ctx is done, or the first write error.
// [NewJSONLSink] runs it in a goroutine of its own.
func WriteJSONL(ctx context.Context, w io.Writer, sub *Subscription) error {
	defer sub.Close()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for ev, err := range sub.events(ctx.Done()) {
		var rec any = ev
		if lost, ok := errors.AsType[*LostError](err); ok {
			rec = lostRecord{Lost: lost.N}
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("events: write jsonl: %w", err)
		}
	}
	return ctx.Err()
}

// ReadJSONL returns an iterator over the events of a JSONL stream as written
// by [WriteJSONL]. Blank lines are skipped. Payloads of the SDK's kinds
// decode into their types, others as [Raw] (see [As]). A gap marker line yields a zero
// Event with a [*LostError]. A line that is not a valid event yields a zero
// Event with an error naming the line number; iteration continues with the
// next line if the caller keeps ranging. A read error other than io.EOF is
// yielded and ends the iteration. Lines may be of any length.
func ReadJSONL(r io.Reader) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		br := bufio.NewReader(r)
		for line := 1; ; line++ {
			b, readErr := br.ReadBytes('\n')
			if b = bytes.TrimSpace(b); len(b) > 0 {
				if !yield(decodeJSONLLine(b, line)) {
					return
				}
			}
			if readErr == io.EOF {
				return
			}
			if readErr != nil {
				yield(Event{}, fmt.Errorf("events: read jsonl: %w", readErr))
				return
			}
		}
	}
}

func decodeJSONLLine(b []byte, line int) (Event, error) {
	var head struct {
		Kind Kind `json:"kind"`
		Lost int  `json:"lost"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Event{}, fmt.Errorf("events: jsonl line %d: %w", line, err)
	}
	if head.Kind == "" && head.Lost > 0 {
		return Event{}, &LostError{N: head.Lost}
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return Event{}, fmt.Errorf("events: jsonl line %d: %w", line, err)
	}
	return ev, nil
}
