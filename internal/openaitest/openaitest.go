// Package openaitest writes scripted model replies in the wire format of
// OpenAI's /v1/chat/completions, for the fake model servers of tests.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/agentgraph/agentgraph/llm"
)

// ReadRequest decodes the body of a request to /v1/chat/completions. For
// another path or a body that is not JSON it writes the error answer
// (404, 400) and returns false.
func ReadRequest(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return nil, false
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// AssistantTurns returns the number of assistant messages in the decoded
// body of a chat-completions request: the index, from 0, of the model call
// within its conversation.
func AssistantTurns(body map[string]any) int {
	k := 0
	for _, m := range body["messages"].([]any) {
		if m.(map[string]any)["role"] == "assistant" {
			k++
		}
	}
	return k
}

// WriteReply answers the chat-completions request whose decoded body is
// body with reply — as server-sent events when the request asks for a
// stream — under the completion ID id.
func WriteReply(w http.ResponseWriter, body map[string]any, id string, reply llm.Reply) {
	var calls []map[string]any
	for i, c := range reply.ToolCalls {
		calls = append(calls, map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.FunctionCall.Name, "arguments": c.FunctionCall.Arguments},
		})
	}
	usage := map[string]any{"prompt_tokens": reply.Usage.PromptTokens, "completion_tokens": reply.Usage.CompletionTokens, "total_tokens": reply.Usage.TotalTokens}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if stream, _ := body["stream"].(bool); stream {
		w.Header().Set("Content-Type", "text/event-stream")
		delta := map[string]any{"role": "assistant", "content": reply.Text}
		if len(calls) > 0 {
			delta["tool_calls"] = calls
		}
		for _, chunk := range []map[string]any{
			{"id": id, "object": "chat.completion.chunk", "model": "test-model", "choices": []any{map[string]any{"index": 0, "delta": delta}}},
			{"id": id, "object": "chat.completion.chunk", "model": "test-model", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
			{"id": id, "object": "chat.completion.chunk", "model": "test-model", "choices": []any{}, "usage": usage},
		} {
			data, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	data, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "model": "test-model", "usage": usage,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
