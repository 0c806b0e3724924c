package llm

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

const anthropicToolAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
 "content":[{"type":"text","text":"Checking."},
            {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
            {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}}],
 "usage":{"input_tokens":5,"output_tokens":9,"cache_read_input_tokens":2}}`

func TestAnthropicMessages(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, anthropicToolAnswer)
	})
	m := anthropicModel(t, fs)

	conv := []state.Message{
		state.System("Be terse."),
		state.Human("Weather in Oslo and Bergen?"),
		state.System("Use metric units."),
		state.AI("Let me look.",
			state.ToolCall("toolu_a", "get_weather", `{"city":"Oslo"}`),
			state.ToolCall("toolu_b", "get_weather", `{"city":"Bergen"}`)),
		{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "toolu_a", Content: "rain"},
			llms.ToolCallResponse{ToolCallID: "toolu_b", Content: "sun"},
		}}},
		state.Human("And Paris and Rome?"),
	}
	resp, err := m.Generate(context.Background(), conv, WithTools([]llms.Tool{weatherTool}))
	require.NoError(t, err)

	// Three choices (one per content block) merged into one message.
	want := state.AI("Checking.",
		state.ToolCall("toolu_1", "get_weather", `{"city":"Paris"}`),
		state.ToolCall("toolu_2", "get_weather", `{"city":"Rome"}`))
	require.Empty(t, cmp.Diff(want, resp.Message))
	// Every choice repeats the totals: not summed. Cache reads count as prompt.
	require.Equal(t, Usage{PromptTokens: 7, CompletionTokens: 9, TotalTokens: 16}, resp.Usage)
	require.Equal(t, StopToolCalls, resp.StopReason)

	req := fs.request(0)
	require.Equal(t, "/v1/messages", req.Path)
	require.Equal(t, "ak-test", req.Header.Get("X-Api-Key"))
	body := fs.jsonBody(t, 0)
	require.Equal(t, "claude-test", body["model"])
	require.Equal(t, "Be terse.\n\nUse metric units.", body["system"])

	// langchaingo sends only Parts[0] of a message: the adapter sends one
	// block per message so that no tool call or result is lost.
	type block struct{ Role, Type, Text, ID, ToolUseID, Content string }
	var blocks []block
	for _, raw := range body["messages"].([]any) {
		mm := raw.(map[string]any)
		content := mm["content"].([]any)
		require.Len(t, content, 1)
		c := content[0].(map[string]any)
		b := block{Role: mm["role"].(string), Type: c["type"].(string)}
		b.Text, _ = c["text"].(string)
		b.ID, _ = c["id"].(string)
		b.ToolUseID, _ = c["tool_use_id"].(string)
		b.Content, _ = c["content"].(string)
		blocks = append(blocks, b)
	}
	require.Empty(t, cmp.Diff([]block{
		{Role: "user", Type: "text", Text: "Weather in Oslo and Bergen?"},
		{Role: "assistant", Type: "text", Text: "Let me look."},
		{Role: "assistant", Type: "tool_use", ID: "toolu_a"},
		{Role: "assistant", Type: "tool_use", ID: "toolu_b"},
		{Role: "user", Type: "tool_result", ToolUseID: "toolu_a", Content: "rain"},
		{Role: "user", Type: "tool_result", ToolUseID: "toolu_b", Content: "sun"},
		{Role: "user", Type: "text", Text: "And Paris and Rome?"},
	}, blocks))
	tools := body["tools"].([]any)
	require.Equal(t, "get_weather", tools[0].(map[string]any)["name"])
}

func TestAnthropicStreaming(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeAnthropicSSE(w,
			`{"type":"message_start","message":{"id":"m","model":"claude-test","role":"assistant","type":"message","content":[],"usage":{"input_tokens":5,"output_tokens":0}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Check"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ing."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`,
			`{"type":"message_stop"}`,
		)
	})
	m := anthropicModel(t, fs)
	var toks tokenCollector
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("Weather in Paris?")},
		WithTools([]llms.Tool{weatherTool}), WithTokenSink(toks.sink))
	require.NoError(t, err)
	require.True(t, fs.jsonBody(t, 0)["stream"].(bool))
	require.Equal(t, []string{"Check", "ing."}, toks.get())
	require.Empty(t, cmp.Diff(
		state.AI("Checking.", state.ToolCall("toolu_1", "get_weather", `{"city":"Paris"}`)),
		resp.Message))
	require.Equal(t, StopToolCalls, resp.StopReason)
	require.Equal(t, 9, resp.Usage.CompletionTokens)
	require.Equal(t, 5, resp.Usage.PromptTokens)
}

// The anthropic client a user builds (no WrapTransport) is detected as
// anthropic from its type and gets the same treatment.
func TestAnthropicForeignClientDetected(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, anthropicToolAnswer)
	})
	lc := newRawAnthropic(t, fs.URL)
	require.Equal(t, ProviderAnthropic, detectProvider(lc))
	m := FromLangchain(lc, "anthropic:raw")
	resp, err := m.Generate(context.Background(), []state.Message{
		state.Human("hi"),
		state.AI("", state.ToolCall("t1", "f", `{}`), state.ToolCall("t2", "g", "")),
		state.Tool("t1", "f", "1"), state.Tool("t2", "g", "2"),
	})
	require.NoError(t, err)
	require.Len(t, resp.Message.ToolCalls(), 2)
	body := string(fs.request(0).Body)
	require.Equal(t, 2, strings.Count(body, `"type":"tool_use"`), body)
	require.Equal(t, 2, strings.Count(body, `"type":"tool_result"`), body)
}
