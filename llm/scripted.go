package llm

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// Reply is one scripted answer of a [Scripted] model.
type Reply struct {
	// Text is the answer's text (may be empty).
	Text string
	// ToolCalls are the tool calls of the answer. Empty IDs become
	// "call_<reply>_<index>" (both from 1), empty Types "function", nil
	// FunctionCalls and empty arguments "{}".
	ToolCalls []llms.ToolCall
	// Usage is reported in the Response and recorded on context meters.
	Usage Usage
	// StopReason defaults to StopToolCalls when there are tool calls and
	// StopEnd otherwise.
	StopReason string
	// Err, when non-nil, is returned by Generate instead of a response (the
	// reply is used up).
	Err error
	// Expect, when non-nil, checks the messages the model is sent; a
	// non-nil error fails the call (wrapped, with the reply's number).
	Expect func(msgs []state.Message) error
}

// Call is one recorded [Scripted.Generate] call.
type Call struct {
	// Messages is a copy of the conversation the model was sent.
	Messages []state.Message
	// Options are the call's options.
	Options CallOptions
}

// Scripted is a deterministic [Model] for tests and offline demos: it
// answers the i-th call with the i-th [Reply], records every call, and fails
// with a [*ScriptExhaustedError] once the replies run out.
//
// It honours [WithTokenSink] by streaming the reply's text word by word
// (split before each space, so the tokens concatenate to the text) and
// [WithMessageID]; other call options are only recorded. Usage is recorded
// on the meters of [ContextWithMeter] under the name "scripted".
//
// Scripted is safe for concurrent use: concurrent calls take replies in the
// order they acquire the script.
type Scripted struct {
	mu      sync.Mutex
	replies []Reply
	next    int
	calls   []Call
	byTurn  bool // see NewScriptedByTurn
}

// NewScripted returns a model that answers with replies, in order: the
// i-th call made to this value gets the i-th reply. A process that
// restarts starts the script again; see [NewScriptedByTurn] for a script
// that survives a restart.
func NewScripted(replies ...Reply) *Scripted {
	return &Scripted{replies: append([]Reply(nil), replies...)}
}

// NewScriptedByTurn returns a model that chooses its reply by the
// conversation, not by how often it was called: a call whose messages
// hold n assistant messages gets replies[n]. A demo or test whose process
// is restarted mid-conversation — a run resumed from its checkpoint after a
// crash, a human approval answered the next day — goes on with the reply
// the conversation is at, and a node re-run after a failure gets the same
// reply again. A conversation with as many assistant messages as there are
// replies fails with a [*ScriptExhaustedError].
func NewScriptedByTurn(replies ...Reply) *Scripted {
	return &Scripted{replies: append([]Reply(nil), replies...), byTurn: true}
}

// ScriptExhaustedError is returned by [Scripted.Generate] when it is called
// more times than it has replies.
type ScriptExhaustedError struct {
	// Scripted is the number of replies in the script.
	Scripted int
	// Call is the number (from 1) of the call that found no reply.
	Call int
	// LastMessage is the last message of that call's conversation (zero if
	// it had none).
	LastMessage state.Message
}

// Error names the script length, the failing call and its last message.
func (e *ScriptExhaustedError) Error() string {
	last := "no messages"
	if e.LastMessage.Role != "" || len(e.LastMessage.Parts) > 0 {
		last = fmt.Sprintf("last message (%s) %s", e.LastMessage.Role, describe(e.LastMessage))
	}
	return fmt.Sprintf("llm: scripted model exhausted: %d replies scripted, call %d has none; %s",
		e.Scripted, e.Call, last)
}

func describe(m state.Message) string {
	var parts []string
	var text string // the text parts only: Text would repeat the tool results listed below
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			text += t.Text
		}
	}
	if text != "" {
		parts = append(parts, fmt.Sprintf("%q", text))
	}
	for _, c := range m.ToolCalls() {
		name, args := "", ""
		if c.FunctionCall != nil {
			name, args = c.FunctionCall.Name, c.FunctionCall.Arguments
		}
		parts = append(parts, fmt.Sprintf("tool call %s %s(%s)", c.ID, name, args))
	}
	for _, r := range m.ToolResults() {
		parts = append(parts, fmt.Sprintf("tool result %s %q", r.ToolCallID, r.Content))
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return strings.Join(parts, ", ")
}

// Generate implements [Model]. The hooks of [ContextWithCallHooks] see it
// as the model "scripted" of the provider "scripted".
func (s *Scripted) Generate(ctx context.Context, msgs []state.Message, opts ...CallOption) (*Response, error) {
	cfg := NewCallOptions(opts...)
	ctx, done := ObserveCall(ctx, CallInfo{Name: "scripted", Provider: "scripted", Model: "scripted", Options: cfg, Messages: msgs})
	resp, err := s.generate(ctx, msgs, cfg)
	done(resp, err)
	return resp, err
}

func (s *Scripted) generate(ctx context.Context, msgs []state.Message, cfg CallOptions) (*Response, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx, "scripted", nil)
	}
	rec := Call{Messages: make([]state.Message, len(msgs)), Options: cfg}
	for i, m := range msgs {
		rec.Messages[i] = m.Clone()
	}

	s.mu.Lock()
	s.calls = append(s.calls, rec)
	callNo := len(s.calls)
	if s.byTurn {
		turn := 0
		for _, m := range msgs {
			if m.Role == llms.ChatMessageTypeAI {
				turn++
			}
		}
		s.next = turn
	}
	if s.next >= len(s.replies) {
		n := len(s.replies)
		s.mu.Unlock()
		err := &ScriptExhaustedError{Scripted: n, Call: callNo}
		if len(msgs) > 0 {
			err.LastMessage = msgs[len(msgs)-1].Clone()
		}
		return nil, err
	}
	r := s.replies[s.next]
	s.next++
	replyNo := s.next
	s.mu.Unlock()

	if r.Expect != nil {
		if err := r.Expect(msgs); err != nil {
			return nil, fmt.Errorf("llm: scripted reply %d: unexpected input: %w", replyNo, err)
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}

	calls := make([]llms.ToolCall, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		fc := llms.FunctionCall{}
		if c.FunctionCall != nil {
			fc = *c.FunctionCall
		}
		if strings.TrimSpace(fc.Arguments) == "" {
			fc.Arguments = "{}"
		}
		c.FunctionCall = &fc
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", replyNo, i+1)
		}
		if c.Type == "" {
			c.Type = "function"
		}
		calls[i] = c
	}

	if cfg.TokenSink != nil {
		for _, tok := range splitTokens(r.Text) {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, "scripted", nil)
			}
			cfg.TokenSink(ctx, tok)
		}
	}

	msg := state.AI(r.Text, calls...)
	msg.ID = cfg.MessageID
	stop := r.StopReason
	if stop == "" {
		stop = normalizeStop("", len(calls) > 0)
	}
	recordUsage(ctx, nil, "scripted", r.Usage)
	return &Response{Message: msg, Usage: r.Usage, StopReason: stop, Attempts: 1}, nil
}

// Calls returns the calls made so far, in order (a copy).
func (s *Scripted) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Remaining returns the number of replies not used yet (for a script by
// turn, those after the last turn answered).
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies) - s.next
}

// splitTokens splits text before each run of spaces: "a big  day" gives
// "a", " big", "  day".
func splitTokens(text string) []string {
	var toks []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			toks = append(toks, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		toks = append(toks, text[start:])
	}
	return toks
}
