package events_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
)

// checked is a payload of a kind of the tests' own, as an agent defines
// them.
type checked struct {
	Passed int `json:"passed"`
}

func (checked) EventKind() events.Kind { return "test.checked" }

func TestEachPayloadTypeHasItsKind(t *testing.T) {
	tests := []struct {
		data events.Payload
		want string
	}{
		{events.RunStarted{}, "run_started"},
		{events.RunEnded{}, "run_ended"},
		{events.NodeStarted{}, "node_started"},
		{events.NodeEnded{}, "node_ended"},
		{events.ModelCall{}, "model_call"},
		{events.ToolCall{}, "tool_call"},
		{events.ToolResult{}, "tool_result"},
		{events.Interrupt{}, "interrupt"},
		{events.Custom{}, "custom"},
		{events.Error{}, "error"},
		{events.SandboxWarning{}, "sandbox_warning"},
		{checked{}, "test.checked"},
		{events.Raw{Kind: "other.kind"}, "other.kind"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, events.Kind(tt.want), events.Event{Data: tt.data}.Kind())
		})
	}
}

func TestEventWithoutDataHasNoKind(t *testing.T) {
	require.Equal(t, events.Kind(""), events.Event{RunID: "r"}.Kind())
}

func TestEventJSONIsKindAndData(t *testing.T) {
	b, err := json.Marshal(events.Event{RunID: "r1", Step: 2, Node: "model", Task: "t1", Time: t0,
		Data: events.ToolCall{ID: "c1", Name: "shell", Args: `{"cmd":"ls"}`}})
	require.NoError(t, err)

	var fields map[string]any
	require.NoError(t, json.Unmarshal(b, &fields))
	require.Equal(t, map[string]any{
		"kind":   "tool_call",
		"run_id": "r1",
		"step":   float64(2),
		"node":   "model",
		"task":   "t1",
		"time":   "2025-03-14T15:09:26Z",
		"data":   map[string]any{"id": "c1", "name": "shell", "args": `{"cmd":"ls"}`},
	}, fields)
}

func TestEventJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		data events.Payload
	}{
		{"run started", events.RunStarted{}},
		{"run ended", events.RunEnded{Status: events.StatusFailed, Error: "boom"}},
		{"node started", events.NodeStarted{Push: true}},
		{"node ended", events.NodeEnded{Writes: graph.Writes{"Messages": json.RawMessage(`{"updates":[1]}`)}, Cached: true}},
		{"model call", events.ModelCall{Model: "m", Text: "hi", ToolCalls: 2, StopReason: "tool_calls", PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
		{"tool call", events.ToolCall{ID: "c1", Name: "shell", Args: `{"cmd":"ls <dir> & more"}`}},
		{"tool result", events.ToolResult{ID: "c1", Name: "shell", Result: "multi\nline\ttext"}},
		{"interrupt", events.Interrupt{ID: "i1", Value: map[string]any{"question": "go on?"}}},
		{"breakpoint", events.Interrupt{Breakpoint: events.BreakpointAfter}},
		{"custom", events.Custom{Value: []any{"a", float64(1), nil}}},
		{"error", events.Error{Message: "boom"}},
		{"sandbox warning", events.SandboxWarning{Mode: "auto", Reason: "bwrap (package bubblewrap) is not installed"}},
		{"unknown kind", events.Raw{Kind: "other.kind", Data: json.RawMessage(`{"n":1}`)}},
		{"unknown kind without data", events.Raw{Kind: "other.kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := events.Event{RunID: "r1", Step: 3, Namespace: "sub:1", Node: "n", Task: "t", Time: t0, Data: tt.data}
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var got events.Event
			require.NoError(t, json.Unmarshal(b, &got))
			require.Empty(t, cmp.Diff(in, got))
		})
	}
}

func TestEventJSONWithoutKindIsAnError(t *testing.T) {
	var got events.Event
	require.ErrorContains(t, json.Unmarshal([]byte(`{"run_id":"r"}`), &got), "missing kind")
}

func TestAgentKindsDecodeAsRaw(t *testing.T) {
	b, err := json.Marshal(events.Event{RunID: "r", Time: t0, Data: checked{Passed: 3}})
	require.NoError(t, err)
	var got events.Event
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, events.Raw{Kind: "test.checked", Data: json.RawMessage(`{"passed":3}`)}, got.Data)

	again, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(again), "a Raw encodes as the payload did")
}

func TestAs(t *testing.T) {
	raw := func(data string) events.Event {
		return events.Event{Data: events.Raw{Kind: "test.checked", Data: json.RawMessage(data)}}
	}
	tests := []struct {
		name   string
		ev     events.Event
		want   checked
		wantOK bool
	}{
		{"the payload type", events.Event{Data: checked{Passed: 2}}, checked{Passed: 2}, true},
		{"a Raw of its kind", raw(`{"passed":3}`), checked{Passed: 3}, true},
		{"a Raw of its kind without data", events.Event{Data: events.Raw{Kind: "test.checked"}}, checked{}, true},
		{"a Raw of its kind that does not decode", raw(`{"passed":"three"}`), checked{}, false},
		{"a Raw of another kind", events.Event{Data: events.Raw{Kind: "test.other", Data: json.RawMessage(`{"passed":3}`)}}, checked{}, false},
		{"another payload type", events.Event{Data: events.Custom{Value: 3}}, checked{}, false},
		{"no payload", events.Event{}, checked{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := events.As[checked](tt.ev)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// pointerChecked is a payload whose EventKind is on the pointer.
type pointerChecked struct {
	Passed int `json:"passed"`
}

func (p *pointerChecked) EventKind() events.Kind { return "test.pointer" }

func TestAsDecodesPointerPayloads(t *testing.T) {
	got, ok := events.As[*pointerChecked](events.Event{Data: events.Raw{Kind: "test.pointer", Data: json.RawMessage(`{"passed":4}`)}})
	require.True(t, ok)
	require.Equal(t, &pointerChecked{Passed: 4}, got)
}
