package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxJSONAnswer bounds the JSON answer jsonAsEventStream reads.
const maxJSONAnswer = 32 << 20

// isJSON reports whether h says the body is JSON.
func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && (mt == "application/json" || mt == "text/json")
}

// chatCompletion is the part of a non-streamed chat-completions answer
// that its streamed form carries.
type chatCompletion struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string            `json:"role"`
			Content   *string           `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage,omitempty"`
}

// jsonAsEventStream turns the JSON answer of a server that ignored
// "stream": true into the event stream langchaingo's streaming client
// reads: one chunk per choice with its whole message as the delta (tool
// calls numbered by index), a chunk with the usage, and [DONE]. Without
// it, that client finds no "data:" line in a JSON body and returns an
// empty answer with no error. A body that is not a chat completion is an
// error.
func jsonAsEventStream(body io.ReadCloser) (io.ReadCloser, error) {
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxJSONAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("llm: read the answer: %w", err)
	}
	if len(data) > maxJSONAnswer {
		return nil, fmt.Errorf("llm: the answer is over %d bytes", maxJSONAnswer)
	}
	var cc chatCompletion
	if err := json.Unmarshal(data, &cc); err != nil || len(cc.Choices) == 0 {
		return nil, fmt.Errorf("llm: the server answered a streaming request with JSON that is not a chat completion: %.200s", data)
	}
	var out bytes.Buffer
	event := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out.WriteString("data: ")
		out.Write(b)
		out.WriteString("\n\n")
		return nil
	}
	type delta struct {
		Role      string           `json:"role,omitempty"`
		Content   *string          `json:"content,omitempty"`
		ToolCalls []map[string]any `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	}
	type chunk struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   string          `json:"model"`
		Choices []choice        `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}
	for _, c := range cc.Choices {
		d := delta{Role: c.Message.Role, Content: c.Message.Content}
		for i, raw := range c.Message.ToolCalls {
			var call map[string]any
			if err := json.Unmarshal(raw, &call); err != nil {
				return nil, fmt.Errorf("llm: a tool call of the answer: %w", err)
			}
			call["index"] = i
			d.ToolCalls = append(d.ToolCalls, call)
		}
		err := event(chunk{ID: cc.ID, Object: "chat.completion.chunk", Created: cc.Created, Model: cc.Model,
			Choices: []choice{{Index: c.Index, Delta: d, FinishReason: c.FinishReason}}})
		if err != nil {
			return nil, err
		}
	}
	if len(cc.Usage) > 0 && string(cc.Usage) != "null" {
		err := event(chunk{ID: cc.ID, Object: "chat.completion.chunk", Created: cc.Created, Model: cc.Model,
			Choices: []choice{}, Usage: cc.Usage})
		if err != nil {
			return nil, err
		}
	}
	out.WriteString("data: [DONE]\n\n")
	return io.NopCloser(&out), nil
}
