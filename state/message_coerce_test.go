package state_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// The message forms LangGraph's add_messages accepts decode as messages.
func TestMessageDecodesLangChainAndOpenAIForms(t *testing.T) {
	call := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "add", Arguments: `{"a":1}`}}
	for _, tc := range []struct {
		name string
		in   string
		want state.Message
	}{
		{"a bare string", `"hi"`, state.Message{MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, "hi")}},
		{"a role and content pair", `["user", "hi"]`, state.Message{MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, "hi")}},
		{"a LangChain human message", `{"type":"human","content":"hi","id":"m1"}`,
			state.Message{ID: "m1", MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, "hi")}},
		{"an OpenAI user message", `{"role":"user","content":"hi"}`, state.Message{MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, "hi")}},
		{"a system message", `{"role":"system","content":"be brief"}`, state.Message{MessageContent: llms.TextParts(llms.ChatMessageTypeSystem, "be brief")}},
		{"content blocks", `{"type":"human","content":[{"type":"text","text":"look: "},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}`,
			state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeHuman,
				Parts: []llms.ContentPart{llms.TextContent{Text: "look: "}, llms.ImageURLContent{URL: "https://x/y.png"}}}}},
		{"LangChain tool calls", `{"type":"ai","content":"","tool_calls":[{"id":"c1","name":"add","args":{"a":1}}]}`,
			state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}}}},
		{"OpenAI tool calls", `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}]}`,
			state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}}}},
		{"a streamed chunk", `{"type":"AIMessageChunk","content":"Hel","id":"r1"}`,
			state.Message{ID: "r1", MessageContent: llms.TextParts(llms.ChatMessageTypeAI, "Hel")}},
		{"a tool result", `{"type":"tool","content":"2","tool_call_id":"c1","name":"add"}`,
			state.Message{Name: "add", MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "add", Content: "2"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got state.Message
			require.NoError(t, json.Unmarshal([]byte(tc.in), &got))
			require.Equal(t, tc.want, got)
		})
	}
}

// What cannot be read as a message is refused, not stored empty.
func TestMessageRefusesUnreadableForms(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"an unknown type", `{"type":"robot","content":"hi"}`, "unknown type or role"},
		{"a tool message without its call", `{"type":"tool","content":"2"}`, "tool_call_id"},
		{"a list that is not a pair", `["user"]`, "[role, content] pair"},
		{"an unknown content block", `{"type":"human","content":[{"type":"audio"}]}`, "audio"},
		{"a tool call without a name", `{"type":"ai","tool_calls":[{"id":"c1"}]}`, "no name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m state.Message
			require.ErrorContains(t, json.Unmarshal([]byte(tc.in), &m), tc.want)
		})
	}
}

// A message decoded from another form encodes in the package's own form,
// which decodes to the same message.
func TestCoercedMessageRoundTrips(t *testing.T) {
	var m state.Message
	require.NoError(t, json.Unmarshal([]byte(`{"type":"ai","content":"ok","tool_calls":[{"id":"c1","name":"add","args":{}}]}`), &m))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var back state.Message
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, m, back)
}
