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

func TestOpenAINonStreaming(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, `{
  "id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",
  "choices":[{"index":0,"finish_reason":"tool_calls","message":{
     "role":"assistant","content":"Checking.",
     "tool_calls":[
       {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
       {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}}],
  "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`)
	})
	m := openAIModel(t, fs)

	conv := []state.Message{
		state.System("You are terse."),
		state.Human("Weather in Oslo and Bergen?"),
		state.AI("Let me look.",
			state.ToolCall("call_a", "get_weather", `{"city":"Oslo"}`),
			state.ToolCall("call_b", "get_weather", `{"city":"Bergen"}`)),
		// One tool message holding both results: OpenAI wants one per message.
		{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_a", Content: "rain"},
			llms.ToolCallResponse{ToolCallID: "call_b", Content: "sun"},
		}}},
		state.Human("And Paris and Rome?"),
	}
	resp, err := m.Generate(context.Background(), conv,
		WithTools([]llms.Tool{weatherTool}), WithTemperature(0.25), WithMaxTokens(64), WithMessageID("msg-1"))
	require.NoError(t, err)

	want := state.AI("Checking.",
		state.ToolCall("call_1", "get_weather", `{"city":"Paris"}`),
		state.ToolCall("call_2", "get_weather", `{"city":"Rome"}`))
	want.ID = "msg-1"
	require.Empty(t, cmp.Diff(want, resp.Message))
	require.Equal(t, Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}, resp.Usage)
	require.Equal(t, StopToolCalls, resp.StopReason)
	require.Equal(t, 1, resp.Attempts)

	// What went over the wire.
	require.Equal(t, 1, fs.hits())
	req := fs.request(0)
	require.Equal(t, "/v1/chat/completions", req.Path)
	require.Equal(t, "Bearer sk-test", req.Header.Get("Authorization"))
	body := fs.jsonBody(t, 0)
	require.Equal(t, "gpt-test", body["model"])
	require.InDelta(t, 0.25, body["temperature"], 1e-9)
	require.EqualValues(t, 64, body["max_completion_tokens"])
	require.Nil(t, body["stream"])

	type wireMsg struct {
		Role       string
		ToolCallID string
		Content    any
		Calls      int
	}
	var got []wireMsg
	for _, raw := range body["messages"].([]any) {
		mm := raw.(map[string]any)
		wm := wireMsg{Role: mm["role"].(string), Content: mm["content"]}
		if id, ok := mm["tool_call_id"].(string); ok {
			wm.ToolCallID = id
		}
		if calls, ok := mm["tool_calls"].([]any); ok {
			wm.Calls = len(calls)
		}
		got = append(got, wm)
	}
	roles := make([]string, len(got))
	for i, g := range got {
		roles[i] = g.Role
	}
	require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "user"}, roles)
	require.Equal(t, 2, got[2].Calls)
	require.Equal(t, "call_a", got[3].ToolCallID)
	require.Equal(t, "rain", got[3].Content)
	require.Equal(t, "call_b", got[4].ToolCallID)
	require.Equal(t, "sun", got[4].Content)

	tools := body["tools"].([]any)
	require.Len(t, tools, 1)
	require.Equal(t, "function", tools[0].(map[string]any)["type"])
}

// Streaming answers in the shapes real servers send. langchaingo v0.1.14
// assembles streamed tool calls ignoring "index"; WrapTransport (installed
// by New) repairs that, so all shapes give the same calls.
func TestOpenAIStreaming(t *testing.T) {
	weather := func(id, city string) llms.ToolCall {
		return state.ToolCall(id, "get_weather", `{"city":"`+city+`"}`)
	}
	usageChunk := `{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`
	tc := func(rest string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[` + rest + `]}}]}`
	}
	finish := func(reason string) string {
		return `{"choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
	}
	tests := []struct {
		name      string
		chunks    []string
		wantText  string
		wantToks  []string
		wantCalls []llms.ToolCall
		wantStop  string
	}{
		{
			name: "text only",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"lo, "}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"world"}}]}`,
				finish("stop"), usageChunk,
			},
			wantText: "Hello, world", wantToks: []string{"Hel", "lo, ", "world"}, wantStop: StopEnd,
		},
		{
			name: "text then parallel tool calls, one after the other (api.openai.com)",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Checking"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"."}}]}`,
				tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}`),
				tc(`{"index":0,"function":{"arguments":"{\"city\":"}}`),
				tc(`{"index":0,"function":{"arguments":"\"Paris\"}"}}`),
				tc(`{"index":1,"id":"call_2","type":"function","function":{"name":"get_weather","arguments":""}}`),
				tc(`{"index":1,"function":{"arguments":"{\"city\":\"Ro"}}`),
				tc(`{"index":1,"function":{"arguments":"me\"}"}}`),
				finish("tool_calls"), usageChunk,
			},
			wantText: "Checking.", wantToks: []string{"Checking", "."},
			wantCalls: []llms.ToolCall{weather("call_1", "Paris"), weather("call_2", "Rome")},
			wantStop:  StopToolCalls,
		},
		{
			name: "parallel tool calls interleaved by index",
			chunks: []string{
				tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}`),
				tc(`{"index":1,"id":"call_2","type":"function","function":{"name":"get_weather","arguments":""}}`),
				tc(`{"index":0,"function":{"arguments":"{\"city\":"}}`),
				tc(`{"index":1,"function":{"arguments":"{\"city\":"}}`),
				tc(`{"index":1,"function":{"arguments":"\"Rome\"}"}}`),
				tc(`{"index":0,"function":{"arguments":"\"Paris\"}"}}`),
				finish("tool_calls"), usageChunk,
			},
			wantCalls: []llms.ToolCall{weather("call_1", "Paris"), weather("call_2", "Rome")},
			wantStop:  StopToolCalls,
		},
		{
			name: "server repeats id and type in every delta",
			chunks: []string{
				tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}`),
				tc(`{"index":0,"id":"call_1","type":"function","function":{"arguments":"{\"city\":"}}`),
				tc(`{"index":0,"id":"call_1","type":"function","function":{"arguments":"\"Paris\"}"}}`),
				finish("tool_calls"), usageChunk,
			},
			wantCalls: []llms.ToolCall{weather("call_1", "Paris")},
			wantStop:  StopToolCalls,
		},
		{
			name: "whole calls all at index 0, finish_reason stop (Ollama)",
			chunks: []string{
				tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
					`{"index":0,"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}`),
				finish("stop"), usageChunk,
			},
			wantCalls: []llms.ToolCall{weather("call_1", "Paris"), weather("call_2", "Rome")},
			wantStop:  StopToolCalls,
		},
		{
			name: "delta without arguments and stream without finish_reason",
			chunks: []string{
				tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather"}}`),
				tc(`{"index":0,"function":{"arguments":""}}`),
				tc(`{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}`),
				usageChunk,
			},
			wantCalls: []llms.ToolCall{weather("call_1", "Paris")},
			wantStop:  StopToolCalls,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
				writeSSE(w, tt.chunks...)
			})
			m := openAIModel(t, fs)
			var toks tokenCollector
			resp, err := m.Generate(context.Background(), []state.Message{state.Human("Weather in Paris and Rome?")},
				WithTools([]llms.Tool{weatherTool}), WithTokenSink(toks.sink))
			require.NoError(t, err)

			require.True(t, fs.jsonBody(t, 0)["stream"].(bool), "a token sink must switch to streaming")
			require.Equal(t, tt.wantText, resp.Message.Text())
			require.Empty(t, cmp.Diff(tt.wantCalls, resp.Message.ToolCalls()))
			require.Equal(t, tt.wantToks, toks.get())
			require.Equal(t, tt.wantText, strings.Join(toks.get(), ""), "tokens concatenate to the text")
			require.Equal(t, Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}, resp.Usage)
			require.Equal(t, tt.wantStop, resp.StopReason)
		})
	}
}

// A client built outside New (no WrapTransport) still works for sequential
// streams, and its tool-call JSON never reaches the token sink.
func TestOpenAIStreamingForeignClient(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeSSE(w,
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"On it"}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	})
	m := FromLangchain(newRawOpenAI(t, fs.URL+"/v1"), "raw")
	var toks tokenCollector
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")}, WithTokenSink(toks.sink))
	require.NoError(t, err)
	require.Equal(t, []string{"On it"}, toks.get())
	require.Empty(t, cmp.Diff([]llms.ToolCall{state.ToolCall("call_1", "get_weather", `{"city":"Paris"}`)}, resp.Message.ToolCalls()))
}

// Gemini's OpenAI endpoint, through the factory: key from GEMINI_API_KEY,
// tool calls without IDs get stable ones.
func TestGoogleAIThroughOpenAIEndpoint(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"",
		  "tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
		                {"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}}],
		  "usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	})
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "g-key")
	m, err := New(context.Background(), "googleai:gemini-test", WithBaseURL(fs.URL+"/v1beta/openai"))
	require.NoError(t, err)

	conv := []state.Message{state.Human("Weather in Paris and Rome?")}
	resp, err := m.Generate(context.Background(), conv, WithTools([]llms.Tool{weatherTool}), WithMaxTokens(10))
	require.NoError(t, err)
	req := fs.request(0)
	require.Equal(t, "/v1beta/openai/chat/completions", req.Path)
	require.Equal(t, "Bearer g-key", req.Header.Get("Authorization"))
	body := fs.jsonBody(t, 0)
	require.EqualValues(t, 10, body["max_tokens"], "non-OpenAI servers get the legacy max_tokens field")
	require.Nil(t, body["max_completion_tokens"])

	calls := resp.Message.ToolCalls()
	require.Len(t, calls, 2)
	require.NotEqual(t, calls[0].ID, calls[1].ID)
	for _, c := range calls {
		require.True(t, strings.HasPrefix(c.ID, "call_"), c.ID)
		require.Equal(t, "function", c.Type)
	}
	require.Equal(t, StopToolCalls, resp.StopReason)

	// Same conversation, same answer: same IDs.
	again, err := m.Generate(context.Background(), conv, WithTools([]llms.Tool{weatherTool}))
	require.NoError(t, err)
	require.Equal(t, calls, again.Message.ToolCalls())
}
