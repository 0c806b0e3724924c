package state

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// Message is one chat message: langchaingo's [llms.MessageContent] (a role and
// its parts — text, images, tool calls, tool results) with the stable ID the
// [Messages] reducer needs to replace or remove it, and an optional
// participant name.
//
// Message round-trips through JSON losslessly, tool calls included; it does
// not rely on langchaingo's own JSON encoding of parts.
type Message struct {
	llms.MessageContent
	// ID identifies the message inside a [Messages] field. Empty IDs are
	// assigned when the message is appended.
	ID string
	// Name optionally names the participant (or the tool, for tool messages).
	Name string
}

// NewID returns a new random message ID (a version 4 UUID string).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ crashes the
		// program instead of returning an error), so this is unreachable.
		return ""
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// Human returns a human (user) message with one text part.
func Human(text string) Message {
	return Message{MessageContent: llms.TextParts(llms.ChatMessageTypeHuman, text)}
}

// System returns a system message with one text part.
func System(text string) Message {
	return Message{MessageContent: llms.TextParts(llms.ChatMessageTypeSystem, text)}
}

// AI returns an AI (assistant) message with the given text (omitted when
// empty) followed by the given tool calls.
func AI(text string, calls ...llms.ToolCall) Message {
	m := Message{MessageContent: llms.MessageContent{Role: llms.ChatMessageTypeAI}}
	if text != "" {
		m.Parts = append(m.Parts, llms.TextPart(text))
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, c)
	}
	return m
}

// Tool returns a tool message carrying the result of the tool call callID of
// the tool named name.
func Tool(callID, name, content string) Message {
	return Message{
		MessageContent: llms.MessageContent{
			Role:  llms.ChatMessageTypeTool,
			Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: callID, Name: name, Content: content}},
		},
		Name: name,
	}
}

// ToolCall returns an [llms.ToolCall] of type "function" with the given
// call ID, function name and JSON arguments.
func ToolCall(id, name, arguments string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: arguments}}
}

// Text returns m's text content, like LangChain's message .text: its text
// parts and the content of its tool results, concatenated in order. A tool
// message's text is therefore the tool's output; an AI message's text leaves
// out its tool calls, and images and other binary parts are never text.
func (m Message) Text() string {
	var text []byte
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			text = append(text, p.Text...)
		case llms.ToolCallResponse:
			text = append(text, p.Content...)
		}
	}
	return string(text)
}

// ToolCalls returns the tool calls among m's parts.
func (m Message) ToolCalls() []llms.ToolCall {
	var calls []llms.ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(llms.ToolCall); ok {
			calls = append(calls, c)
		}
	}
	return calls
}

// ToolResults returns the tool results among m's parts.
func (m Message) ToolResults() []llms.ToolCallResponse {
	var rs []llms.ToolCallResponse
	for _, p := range m.Parts {
		if r, ok := p.(llms.ToolCallResponse); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// WithID returns m with the given ID, so that a message made by a
// constructor can replace or be removed by ID later (LangGraph's
// HumanMessage(content, id=…)):
//
//	s.Messages.Append(state.AI("draft").WithID("answer"))
//	s.Messages.Append(state.AI("final").WithID("answer")) // replaces it
func (m Message) WithID(id string) Message {
	m.ID = id
	return m
}

// Clone returns a copy of m whose parts slice is not shared with m.
func (m Message) Clone() Message {
	m.Parts = append([]llms.ContentPart(nil), m.Parts...)
	return m
}

type jsonMessage struct {
	ID    string     `json:"id,omitempty"`
	Role  string     `json:"role"`
	Name  string     `json:"name,omitempty"`
	Parts []jsonPart `json:"parts"`
	// The fields of LangChain's and OpenAI's message objects, read only
	// (see coerce).
	Type       string          `json:"type,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type jsonPart struct {
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	URL        string `json:"url,omitempty"`
	Detail     string `json:"detail,omitempty"`
	MIMEType   string `json:"mime_type,omitempty"`
	Data       string `json:"data,omitempty"`
	ID         string `json:"id,omitempty"`
	CallType   string `json:"call_type,omitempty"`
	Function   *fn    `json:"function,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Content    string `json:"content,omitempty"`
}

type fn struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MarshalJSON encodes m with one tagged object per part.
func (m Message) MarshalJSON() ([]byte, error) {
	jm := jsonMessage{ID: m.ID, Role: string(m.Role), Name: m.Name, Parts: make([]jsonPart, 0, len(m.Parts))}
	for i, p := range m.Parts {
		var jp jsonPart
		switch p := p.(type) {
		case llms.TextContent:
			jp = jsonPart{Type: "text", Text: p.Text}
		case llms.ImageURLContent:
			jp = jsonPart{Type: "image_url", URL: p.URL, Detail: p.Detail}
		case llms.BinaryContent:
			jp = jsonPart{Type: "binary", MIMEType: p.MIMEType, Data: base64.StdEncoding.EncodeToString(p.Data)}
		case llms.ToolCall:
			jp = jsonPart{Type: "tool_call", ID: p.ID, CallType: p.Type}
			if p.FunctionCall != nil {
				jp.Function = &fn{Name: p.FunctionCall.Name, Arguments: p.FunctionCall.Arguments}
			}
		case llms.ToolCallResponse:
			jp = jsonPart{Type: "tool_result", ToolCallID: p.ToolCallID, Name: p.Name, Content: p.Content}
		default:
			return nil, fmt.Errorf("state: message %q part %d: unsupported part type %T", m.ID, i, p)
		}
		jm.Parts = append(jm.Parts, jp)
	}
	return json.Marshal(jm)
}

// UnmarshalJSON decodes the encoding written by [Message.MarshalJSON].
// It also reads the message forms LangGraph's add_messages accepts, as
// LangGraph clients send them: a LangChain message object ({"type":
// "human", "content": "hi"}, with tool_calls or tool_call_id), an OpenAI
// chat message ({"role": "user", "content": …}), a [role, content] pair,
// and a bare string (a human message). Content is a string or a list of
// text and image_url blocks.
func (m *Message) UnmarshalJSON(data []byte) error {
	if c := firstByte(data); c == '"' || c == '[' {
		return m.coerceShort(data)
	}
	var jm jsonMessage
	if err := json.Unmarshal(data, &jm); err != nil {
		return err
	}
	if jm.Parts == nil && (jm.Type != "" || jm.Content != nil || jm.ToolCalls != nil) {
		return m.coerce(jm)
	}
	out := Message{ID: jm.ID, Name: jm.Name, MessageContent: llms.MessageContent{Role: llms.ChatMessageType(jm.Role)}}
	if jm.Parts != nil {
		out.Parts = make([]llms.ContentPart, 0, len(jm.Parts))
	}
	for i, jp := range jm.Parts {
		switch jp.Type {
		case "text":
			out.Parts = append(out.Parts, llms.TextContent{Text: jp.Text})
		case "image_url":
			out.Parts = append(out.Parts, llms.ImageURLContent{URL: jp.URL, Detail: jp.Detail})
		case "binary":
			b, err := base64.StdEncoding.DecodeString(jp.Data)
			if err != nil {
				return fmt.Errorf("state: message %q part %d: %w", jm.ID, i, err)
			}
			out.Parts = append(out.Parts, llms.BinaryContent{MIMEType: jp.MIMEType, Data: b})
		case "tool_call":
			c := llms.ToolCall{ID: jp.ID, Type: jp.CallType}
			if jp.Function != nil {
				c.FunctionCall = &llms.FunctionCall{Name: jp.Function.Name, Arguments: jp.Function.Arguments}
			}
			out.Parts = append(out.Parts, c)
		case "tool_result":
			out.Parts = append(out.Parts, llms.ToolCallResponse{ToolCallID: jp.ToolCallID, Name: jp.Name, Content: jp.Content})
		default:
			return fmt.Errorf("state: message %q part %d: unknown part type %q", jm.ID, i, jp.Type)
		}
	}
	*m = out
	return nil
}
