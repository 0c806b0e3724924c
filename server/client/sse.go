package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrEventTooLarge ends a stream whose line or event is larger than the
// client accepts ([WithMaxEventBytes]).
var ErrEventTooLarge = errors.New("client: server-sent event too large")

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	name string
	data string
	id   string // the last event id so far (the stream's, per the spec)
}

// sseReader parses a text/event-stream as the HTML specification's
// "interpreting an event stream" says: lines end in CR, LF or CRLF; a line
// starting with ":" is a comment (a heartbeat), ignored; the data lines
// of an event are joined with "\n"; an "id" with a NUL is ignored; "retry"
// sets the reconnection delay; an event with no data line is not
// dispatched, nor one cut off by the end of the stream. It holds at most
// max bytes of one event.
type sseReader struct {
	sc     *bufio.Scanner
	max    int
	lastID string
	retry  time.Duration // 0: none given
}

func newSSEReader(r io.Reader, max int) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(max, 64<<10)), max)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc, max: max}
}

// scanSSELines splits at CRLF, LF or a lone CR.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		// A CR: it may be the first half of a CRLF.
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // read on to see what follows the CR
	}
	if atEOF {
		// A final line without its end: the event it belongs to is
		// incomplete and will be discarded; hand the line over anyway.
		return len(data), data, nil
	}
	return 0, nil, nil
}

// next returns the next event, io.EOF when the stream ended cleanly, or
// the error that cut it (io.ErrUnexpectedEOF when it ended inside an
// event).
func (s *sseReader) next() (sseEvent, error) {
	var (
		name    string
		data    strings.Builder
		hasData bool
		pending bool // a field was seen since the last dispatch
	)
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if !hasData {
				name, pending = "", false
				continue
			}
			d := data.String()
			if name == "" {
				name = "message"
			}
			return sseEvent{name: name, data: d, id: s.lastID}, nil
		}
		if line[0] == ':' {
			continue // a comment: a heartbeat
		}
		pending = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > s.max {
				return sseEvent{}, ErrEventTooLarge
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.lastID = value
			}
		case "retry":
			if ms, err := strconv.ParseUint(value, 10, 32); err == nil {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, ErrEventTooLarge
		}
		return sseEvent{}, err
	}
	if pending {
		return sseEvent{}, fmt.Errorf("client: the stream ended inside an event: %w", io.ErrUnexpectedEOF)
	}
	return sseEvent{}, io.EOF
}
