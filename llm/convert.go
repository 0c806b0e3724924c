package llm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"reflect"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// Provider names the langchaingo provider behind an [llms.Model]; it selects
// which wire quirks [FromLangchain] works around.
type Provider string

// Providers known to [FromLangchain]. [New] picks them itself.
const (
	// ProviderOpenAI is langchaingo's llms/openai, also when it talks to an
	// OpenAI-compatible server (Ollama's /v1, vLLM, LM Studio, Gemini's
	// OpenAI endpoint…).
	ProviderOpenAI Provider = "openai"
	// ProviderAnthropic is langchaingo's llms/anthropic.
	ProviderAnthropic Provider = "anthropic"
	// ProviderGoogleAI is langchaingo's llms/googleai (and its vertex
	// variant).
	ProviderGoogleAI Provider = "googleai"
	// ProviderOllama is langchaingo's native llms/ollama, which ignores
	// tools; prefer the OpenAI-compatible endpoint ([New] with "ollama:").
	ProviderOllama Provider = "ollama"
	// ProviderGeneric is any other llms.Model: only the conversions that
	// every provider accepts are applied.
	ProviderGeneric Provider = "generic"
)

// detectProvider guesses the provider from the package of m's type, so that
// this package needs no import of the (heavy) googleai provider.
func detectProvider(m llms.Model) Provider {
	t := reflect.TypeOf(m)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ProviderGeneric
	}
	const base = "github.com/tmc/langchaingo/llms/"
	path := t.PkgPath()
	switch {
	case path == base+"openai":
		return ProviderOpenAI
	case path == base+"anthropic":
		return ProviderAnthropic
	case path == base+"googleai", strings.HasPrefix(path, base+"googleai/"):
		return ProviderGoogleAI
	case path == base+"ollama":
		return ProviderOllama
	}
	return ProviderGeneric
}

// toLangchain converts the conversation to langchaingo messages for provider
// p. It never modifies msgs.
//
// Applied for every provider:
//   - messages without parts are dropped (anthropic indexes Parts[0]);
//   - empty text parts of AI messages are dropped;
//   - tool calls get Type "function" and "{}" for empty arguments;
//   - tool results without a Name get the name of the call they answer.
//
// Per provider:
//   - openai, anthropic, generic: a tool message with several results
//     becomes one tool message per result;
//   - anthropic: an AI message becomes one message per part (langchaingo
//     only sends Parts[0]; the Messages API merges consecutive turns of one
//     role), and all system messages become one, joined by blank lines;
//   - googleai: consecutive tool messages become one (Gemini wants all
//     function responses of a turn together).
func toLangchain(msgs []state.Message, p Provider) ([]llms.MessageContent, error) {
	callNames := make(map[string]string)
	for _, m := range msgs {
		for _, c := range m.ToolCalls() {
			if c.FunctionCall != nil && c.ID != "" {
				callNames[c.ID] = c.FunctionCall.Name
			}
		}
	}

	out := make([]llms.MessageContent, 0, len(msgs))
	var system []string
	systemAt := -1
	for i, m := range msgs {
		parts := make([]llms.ContentPart, 0, len(m.Parts))
		for j, part := range m.Parts {
			switch pt := part.(type) {
			case llms.TextContent:
				if pt.Text == "" && m.Role == llms.ChatMessageTypeAI {
					continue
				}
			case llms.ToolCall:
				if pt.FunctionCall == nil {
					return nil, fmt.Errorf("llm: message %d (%s) part %d: tool call %q has no function", i, m.Role, j, pt.ID)
				}
				fc := *pt.FunctionCall
				if strings.TrimSpace(fc.Arguments) == "" {
					fc.Arguments = "{}"
				}
				pt.FunctionCall = &fc
				if pt.Type == "" {
					pt.Type = "function"
				}
				part = pt
			case llms.ToolCallResponse:
				if pt.Name == "" {
					pt.Name = callNames[pt.ToolCallID]
				}
				if pt.Name == "" {
					pt.Name = m.Name
				}
				part = pt
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			continue
		}

		switch {
		case m.Role == llms.ChatMessageTypeSystem && p == ProviderAnthropic:
			for _, part := range parts {
				t, ok := part.(llms.TextContent)
				if !ok {
					return nil, fmt.Errorf("llm: message %d: anthropic system messages hold only text, got %T", i, part)
				}
				system = append(system, t.Text)
			}
			if systemAt < 0 {
				systemAt = len(out)
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeSystem})
			}
		case m.Role == llms.ChatMessageTypeAI && p == ProviderAnthropic:
			for _, part := range parts {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{part}})
			}
		case m.Role == llms.ChatMessageTypeTool && p == ProviderGoogleAI:
			if n := len(out); n > 0 && out[n-1].Role == llms.ChatMessageTypeTool {
				out[n-1].Parts = append(out[n-1].Parts, parts...)
			} else {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: parts})
			}
		case m.Role == llms.ChatMessageTypeTool && len(parts) > 1:
			for _, part := range parts {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{part}})
			}
		default:
			out = append(out, llms.MessageContent{Role: m.Role, Parts: parts})
		}
	}
	if systemAt >= 0 {
		out[systemAt].Parts = []llms.ContentPart{llms.TextPart(strings.Join(system, "\n\n"))}
	}
	return out, nil
}

// normalizeTools validates tools and fills in defaults (Type "function", an
// empty object schema for nil Parameters). It never modifies the caller's
// tools.
func normalizeTools(tools []llms.Tool) ([]llms.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]llms.Tool, len(tools))
	for i, t := range tools {
		if t.Function == nil {
			return nil, fmt.Errorf("llm: tool %d has no Function definition", i)
		}
		if t.Type == "" {
			t.Type = "function"
		}
		if t.Function.Parameters == nil {
			// langchaingo sends "parameters": null, which providers reject.
			fd := *t.Function
			fd.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
			t.Function = &fd
		}
		out[i] = t
	}
	return out, nil
}

// fromLangchain merges a langchaingo response into one AI message. It
// concatenates the text of every choice and collects every choice's tool
// calls in order (anthropic returns one choice per content block), fills in
// missing tool-call IDs (googleai returns none) with IDs derived from the
// conversation and the call, and takes usage from one choice (providers
// repeat the totals on every choice).
func fromLangchain(resp *llms.ContentResponse, sent []state.Message) (state.Message, Usage, string, string) {
	var text, reasoning strings.Builder
	var calls []llms.ToolCall
	var usage Usage
	rawStop := ""
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		text.WriteString(ch.Content)
		reasoning.WriteString(ch.ReasoningContent)
		calls = append(calls, ch.ToolCalls...)
		if len(ch.ToolCalls) == 0 && ch.FuncCall != nil {
			calls = append(calls, llms.ToolCall{FunctionCall: ch.FuncCall})
		}
		if u := usageFromInfo(ch.GenerationInfo); u.TotalTokens > usage.TotalTokens {
			usage = u
		}
		if rawStop == "" {
			rawStop = ch.StopReason
		}
	}

	var convHash []byte
	for i := range calls {
		c := calls[i]
		fc := llms.FunctionCall{}
		if c.FunctionCall != nil {
			fc = *c.FunctionCall
		}
		if a := strings.TrimSpace(fc.Arguments); a == "" || a == "null" {
			fc.Arguments = "{}"
		}
		c.FunctionCall = &fc
		if c.Type == "" {
			c.Type = "function"
		}
		if c.ID == "" {
			if convHash == nil {
				convHash = hashConversation(sent)
			}
			c.ID = stableCallID(convHash, i, fc)
		}
		calls[i] = c
	}
	msg := state.AI(text.String(), calls...)
	return msg, usage, normalizeStop(rawStop, len(calls) > 0), reasoning.String()
}

// stableCallID derives a tool-call ID from the content of the conversation it
// answers (message IDs excluded), the call's position and the call itself:
// the same conversation and answer give the same ID (replays and offline
// runs are deterministic), and the same call in a later turn gets a
// different one.
func stableCallID(convHash []byte, i int, fc llms.FunctionCall) string {
	h := sha256.New()
	h.Write(convHash)
	writeInt(h, int64(i))
	writeString(h, fc.Name)
	writeString(h, fc.Arguments)
	return "call_" + hex.EncodeToString(h.Sum(nil))[:24]
}

func hashConversation(msgs []state.Message) []byte {
	h := sha256.New()
	writeInt(h, int64(len(msgs)))
	for _, m := range msgs {
		writeString(h, string(m.Role))
		writeInt(h, int64(len(m.Parts)))
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				writeString(h, "t")
				writeString(h, p.Text)
			case llms.ToolCall:
				writeString(h, "c")
				writeString(h, p.ID)
				if p.FunctionCall != nil {
					writeString(h, p.FunctionCall.Name)
					writeString(h, p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				writeString(h, "r")
				writeString(h, p.ToolCallID)
				writeString(h, p.Content)
			case llms.ImageURLContent:
				writeString(h, "i")
				writeString(h, p.URL)
			case llms.BinaryContent:
				writeString(h, "b")
				writeString(h, p.MIMEType)
				writeString(h, string(p.Data))
			default:
				writeString(h, fmt.Sprintf("%T", p))
			}
		}
	}
	return h.Sum(nil)
}

func writeInt(h hash.Hash, n int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

func writeString(h hash.Hash, s string) {
	writeInt(h, int64(len(s)))
	h.Write([]byte(s))
}

// usageFromInfo reads token counts from a choice's GenerationInfo, whatever
// the provider named them and whatever integer type it used.
func usageFromInfo(info map[string]any) Usage {
	if len(info) == 0 {
		return Usage{}
	}
	get := func(keys ...string) (int, bool) {
		for _, k := range keys {
			if v, ok := info[k]; ok {
				if n, ok := toInt(v); ok {
					return n, true
				}
			}
		}
		return 0, false
	}
	var u Usage
	if n, ok := get("PromptTokens", "prompt_tokens", "input_tokens"); ok {
		u.PromptTokens = n
	} else if n, ok := get("InputTokens"); ok { // anthropic: cached input is counted apart
		cw, _ := get("CacheCreationInputTokens")
		cr, _ := get("CacheReadInputTokens")
		u.PromptTokens = n + cw + cr
	}
	u.CompletionTokens, _ = get("CompletionTokens", "completion_tokens", "output_tokens", "OutputTokens")
	u.TotalTokens, _ = get("TotalTokens", "total_tokens")
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int8:
		return int(n), true
	case int16:
		return int(n), true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case uint:
		return int(n), true
	case uint8:
		return int(n), true
	case uint16:
		return int(n), true
	case uint32:
		return int(n), true
	case uint64:
		return int(n), true
	case float32:
		return int(math.Round(float64(n))), true
	case float64:
		return int(math.Round(n)), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// normalizeStop maps provider stop reasons onto the Stop* constants. A turn
// that carries tool calls and ended normally is reported as StopToolCalls
// (Gemini and some OpenAI-compatible servers say "stop" there).
func normalizeStop(raw string, hasToolCalls bool) string {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "", "stop", "end_turn", "stop_sequence", "finishreasonstop", "eos", "end":
		if hasToolCalls {
			return StopToolCalls
		}
		return StopEnd
	case "tool_calls", "tool_use", "function_call", "tool_call":
		return StopToolCalls
	case "length", "max_tokens", "finishreasonmaxtokens", "model_length":
		return StopLength
	case "content_filter", "refusal", "finishreasonsafety", "finishreasonrecitation",
		"finishreasonblocklist", "finishreasonprohibitedcontent", "finishreasonspii":
		return StopContentFilter
	}
	return raw
}
