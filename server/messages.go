package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// The server shows messages as LangChain serializes them, the form
// LangGraph's clients and useStream read: {"type": "human", "content": …,
// "id": …}, an AI message with its "tool_calls" [{id, name, args, type}]
// and "invalid_tool_calls", a tool message with its "tool_call_id". It
// reads them in that form too (package state decodes it), and in its own.

// lcMessage is a message as LangChain serializes it (BaseMessage.toDict,
// model_dump), its fields in the order LangGraph's JS server writes them.
type lcMessage struct {
	Content          any              `json:"content"`
	AdditionalKwargs map[string]any   `json:"additional_kwargs"`
	ResponseMetadata map[string]any   `json:"response_metadata"`
	Type             string           `json:"type"`
	Role             string           `json:"role,omitempty"` // a "chat" message's role
	Name             string           `json:"name,omitempty"`
	ID               string           `json:"id,omitempty"`
	ToolCalls        *[]lcToolCall    `json:"tool_calls,omitempty"`
	InvalidToolCalls *[]lcInvalidCall `json:"invalid_tool_calls,omitempty"`
	ToolCallChunks   *[]any           `json:"tool_call_chunks,omitempty"`
	ToolCallID       string           `json:"tool_call_id,omitempty"`
}

// lcToolCall is LangChain's ToolCall: the arguments as a JSON object.
type lcToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	Type string          `json:"type"`
}

// lcInvalidCall is LangChain's InvalidToolCall: a call whose arguments are
// not a JSON object, kept as the model wrote them.
type lcInvalidCall struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Args  string `json:"args"`
	Error string `json:"error"`
	Type  string `json:"type"`
}

// lcTypes maps langchaingo's roles to LangChain's message types.
var lcTypes = map[llms.ChatMessageType]string{
	llms.ChatMessageTypeHuman: "human", llms.ChatMessageTypeAI: "ai",
	llms.ChatMessageTypeSystem: "system", llms.ChatMessageTypeTool: "tool",
	llms.ChatMessageTypeFunction: "function", llms.ChatMessageTypeGeneric: "chat",
}

// showMessage returns m as LangChain serializes it. The content is a
// string when m has at most one text part and nothing else, else a list
// of content blocks; a binary part is an image_url block with a data URL
// when it is an image, a LangChain "file" block otherwise.
func showMessage(m state.Message) lcMessage {
	out := lcMessage{
		AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{},
		Type: lcTypes[m.Role], Name: m.Name, ID: m.ID,
	}
	if out.Type == "" {
		out.Type = string(m.Role)
	}
	if out.Type == "chat" {
		out.Role = string(m.Role)
	}
	var blocks []any
	var text []string
	calls, invalid := []lcToolCall{}, []lcInvalidCall{}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			text = append(text, p.Text)
			blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
		case llms.ImageURLContent:
			blocks = append(blocks, map[string]any{"type": "image_url", "image_url": imageURL(p.URL, p.Detail)})
		case llms.BinaryContent:
			data := base64.StdEncoding.EncodeToString(p.Data)
			if strings.HasPrefix(p.MIMEType, "image/") {
				blocks = append(blocks, map[string]any{"type": "image_url", "image_url": imageURL("data:"+p.MIMEType+";base64,"+data, "")})
			} else {
				blocks = append(blocks, map[string]any{"type": "file", "source_type": "base64", "mime_type": p.MIMEType, "data": data})
			}
		case llms.ToolCall:
			var name, args string
			if p.FunctionCall != nil {
				name, args = p.FunctionCall.Name, p.FunctionCall.Arguments
			}
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			if obj := []byte(args); json.Valid(obj) && bytes.HasPrefix(bytes.TrimSpace(obj), []byte("{")) {
				calls = append(calls, lcToolCall{ID: p.ID, Name: name, Args: json.RawMessage(args), Type: "tool_call"})
			} else {
				invalid = append(invalid, lcInvalidCall{ID: p.ID, Name: name, Args: args, Error: "the arguments are not a JSON object", Type: "invalid_tool_call"})
			}
		case llms.ToolCallResponse:
			text = append(text, p.Content)
			blocks = append(blocks, map[string]any{"type": "text", "text": p.Content})
			if out.ToolCallID == "" {
				out.ToolCallID = p.ToolCallID
			}
			if out.Name == "" {
				out.Name = p.Name
			}
		}
	}
	if len(blocks) == len(text) && len(text) <= 1 || out.Type == "tool" && len(blocks) == len(text) {
		out.Content = strings.Join(text, "")
	} else {
		out.Content = blocks
	}
	if out.Type == "ai" || len(calls) > 0 || len(invalid) > 0 {
		out.ToolCalls, out.InvalidToolCalls = &calls, &invalid
	}
	return out
}

func imageURL(url, detail string) map[string]any {
	u := map[string]any{"url": url}
	if detail != "" {
		u["detail"] = detail
	}
	return u
}

// showMessageChunk returns the message streamed so far as LangChain
// serializes an AI message chunk.
func showMessageChunk(id, text string) lcMessage {
	m := showMessage(state.Message{ID: id, MessageContent: llms.TextParts(llms.ChatMessageTypeAI, text)})
	m.ToolCallChunks = &[]any{}
	return m
}

var (
	messageType  = reflect.TypeFor[state.Message]()
	messagesType = reflect.TypeFor[state.Messages]()
	messageList  = reflect.TypeFor[[]state.Message]()
)

// messageShape tells how a field holds messages: none, one (a
// state.Message, a Value of one) or a list (state.Messages, a
// []state.Message, a Value or Append of them).
type messageShape int

const (
	noMessages messageShape = iota
	oneMessage
	messageListShape
)

func shapeOf(fc fieldCodec) messageShape {
	switch {
	case fc.kind == kindMessages:
		return messageListShape
	case fc.inner == messageType:
		return oneMessage
	case fc.inner == messageList:
		return messageListShape
	}
	return noMessages
}

// hasMessages reports whether any field of the struct holds messages.
func (a *stateFields) hasMessages() bool {
	for _, f := range a.fields {
		if shapeOf(f) != noMessages {
			return true
		}
	}
	return false
}

// showRawMessages turns the JSON of a field holding messages into
// LangChain's form; JSON it cannot read as messages is shown as it is.
func showRawMessages(shape messageShape, raw json.RawMessage) any {
	switch shape {
	case oneMessage:
		var m state.Message
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &m) != nil {
			return raw
		}
		return showMessage(m)
	case messageListShape:
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return raw
		}
		out := make([]any, len(list))
		for i, item := range list {
			var rm removeMessage
			if json.Unmarshal(item, &rm) == nil && rm.Type == "remove" {
				out[i] = rm
				continue
			}
			var m state.Message
			if json.Unmarshal(item, &m) != nil {
				return raw
			}
			out[i] = showMessage(m)
		}
		return out
	}
	return raw
}

// removeMessage is LangChain's RemoveMessage, as an update that removed a
// message shows it.
type removeMessage struct {
	Content string `json:"content"`
	Type    string `json:"type"`
	ID      string `json:"id"`
}

// showValue returns what the API shows of v, a state or a value a node or
// an interrupt gave: v itself, except that messages (in the fields of a
// state struct, or v being messages) are in LangChain's form. A struct's
// other fields keep their JSON and its fields their order.
func showValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case state.Message:
		return showMessage(x)
	case []state.Message:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = showMessage(m)
		}
		return out
	case state.Messages: // its encoding may hold removals
		return showRawMessages(messageListShape, mustJSON(x))
	}
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Struct {
		return v
	}
	fields := fieldsOf(t)
	if !fields.hasMessages() {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v // the encoding error shows where the event is written
	}
	return fields.showObject(b)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// showObject rewrites the messages fields of a state's JSON object,
// keeping the other fields' JSON and the order of all.
func (a *stateFields) showObject(obj []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return obj
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return obj
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return obj
		}
		if i, ok := a.byKey[key]; ok {
			if shape := shapeOf(a.fields[i]); shape != noMessages {
				if b, err := json.Marshal(showRawMessages(shape, raw)); err == nil {
					raw = b
				}
			}
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// showInterruptValue shows an interrupt's value: a message or a list of
// messages in LangChain's form. A value read back from a checkpoint has
// lost its Go type; an object in [state.Message]'s own encoding (role and
// parts, and nothing but id and name besides), or a list of them, is
// taken for a message.
func showInterruptValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if m, ok := ownMessage(x); ok {
			return showMessage(m)
		}
	case []any:
		out := make([]lcMessage, len(x))
		for i, item := range x {
			obj, _ := item.(map[string]any)
			m, ok := ownMessage(obj)
			if !ok {
				return v
			}
			out[i] = showMessage(m)
		}
		if len(out) > 0 {
			return out
		}
	}
	return showValue(v)
}

// ownMessage reads obj as a message in state.Message's encoding.
func ownMessage(obj map[string]any) (state.Message, bool) {
	var m state.Message
	if _, ok := obj["parts"].([]any); !ok {
		return m, false
	}
	if _, ok := obj["role"].(string); !ok {
		return m, false
	}
	for k := range obj {
		switch k {
		case "id", "role", "name", "parts":
		default:
			return m, false
		}
	}
	b, err := json.Marshal(obj)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}

// removeAll is the id of LangGraph's RemoveMessage that clears the
// history (REMOVE_ALL_MESSAGES).
const removeAll = "__remove_all__"

// writeMessages records the messages of a JSON list as writes to f, as
// add_messages takes them: each message is appended through
// [state.Messages.Append], which gives one without an ID a new one; a
// LangChain RemoveMessage ({"type": "remove", "id": …}) removes the
// message of that ID, or every message for the id "__remove_all__".
func writeMessages(f *state.Messages, val json.RawMessage) error {
	var list []json.RawMessage
	if err := json.Unmarshal(val, &list); err != nil {
		return errors.New("must be a JSON array of messages")
	}
	f.Append() // an empty list is a write all the same
	for i, raw := range list {
		var rm struct {
			Type *string `json:"type"`
			ID   string  `json:"id"`
		}
		if json.Unmarshal(raw, &rm) == nil && rm.Type != nil && *rm.Type == "remove" {
			switch rm.ID {
			case "":
				return fmt.Errorf("message %d: a remove message needs the id of the message to remove", i)
			case removeAll:
				f.RemoveAll()
			default:
				f.Remove(rm.ID)
			}
			continue
		}
		var m state.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		f.Append(m)
	}
	return nil
}

// messageStream serves the "messages" stream mode of one run, as
// LangGraph's servers do: for each message a model streams,
// "messages/metadata" once ({id: {metadata}}) then "messages/partial"
// with the message so far, after each token; and "messages/complete" with
// the messages of the state's messages fields not shown complete before,
// after each superstep (the input's messages first).
type messageStream struct {
	partial  map[string]string // message id → text so far
	complete map[string]bool
}

func newMessageStream() *messageStream {
	return &messageStream{partial: map[string]string{}, complete: map[string]bool{}}
}

// chunk handles a token event.
func (ms *messageStream) chunk(c graph.MessageChunk, metadata map[string]any, emit func(string, any)) {
	if c.MessageID == "" || c.Text == "" || ms.complete[c.MessageID] {
		return // no id, as LangGraph's servers skip; or nothing new (a Done chunk)
	}
	text, seen := ms.partial[c.MessageID]
	if !seen {
		emit("messages/metadata", map[string]any{c.MessageID: map[string]any{"metadata": metadata}})
	}
	text += c.Text
	ms.partial[c.MessageID] = text
	emit("messages/partial", []lcMessage{showMessageChunk(c.MessageID, text)})
}

// values handles the state after a superstep.
func (ms *messageStream) values(fields *stateFields, v any, emit func(string, any)) {
	if v == nil {
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		return
	}
	var done []lcMessage
	for _, fc := range fields.fields {
		if fc.kind != kindMessages || rv.Type().Field(fc.index).Type != messagesType {
			continue
		}
		for _, m := range rv.Field(fc.index).Interface().(state.Messages).List() {
			if m.ID == "" || ms.complete[m.ID] {
				continue
			}
			ms.complete[m.ID] = true
			delete(ms.partial, m.ID)
			done = append(done, showMessage(m))
		}
	}
	if len(done) > 0 {
		emit("messages/complete", done)
	}
}
