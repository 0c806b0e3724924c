package state

import (
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// firstByte returns the first byte of data that is not JSON white space.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// roles maps the roles and types of LangChain's and OpenAI's messages to
// langchaingo's.
var roles = map[string]llms.ChatMessageType{
	"human": llms.ChatMessageTypeHuman, "user": llms.ChatMessageTypeHuman,
	"ai": llms.ChatMessageTypeAI, "assistant": llms.ChatMessageTypeAI,
	"system": llms.ChatMessageTypeSystem, "developer": llms.ChatMessageTypeSystem,
	"tool": llms.ChatMessageTypeTool, "function": llms.ChatMessageTypeFunction,
	"generic": llms.ChatMessageTypeGeneric, "chat": llms.ChatMessageTypeGeneric,
	// The types of LangChain's message chunks, which streams carry.
	"HumanMessageChunk": llms.ChatMessageTypeHuman, "AIMessageChunk": llms.ChatMessageTypeAI,
	"SystemMessageChunk": llms.ChatMessageTypeSystem, "ToolMessageChunk": llms.ChatMessageTypeTool,
	"ChatMessageChunk": llms.ChatMessageTypeGeneric,
}

// coerceShort reads a bare string (a human message) or a [role, content]
// pair.
func (m *Message) coerceShort(data []byte) error {
	var text string
	if firstByte(data) == '"' {
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		*m = Message{MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, text)}
		return nil
	}
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil {
		return err
	}
	var role string
	if len(pair) != 2 || json.Unmarshal(pair[0], &role) != nil {
		return fmt.Errorf("state: a message given as a list must be a [role, content] pair, got %s", data)
	}
	return m.coerce(jsonMessage{Role: role, Content: pair[1]})
}

// coerce reads a LangChain or OpenAI message object.
func (m *Message) coerce(jm jsonMessage) error {
	kind := jm.Type
	if kind == "" {
		kind = jm.Role
	}
	role, ok := roles[kind]
	if !ok {
		return fmt.Errorf("state: message %q has an unknown type or role %q (want human, ai, system or tool; or user, assistant)", jm.ID, kind)
	}
	out := Message{ID: jm.ID, Name: jm.Name, MessageContent: llms.MessageContent{Role: role}}
	parts, text, err := coerceContent(jm.Content)
	if err != nil {
		return fmt.Errorf("state: message %q: %w", jm.ID, err)
	}
	if role == llms.ChatMessageTypeTool {
		if jm.ToolCallID == "" {
			return fmt.Errorf("state: tool message %q has no tool_call_id", jm.ID)
		}
		out.Parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: jm.ToolCallID, Name: jm.Name, Content: text}}
		*m = out
		return nil
	}
	out.Parts = parts
	calls, err := coerceToolCalls(jm.ToolCalls)
	if err != nil {
		return fmt.Errorf("state: message %q: %w", jm.ID, err)
	}
	out.Parts = append(out.Parts, calls...)
	if out.Parts == nil {
		out.Parts = []llms.ContentPart{}
	}
	*m = out
	return nil
}

// coerceContent reads a string or a list of content blocks; text joins the
// text blocks (a tool message's content).
func coerceContent(raw json.RawMessage) (parts []llms.ContentPart, text string, err error) {
	switch firstByte(raw) {
	case 0, 'n':
		return nil, "", nil
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, "", err
		}
		if text == "" {
			return nil, "", nil
		}
		return []llms.ContentPart{llms.TextContent{Text: text}}, text, nil
	}
	var blocks []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, "", fmt.Errorf("content must be a string or a list of content blocks: %w", err)
	}
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, llms.TextContent{Text: b.Text})
			text += b.Text
		case "image_url":
			var url struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			}
			if firstByte(b.ImageURL) == '"' {
				err = json.Unmarshal(b.ImageURL, &url.URL)
			} else {
				err = json.Unmarshal(b.ImageURL, &url)
			}
			if err != nil || url.URL == "" {
				return nil, "", fmt.Errorf("content block %d: image_url needs a URL", i)
			}
			parts = append(parts, llms.ImageURLContent{URL: url.URL, Detail: url.Detail})
		default:
			return nil, "", fmt.Errorf("content block %d has type %q (text and image_url are read)", i, b.Type)
		}
	}
	return parts, text, nil
}

// coerceToolCalls reads LangChain's tool calls ({id, name, args}) and
// OpenAI's ({id, type, function: {name, arguments}}).
func coerceToolCalls(raw json.RawMessage) ([]llms.ContentPart, error) {
	if firstByte(raw) == 0 || firstByte(raw) == 'n' {
		return nil, nil
	}
	var calls []struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Args     json.RawMessage `json:"args"`
		Type     string          `json:"type"`
		Function *fn             `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	var parts []llms.ContentPart
	for i, c := range calls {
		f := c.Function
		if f == nil {
			args := string(c.Args)
			if firstByte(c.Args) == 0 || firstByte(c.Args) == 'n' {
				args = "{}"
			}
			f = &fn{Name: c.Name, Arguments: args}
		}
		if f.Name == "" {
			return nil, fmt.Errorf("tool call %d has no name", i)
		}
		parts = append(parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: f.Name, Arguments: f.Arguments}})
	}
	return parts, nil
}
