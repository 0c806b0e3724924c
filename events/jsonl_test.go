package events_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
)

// readAll collects every step of ReadJSONL, keeping non-loss errors as text.
func readAll(t *testing.T, r io.Reader) (got []item, errs []string) {
	t.Helper()
	for e, err := range events.ReadJSONL(r) {
		if _, ok := errors.AsType[*events.LostError](err); err != nil && !ok {
			errs = append(errs, err.Error())
			continue
		}
		got = append(got, toItem(t, e, err))
	}
	return got, errs
}

func TestJSONLRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   []events.Event
	}{
		{"no events", nil},
		{"typical run", []events.Event{
			{RunID: "r1", Time: t0, Data: events.RunStarted{}},
			{RunID: "r1", Step: 1, Node: "plan", Task: "t1", Time: t0, Data: events.NodeStarted{}},
			{RunID: "r1", Step: 1, Node: "plan", Task: "t1", Time: t0, Data: events.ToolCall{ID: "c1", Name: "shell", Args: `{"cmd":"ls <dir>"}`}},
			{RunID: "r1", Step: 1, Node: "plan", Task: "t1", Time: t0, Data: events.Raw{Kind: "agent.checked", Data: []byte(`{"met":false,"score":0.5}`)}},
			{RunID: "r1", Step: 1, Node: "plan", Task: "t1", Time: t0, Data: events.Custom{Value: map[string]any{"msg": "multi\nline\ttext"}}},
			{RunID: "r1", Step: 2, Time: t0, Data: events.RunEnded{Status: events.StatusCompleted}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus()
			sub := bus.Subscribe(t.Context())
			for _, e := range tt.in {
				bus.Publish(e)
			}
			bus.Close()

			var buf bytes.Buffer
			require.NoError(t, events.WriteJSONL(t.Context(), &buf, sub))
			require.Equal(t, len(tt.in), strings.Count(buf.String(), "\n"), "one line per event")

			got, errs := readAll(t, &buf)
			require.Empty(t, errs)
			require.Empty(t, cmp.Diff(delivered(tt.in...), got))
		})
	}
}

func TestJSONLRecordsLostEvents(t *testing.T) {
	bus := events.NewBus(events.WithBufferSize(2))
	sub := bus.Subscribe(t.Context())
	for _, e := range evs(1, 2, 3, 4, 5) {
		bus.Publish(e)
	}
	bus.Close()

	var buf bytes.Buffer
	require.NoError(t, events.WriteJSONL(t.Context(), &buf, sub))
	require.True(t, strings.HasPrefix(buf.String(), "{\"lost\":3}\n"), buf.String())

	got, errs := readAll(t, &buf)
	require.Empty(t, errs)
	want := append([]item{{Lost: 3}}, delivered(evs(4, 5)...)...)
	require.Empty(t, cmp.Diff(want, got))
}

func TestReadJSONLReportsBadLinesAndContinues(t *testing.T) {
	input := strings.Join([]string{
		`{"kind":"custom","run_id":"r","step":1,"time":"2025-03-14T15:09:26Z","data":{"value":"x"}}`,
		``,
		`not json`,
		`{"run_id":"r"}`,
		`{"kind":"custom","run_id":"r","step":2,"time":"2025-03-14T15:09:26Z","data":{"value":"x"}}`,
	}, "\n")
	got, errs := readAll(t, strings.NewReader(input))
	require.Empty(t, cmp.Diff(delivered(evs(1, 2)...), got))
	require.Len(t, errs, 2)
	require.Contains(t, errs[0], "line 3")
	require.Contains(t, errs[1], "line 4: missing kind")
}

func TestReadJSONLStopsOnReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(
		strings.NewReader(`{"kind":"custom","run_id":"r","step":1,"time":"2025-03-14T15:09:26Z","data":{"value":"x"}}`+"\n"),
		iotest.ErrReader(boom),
	)
	var got []events.Event
	var errs []error
	for e, err := range events.ReadJSONL(r) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, e)
	}
	require.Len(t, got, 1)
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], boom)
}

func TestReadJSONLHandlesLongLines(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	in := events.Event{RunID: "r", Time: t0, Data: events.ToolResult{ID: "c1", Name: "file_read", Result: big}}
	bus := events.NewBus()
	sub := bus.Subscribe(t.Context())
	bus.Publish(in)
	bus.Close()
	var buf bytes.Buffer
	require.NoError(t, events.WriteJSONL(t.Context(), &buf, sub))

	got, errs := readAll(t, &buf)
	require.Empty(t, errs)
	require.Empty(t, cmp.Diff(delivered(in), got))
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteJSONLReturnsWriteErrorAndUnsubscribes(t *testing.T) {
	boom := errors.New("disk full")
	bus := events.NewBus()
	defer bus.Close()
	sub := bus.Subscribe(t.Context())
	bus.Publish(ev(events.KindCustom, "r", 1))

	err := events.WriteJSONL(t.Context(), failingWriter{boom}, sub)
	require.ErrorIs(t, err, boom)
	require.Zero(t, bus.Subscribers())
}

func TestWriteJSONLStopsWhenContextDone(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	sub := bus.Subscribe(t.Context())
	ctx, cancel := context.WithCancel(t.Context())

	var buf bytes.Buffer
	result := make(chan error)
	go func() { result <- events.WriteJSONL(ctx, &buf, sub) }()
	cancel()

	require.ErrorIs(t, <-result, context.Canceled)
	require.Zero(t, bus.Subscribers())
}
