package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

func TestTrim(t *testing.T) {
	// Messages are identified by ID in the expectations.
	sys := withID(state.System("rules"), "sys")
	sys2 := withID(state.System("more rules"), "sys2")
	h1 := withID(state.Human("q1"), "h1")
	a1 := withID(state.AI("a1"), "a1")
	h2 := withID(state.Human("q2"), "h2")
	call2 := withID(state.AI("", state.ToolCall("c1", "f", "{}"), state.ToolCall("c2", "g", "{}")), "call2")
	r1 := withID(state.Tool("c1", "f", "1"), "r1")
	r2 := withID(state.Tool("c2", "g", "2"), "r2")
	a2 := withID(state.AI("done"), "a2")
	orphan := withID(state.Tool("nowhere", "f", "?"), "orphan")
	both := withID(state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "c1", Content: "1"},
		llms.ToolCallResponse{ToolCallID: "c2", Content: "2"},
	}}}, "both")

	tests := []struct {
		name     string
		msgs     []state.Message
		keepLast int
		want     []string
	}{
		{"nothing to trim", []state.Message{sys, h1, a1}, 5, []string{"sys", "h1", "a1"}},
		{"plain window", []state.Message{sys, h1, a1, h2}, 2, []string{"sys", "a1", "h2"}},
		{"system messages move to the front", []state.Message{h1, sys, a1, sys2, h2}, 1, []string{"sys", "sys2", "h2"}},
		{"keep 0 keeps only system", []state.Message{sys, h1, a1}, 0, []string{"sys"}},
		{"negative keeps only system", []state.Message{h1, sys}, -3, []string{"sys"}},
		{"empty", nil, 3, []string{}},
		{"window starting on a tool result extends to its call",
			[]state.Message{sys, h1, a1, h2, call2, r1, r2, a2}, 2, []string{"sys", "call2", "r1", "r2", "a2"}},
		{"window starting on the second result extends too",
			[]state.Message{h1, call2, r1, r2}, 1, []string{"call2", "r1", "r2"}},
		{"window starting on the call is fine",
			[]state.Message{h1, a1, call2, r1, r2, a2}, 4, []string{"call2", "r1", "r2", "a2"}},
		{"results in one tool message",
			[]state.Message{h1, call2, both, a2}, 2, []string{"call2", "both", "a2"}},
		{"orphan result goes with the nearest earlier call",
			[]state.Message{h1, call2, r1, orphan, a2}, 2, []string{"call2", "r1", "orphan", "a2"}},
		{"orphan with no call at all stays as is",
			[]state.Message{h1, orphan, a2}, 2, []string{"orphan", "a2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]state.Message(nil), tt.msgs...)
			got := Trim(tt.msgs, tt.keepLast)
			ids := make([]string, len(got))
			for i, m := range got {
				ids[i] = m.ID
			}
			require.Equal(t, tt.want, ids)
			require.Empty(t, cmp.Diff(in, tt.msgs), "input not modified")
		})
	}
}

func withID(m state.Message, id string) state.Message {
	m.ID = id
	return m
}
