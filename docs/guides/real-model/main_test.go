package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// reply is one scripted answer of the fake model server: text, or one
// tool call.
type reply struct {
	Text           string
	CallName, Args string
}

// fakeOpenAI is a server speaking OpenAI's chat-completions protocol, as
// an OpenAI-compatible server (vLLM, llama.cpp, LM Studio…) does: it
// answers the n-th request with the n-th reply, streamed when the request
// asks for a stream, and records the requests' bodies.
type fakeOpenAI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
}

func newFakeOpenAI(t *testing.T, replies ...reply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, body)
		n := len(f.requests)
		f.mu.Unlock()
		if n > len(replies) {
			http.Error(w, `{"error":{"message":"no more scripted replies"}}`, http.StatusBadRequest)
			return
		}
		f.answer(w, body, fmt.Sprintf("chatcmpl-%d", n), replies[n-1])
	}))
	t.Cleanup(f.Close)
	return f
}

// answer writes rep as a chat completion, or as its stream of chunks.
func (f *fakeOpenAI) answer(w http.ResponseWriter, body map[string]any, id string, rep reply) {
	usage := map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	finish := "stop"
	if rep.CallName != "" {
		finish = "tool_calls"
		msg["tool_calls"] = []any{map[string]any{"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]any{"name": rep.CallName, "arguments": rep.Args}}}
	}
	if stream, _ := body["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "model": body["model"], "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	if rep.CallName != "" {
		chunk(delta(map[string]any{"role": "assistant", "tool_calls": msg["tool_calls"]}, nil), nil)
	}
	for i, word := range strings.SplitAfter(rep.Text, " ") {
		d := map[string]any{"content": word}
		if i == 0 {
			d["role"] = "assistant"
		}
		chunk(delta(d, nil), nil)
	}
	chunk(delta(map[string]any{}, finish), nil)
	chunk([]any{}, map[string]any{"usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *fakeOpenAI) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// The guide's run, against the fake server: the model asks for the tool,
// then answers with its result, streamed.
func TestAgentOnAnOpenAICompatibleServer(t *testing.T) {
	srv := newFakeOpenAI(t,
		reply{CallName: "get_weather", Args: `{"city":"Paris"}`},
		reply{Text: "It is sunny and 24°C in Paris."},
	)
	var out strings.Builder
	spec := "openai-compatible:test-model@" + srv.URL + "/v1"
	require.NoError(t, run(t.Context(), spec, "Weather in Paris?", &out))
	require.Equal(t, `→ get_weather {"city":"Paris"}
← sunny, 24°C
It is sunny and 24°C in Paris.
(2 model calls, 50 tokens)
`, out.String())

	first := srv.request(0)
	require.Equal(t, "test-model", first["model"])
	tools := first["tools"].([]any)
	require.Len(t, tools, 1)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	require.Equal(t, "get_weather", fn["name"])
	require.Equal(t, []any{"city"}, fn["parameters"].(map[string]any)["required"], "the schema comes from the tags")
	msgs := first["messages"].([]any)
	require.Equal(t, "system", msgs[0].(map[string]any)["role"])

	second := srv.request(1)["messages"].([]any)
	last := second[len(second)-1].(map[string]any)
	require.Equal(t, "tool", last["role"])
	require.Equal(t, "sunny, 24°C", last["content"], "the tool's result goes back to the model")
}

// A tool error is a message the model reads, not a failed run.
func TestToolErrorReachesTheModel(t *testing.T) {
	srv := newFakeOpenAI(t,
		reply{CallName: "get_weather", Args: `{"city":"Atlantis"}`},
		reply{Text: "I have no forecast for Atlantis."},
	)
	var out strings.Builder
	require.NoError(t, run(t.Context(), "openai-compatible:test-model@"+srv.URL+"/v1", "Weather in Atlantis?", &out))
	require.Contains(t, out.String(), "I have no forecast for Atlantis.\n")
	second := srv.request(1)["messages"].([]any)
	require.Contains(t, second[len(second)-1].(map[string]any)["content"], `no forecast for "Atlantis"`)
}

// Without a key, the spec of a hosted provider fails before any request,
// naming the variable to set.
func TestMissingKeyNamesTheVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	err := run(t.Context(), "openai:gpt-4o-mini", "hi", io.Discard)
	require.ErrorContains(t, err, "OPENAI_API_KEY")
}
