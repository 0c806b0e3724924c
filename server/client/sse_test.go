package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, stream string, max int) ([]sseEvent, *sseReader, error) {
	t.Helper()
	r := newSSEReader(strings.NewReader(stream), max)
	var out []sseEvent
	for {
		ev, err := r.next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, ev)
	}
}

func TestSSEParsesAsTheSpecificationSays(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		want   []sseEvent
	}{
		{"LF", "event: values\ndata: {\"a\":1}\nid: 3\n\n", []sseEvent{{"values", `{"a":1}`, "3"}}},
		{"CRLF", "event: values\r\ndata: 1\r\nid: 3\r\n\r\n", []sseEvent{{"values", "1", "3"}}},
		{"lone CR", "event: values\rdata: 1\rid: 3\r\r", []sseEvent{{"values", "1", "3"}}},
		{"data lines joined with a newline", "event: values\ndata: {\ndata:  \"a\": 1\ndata: }\n\n", []sseEvent{{"values", "{\n \"a\": 1\n}", ""}}},
		{"comments are heartbeats", ": heartbeat\n\nevent: a\n: ping\ndata: 1\n\n:\n\n", []sseEvent{{"a", "1", ""}}},
		{"no space after the colon", "event:a\ndata:1\n\n", []sseEvent{{"a", "1", ""}}},
		{"an event without data is not dispatched", "event: a\nid: 1\n\nevent: b\ndata: 2\n\n", []sseEvent{{"b", "2", "1"}}},
		{"the id stays for the next events", "id: 7\ndata: 1\n\ndata: 2\n\n", []sseEvent{{"message", "1", "7"}, {"message", "2", "7"}}},
		{"an id with NUL is ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []sseEvent{{"message", "a", "1"}, {"message", "b", "1"}}},
		{"unknown fields are ignored", "foo: bar\nevent: a\ndata: 1\n\n", []sseEvent{{"a", "1", ""}}},
		{"empty data is an event", "event: end\ndata\n\n", []sseEvent{{"end", "", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readAll(t, tc.stream, 1<<10)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSSERetryFieldSetsTheReconnectionDelay(t *testing.T) {
	_, r, err := readAll(t, "retry: 1500\ndata: 1\n\nretry: soon\n\n", 1<<10)
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, r.retry)
}

func TestSSEStreamCutInsideAnEventIsAnUnexpectedEOF(t *testing.T) {
	got, _, err := readAll(t, "data: 1\n\nevent: values\ndata: {\"a\"", 1<<10)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Len(t, got, 1, "the complete event came, the cut one is discarded")
}

func TestSSEBoundsLinesAndEvents(t *testing.T) {
	cases := []struct {
		name   string
		stream string
	}{
		{"a line longer than the bound", "data: " + strings.Repeat("x", 200) + "\n\n"},
		{"an event of many lines larger than the bound", strings.Repeat("data: "+strings.Repeat("x", 50)+"\n", 10) + "\n"},
		{"an endless line", strings.Repeat("x", 1000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readAll(t, tc.stream, 128)
			require.True(t, errors.Is(err, ErrEventTooLarge), "%v", err)
		})
	}
}
