package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
)

// logRecords runs LogTo over the given events with a JSON handler at level
// and returns the decoded log lines.
func logRecords(t *testing.T, level slog.Level, queue int, in ...events.Event) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
	bus := events.NewBus(events.WithBufferSize(queue))
	sub := bus.Subscribe(t.Context())
	for _, e := range in {
		bus.Publish(e)
	}
	bus.Close()
	require.NoError(t, events.LogTo(t.Context(), logger, sub))

	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func TestSlogSinkLevels(t *testing.T) {
	tests := []struct {
		kind      events.Kind
		wantLevel string
	}{
		{events.KindError, "ERROR"},
		{events.KindSandboxWarning, "WARN"},
		{events.KindNodeStarted, "INFO"},
		{events.KindToolCall, "INFO"},
		{events.KindRunEnded, "INFO"},
		{events.KindModelCall, "INFO"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			recs := logRecords(t, slog.LevelDebug, 8, ev(tt.kind, "r1", 3))
			require.Len(t, recs, 1)
			require.Equal(t, tt.wantLevel, recs[0]["level"])
			require.Equal(t, string(tt.kind), recs[0]["kind"])
		})
	}
}

func TestSlogSinkRecordAttributes(t *testing.T) {
	tests := []struct {
		name string
		in   events.Event
		want map[string]any
	}{
		{
			name: "an event of a task",
			in: events.Event{RunID: "r1", Step: 3, Namespace: "sub:1", Node: "tools", Task: "t1", Time: t0,
				Data: events.ToolResult{ID: "c1", Name: "shell", Result: "ok"}},
			want: map[string]any{
				"time": "2025-03-14T15:09:26Z", "level": "INFO", "msg": events.LogMessage,
				"kind": "tool_result", "run_id": "r1", "step": float64(3),
				"namespace": "sub:1", "node": "tools", "task": "t1",
				"data": map[string]any{"id": "c1", "name": "shell", "result": "ok"},
			},
		},
		{
			name: "an event of the run",
			in:   events.Event{RunID: "r1", Step: 4, Time: t0, Data: events.Error{Message: "boom"}},
			want: map[string]any{
				"time": "2025-03-14T15:09:26Z", "level": "ERROR", "msg": events.LogMessage,
				"kind": "error", "run_id": "r1", "step": float64(4),
				"data": map[string]any{"message": "boom"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := logRecords(t, slog.LevelDebug, 8, tt.in)
			require.Equal(t, []map[string]any{tt.want}, recs)
		})
	}
}

func TestSlogSinkLogsLostEventsAtWarn(t *testing.T) {
	recs := logRecords(t, slog.LevelDebug, 1, evs(1, 2, 3)...)
	require.Len(t, recs, 2)
	require.Equal(t, "WARN", recs[0]["level"])
	require.Equal(t, "events lost", recs[0]["msg"])
	require.Equal(t, float64(2), recs[0]["lost"])
	require.Equal(t, float64(3), recs[1]["step"])
}

func TestSlogSinkRespectsHandlerLevel(t *testing.T) {
	recs := logRecords(t, slog.LevelError, 8,
		ev(events.KindCustom, "r", 1),
		ev(events.KindError, "r", 2),
		ev(events.KindRunEnded, "r", 3),
	)
	require.Len(t, recs, 1)
	require.Equal(t, "error", recs[0]["kind"])
}

func TestSlogSinkStopsWhenContextDone(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	sub := bus.Subscribe(t.Context())
	ctx, cancel := context.WithCancel(t.Context())
	result := make(chan error)
	go func() { result <- events.LogTo(ctx, slog.New(slog.DiscardHandler), sub) }()
	cancel()

	require.ErrorIs(t, <-result, context.Canceled)
	require.Zero(t, bus.Subscribers())
}
