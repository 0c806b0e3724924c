package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

func TestShowMessageIsLangChainsSerialization(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  state.Message
		want string
	}{
		{"human", state.Human("hi").WithID("h1"),
			`{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","id":"h1"}`},
		{"system without id", state.System("be brief"),
			`{"content":"be brief","additional_kwargs":{},"response_metadata":{},"type":"system"}`},
		{"ai with a tool call", state.AI("", state.ToolCall("c1", "add", `{"a": 2}`)).WithID("a1"),
			`{"content":"","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"a1","tool_calls":[{"id":"c1","name":"add","args":{"a":2},"type":"tool_call"}],"invalid_tool_calls":[]}`},
		{"ai with arguments that are no JSON object", state.AI("x", state.ToolCall("c1", "add", `[1`)).WithID("a1"),
			`{"content":"x","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"a1","tool_calls":[],"invalid_tool_calls":[{"id":"c1","name":"add","args":"[1","error":"the arguments are not a JSON object","type":"invalid_tool_call"}]}`},
		{"ai with empty arguments", state.AI("", state.ToolCall("c1", "now", ``)),
			`{"content":"","additional_kwargs":{},"response_metadata":{},"type":"ai","tool_calls":[{"id":"c1","name":"now","args":{},"type":"tool_call"}],"invalid_tool_calls":[]}`},
		{"tool", state.Tool("c1", "add", "3").WithID("t1"),
			`{"content":"3","additional_kwargs":{},"response_metadata":{},"type":"tool","name":"add","id":"t1","tool_call_id":"c1"}`},
		{"text and image", state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeHuman,
			Parts: []llms.ContentPart{llms.TextPart("see"), llms.ImageURLWithDetailPart("https://x/y.png", "low")}}},
			`{"content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}],"additional_kwargs":{},"response_metadata":{},"type":"human"}`},
		{"binary image", state.Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeHuman,
			Parts: []llms.ContentPart{llms.BinaryPart("image/png", []byte{1, 2})}}},
			`{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AQI="}}],"additional_kwargs":{},"response_metadata":{},"type":"human"}`},
		{"generic", state.Message{MessageContent: llms.TextParts(llms.ChatMessageTypeGeneric, "g")},
			`{"content":"g","additional_kwargs":{},"response_metadata":{},"type":"chat","role":"generic"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(showMessage(tc.msg))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestShownMessagesDecodeToTheSameMessages(t *testing.T) {
	for _, m := range []state.Message{
		state.Human("hi").WithID("h1"),
		state.AI("ok", state.ToolCall("c1", "add", `{"a":2}`)).WithID("a1"),
		state.Tool("c1", "add", "3").WithID("t1"),
		state.System("s").WithID("s1"),
	} {
		b, err := json.Marshal(showMessage(m))
		require.NoError(t, err)
		var back state.Message
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		require.Equal(t, m, back, "%s", b)
	}
}

// chat is the state of the messages-mode graph.
type chat struct {
	Messages state.Messages `json:"messages"`
}

// event is an emitted API event.
type event struct {
	name string
	data string
}

func runMessagesMode(t *testing.T, modes map[string]bool, input string) []event {
	t.Helper()
	b := graph.New[chat]()
	b.AddNode("reply", func(ctx context.Context, s chat) (chat, error) {
		w := graph.MessageWriter(ctx)
		w(graph.MessageChunk{MessageID: "r1", Text: "Hel"})
		w(graph.MessageChunk{MessageID: "r1", Text: "lo"})
		w(graph.MessageChunk{MessageID: "r1", Done: true})
		w(graph.MessageChunk{Text: "no id: not streamed"})
		return chat{Messages: state.Msgs(state.AI("Hello").WithID("r1"))}, nil
	})
	b.AddEdge(graph.Start, "reply")
	b.AddEdge("reply", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	a, err := newAdapter("chat", g)
	require.NoError(t, err)
	var got []event
	err = a.run(t.Context(), runParams{thread: "t1", runID: "r", modes: modes, input: json.RawMessage(input)},
		func(name string, data any) {
			b, err := json.Marshal(data)
			require.NoError(t, err)
			got = append(got, event{name, string(b)})
		})
	require.NoError(t, err)
	return got
}

func TestMessagesModeStreamsPartialThenCompleteMessages(t *testing.T) {
	got := runMessagesMode(t, map[string]bool{"messages": true}, `{"messages": [{"type": "human", "content": "hi", "id": "h1"}]}`)
	var streamed []event
	for _, e := range got {
		if e.name != "values" { // values run always, for wait and join
			streamed = append(streamed, e)
		}
	}
	chunk := func(text string) string {
		return `[{"content":"` + text + `","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"r1","tool_calls":[],"invalid_tool_calls":[],"tool_call_chunks":[]}]`
	}
	require.Equal(t, []event{
		{"messages/complete", `[{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","id":"h1"}]`},
		{"messages/metadata", `{"r1":{"metadata":{"checkpoint_ns":"","langgraph_checkpoint_ns":"","langgraph_node":"reply","langgraph_step":1}}}`},
		{"messages/partial", chunk("Hel")},
		{"messages/partial", chunk("Hello")},
		{"messages/complete", `[{"content":"Hello","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"r1","tool_calls":[],"invalid_tool_calls":[]}]`},
	}, streamed)
}

func TestMessagesModeIsNotStreamedUnlessAsked(t *testing.T) {
	for _, e := range runMessagesMode(t, map[string]bool{"values": true}, `{"messages": ["hi"]}`) {
		require.Equal(t, "values", e.name)
	}
}

func TestShowValueRendersEveryFieldThatHoldsMessages(t *testing.T) {
	type mixed struct {
		Plain  []state.Message
		Log    state.Append[state.Message] `json:"log"`
		Other  string                      `json:"other,omitempty"`
		Hidden state.Message               `json:"-"`
	}
	var v mixed
	v.Plain = []state.Message{state.Human("a").WithID("p1")}
	v.Log.Append(state.AI("b").WithID("l1"))
	require.NoError(t, v.Log.Channel().MergeWrites([]state.Channel{v.Log.Channel()}))
	b, err := json.Marshal(showValue(v))
	require.NoError(t, err)
	require.JSONEq(t, `{"Plain":[{"content":"a","additional_kwargs":{},"response_metadata":{},"type":"human","id":"p1"}],
		"log":[{"content":"b","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"l1","tool_calls":[],"invalid_tool_calls":[]}]}`, string(b))
}
