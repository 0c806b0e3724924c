package llm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// A server that ignores "stream": true and answers with one JSON object.
const nonStreamingAnswer = `{
  "id":"chatcmpl-9","object":"chat.completion","created":1,"model":"m",
  "choices":[{"index":0,"finish_reason":"tool_calls","message":{
     "role":"assistant","content":"Checking.",
     "tool_calls":[
       {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
       {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}}],
  "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

func TestAStreamingCallToAServerThatDoesNotStreamGetsItsWholeAnswer(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, nonStreamingAnswer)
	})
	m := openAIModel(t, fs)
	var mu sync.Mutex
	var streamed strings.Builder
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("Weather in Paris and Rome?")},
		WithTools([]llms.Tool{weatherTool}), WithTokenSink(func(_ context.Context, s string) {
			mu.Lock()
			defer mu.Unlock()
			streamed.WriteString(s)
		}))
	require.NoError(t, err)
	want := state.AI("Checking.",
		state.ToolCall("call_1", "get_weather", `{"city":"Paris"}`),
		state.ToolCall("call_2", "get_weather", `{"city":"Rome"}`))
	require.Empty(t, cmp.Diff(want, resp.Message))
	require.Equal(t, "Checking.", streamed.String(), "the text reaches the token sink")
	require.Equal(t, StopToolCalls, resp.StopReason)
	require.Equal(t, true, fs.jsonBody(t, 0)["stream"], "the call asked for a stream")
}

func TestAStreamingCallAnsweredWithJSONThatIsNoCompletionFails(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
	})
	m := openAIModel(t, fs)
	_, err := m.Generate(context.Background(), []state.Message{state.Human("hi")},
		WithTokenSink(func(context.Context, string) {}))
	require.ErrorContains(t, err, "answered a streaming request with JSON that is not a chat completion")
	require.Equal(t, 1, fs.hits(), "an answer that cannot be read is not asked for again")
}

func TestAStreamingCallAnsweredWithJSONLabelledAsAnEventStreamGetsItsAnswer(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "\n"+nonStreamingAnswer)
	})
	m := openAIModel(t, fs)
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("Weather in Paris and Rome?")},
		WithTools([]llms.Tool{weatherTool}), WithTokenSink(func(context.Context, string) {}))
	require.NoError(t, err)
	require.Equal(t, "Checking.", resp.Message.Text())
	require.Len(t, resp.Message.ToolCalls(), 2)
}
