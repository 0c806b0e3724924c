package events_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
)

func TestKindStringValues(t *testing.T) {
	tests := []struct {
		kind events.Kind
		want string
	}{
		{events.KindStepStart, "step_start"},
		{events.KindToolCall, "tool_call"},
		{events.KindToolResult, "tool_result"},
		{events.KindGoalCheck, "goal_check"},
		{events.KindHumanCheckRequired, "human_check_required"},
		{events.KindHumanCheckResponse, "human_check_response"},
		{events.KindIterationComplete, "iteration_complete"},
		{events.KindRunEnd, "run_end"},
		{events.KindError, "error"},
		{events.KindLog, "log"},
		{events.KindLLMUsage, "llm_usage"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, string(tt.kind))
		})
	}
}

func TestEventJSONUsesSnakeCaseFieldNames(t *testing.T) {
	b, err := json.Marshal(events.Event{
		Kind: events.KindLog, RunID: "r1", Iteration: 2, Time: t0,
		Payload: map[string]any{"msg": "hi"},
	})
	require.NoError(t, err)

	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	require.Equal(t, map[string]any{
		"kind":      "log",
		"run_id":    "r1",
		"iteration": float64(2),
		"time":      "2025-03-14T15:09:26Z",
		"payload":   map[string]any{"msg": "hi"},
	}, fields)
}

func TestEventJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ev   events.Event
	}{
		{"zero event", events.Event{}},
		{"nil payload", ev(events.KindRunEnd, "r1", 7)},
		{"empty payload", events.Event{Kind: events.KindLog, Time: t0, Payload: map[string]any{}}},
		{"json-native payload", events.Event{
			Kind: events.KindGoalCheck, RunID: "r1", Iteration: 3, Time: t0,
			Payload: map[string]any{
				"met":    true,
				"score":  0.75,
				"reason": "tests pass <ok> & done",
				"nested": map[string]any{"list": []any{"a", float64(1), nil}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			require.NoError(t, err)
			var got events.Event
			require.NoError(t, json.Unmarshal(b, &got))
			require.Empty(t, cmp.Diff(tt.ev, got))
		})
	}
}

func TestConstructorsBuildExpectedEvents(t *testing.T) {
	tests := []struct {
		name string
		got  events.Event
		want events.Event
	}{
		{
			name: "New",
			got:  events.New(events.KindStepStart, "r", 1, map[string]any{"step": "plan"}),
			want: events.Event{Kind: events.KindStepStart, RunID: "r", Iteration: 1, Payload: map[string]any{"step": "plan"}},
		},
		{
			name: "ToolCall",
			got:  events.ToolCall("r", 2, "shell", `{"cmd":"ls"}`),
			want: events.Event{Kind: events.KindToolCall, RunID: "r", Iteration: 2,
				Payload: map[string]any{"tool": "shell", "args": `{"cmd":"ls"}`}},
		},
		{
			name: "ToolResult ok",
			got:  events.ToolResult("r", 2, "shell", "a.txt", nil),
			want: events.Event{Kind: events.KindToolResult, RunID: "r", Iteration: 2,
				Payload: map[string]any{"tool": "shell", "output": "a.txt"}},
		},
		{
			name: "ToolResult failed",
			got:  events.ToolResult("r", 2, "shell", "", errors.New("exit 1")),
			want: events.Event{Kind: events.KindToolResult, RunID: "r", Iteration: 2,
				Payload: map[string]any{"tool": "shell", "output": "", "error": "exit 1"}},
		},
		{
			name: "LLMUsage",
			got:  events.LLMUsage("r", 3, "m1", 100, 20),
			want: events.Event{Kind: events.KindLLMUsage, RunID: "r", Iteration: 3,
				Payload: map[string]any{"model": "m1", "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}},
		},
		{
			name: "Error",
			got:  events.Error("r", 4, errors.New("boom")),
			want: events.Event{Kind: events.KindError, RunID: "r", Iteration: 4,
				Payload: map[string]any{"error": "boom"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Empty(t, cmp.Diff(tt.want, tt.got))
		})
	}
}

func TestPayloadIntAcceptsGoAndJSONNumbers(t *testing.T) {
	tests := []struct {
		name   string
		value  any
		want   int
		wantOK bool
	}{
		{"int", 42, 42, true},
		{"int64", int64(42), 42, true},
		{"whole float64", float64(42), 42, true},
		{"json.Number", json.Number("42"), 42, true},
		{"fractional float64", 4.2, 0, false},
		{"string", "42", 0, false},
		{"missing", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := events.Event{Payload: map[string]any{}}
			if tt.value != nil {
				e.Payload["n"] = tt.value
			}
			got, ok := e.PayloadInt("n")
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPayloadIntReadsLLMUsageAfterJSONRoundTrip(t *testing.T) {
	b, err := json.Marshal(events.LLMUsage("r", 1, "m", 10, 5))
	require.NoError(t, err)
	var got events.Event
	require.NoError(t, json.Unmarshal(b, &got))

	total, ok := got.PayloadInt("total_tokens")
	require.True(t, ok)
	require.Equal(t, 15, total)
	model, ok := got.PayloadString("model")
	require.True(t, ok)
	require.Equal(t, "m", model)
}
