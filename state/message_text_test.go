package state_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

func TestMessageText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  state.Message
		want string
	}{
		{
			name: "a human message's text is its text",
			msg:  state.Human("hi"),
			want: "hi",
		},
		{
			name: "a system message's text is its text",
			msg:  state.System("be brief"),
			want: "be brief",
		},
		{
			name: "a tool message's text is the tool's output",
			msg:  state.Tool("call-1", "read_file", "package main"),
			want: "package main",
		},
		{
			name: "an AI message's text leaves out its tool calls",
			msg:  state.AI("Reading it.", state.ToolCall("call-1", "read_file", `{"path":"main.go"}`)),
			want: "Reading it.",
		},
		{
			name: "an AI message with only tool calls has no text",
			msg:  state.AI("", state.ToolCall("call-1", "read_file", `{"path":"main.go"}`)),
			want: "",
		},
		{
			name: "text parts are concatenated in order",
			msg: state.Message{MessageContent: llms.MessageContent{
				Role:  llms.ChatMessageTypeHuman,
				Parts: []llms.ContentPart{llms.TextPart("one, "), llms.TextPart("two")},
			}},
			want: "one, two",
		},
		{
			name: "images and binary parts are not text",
			msg: state.Message{MessageContent: llms.MessageContent{
				Role: llms.ChatMessageTypeHuman,
				Parts: []llms.ContentPart{
					llms.TextPart("look: "),
					llms.ImageURLPart("https://example.com/cat.png"),
					llms.BinaryPart("image/png", []byte{0x89, 'P', 'N', 'G'}),
					llms.TextPart("a cat"),
				},
			}},
			want: "look: a cat",
		},
		{
			name: "several tool results are concatenated in order",
			msg: state.Message{MessageContent: llms.MessageContent{
				Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: "a", Name: "x", Content: "first;"},
					llms.ToolCallResponse{ToolCallID: "b", Name: "y", Content: "second"},
				},
			}},
			want: "first;second",
		},
		{
			name: "a message without parts has no text",
			msg:  state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeAI}},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Empty(t, cmp.Diff(tt.want, tt.msg.Text()))
		})
	}
}
