package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// Trim sends the model only the end of the conversation: every system
// message, then the last keepLast other messages, widened backwards so
// that no tool result is sent without the AI message holding its call
// (see [llm.Trim], which it applies). The conversation given to the call
// (and the graph's state) is not changed. keepLast < 1 counts as 1.
func Trim(keepLast int) ModelMiddleware {
	keepLast = max(keepLast, 1)
	return func(m llm.Model) llm.Model {
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			return m.Generate(ctx, llm.Trim(msgs, keepLast), opts...)
		})
	}
}

// TrimChars sends the model only as much of the end of the conversation
// as fits in maxChars characters (see [MessageChars]) besides the system
// messages, which are always sent: the longest window of last messages
// that fits, with no tool result separated from the AI message holding its
// call, as [Trim]. The last message (with the AI message of its call, for
// a tool result) is sent even when it alone exceeds the budget.
func TrimChars(maxChars int) ModelMiddleware {
	return func(m llm.Model) llm.Model {
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			return m.Generate(ctx, trimChars(msgs, maxChars), opts...)
		})
	}
}

// trimChars returns llm.Trim(msgs, k) for the largest k >= 1 whose
// non-system messages fit in maxChars. The size of llm.Trim's window
// grows with k, so k is found by bisection.
func trimChars(msgs []state.Message, maxChars int) []state.Message {
	n := 0
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeSystem {
			n++
		}
	}
	fits := func(k int) bool { return nonSystemChars(llm.Trim(msgs, k)) <= maxChars }
	lo, hi := 1, n // the answer is in [lo, hi]; 1 is taken even if it does not fit
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return llm.Trim(msgs, lo)
}

func nonSystemChars(msgs []state.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeSystem {
			n += MessageChars(m)
		}
	}
	return n
}

// MessageChars is the size of a message as [TrimChars] and [Summarize]
// count it: the characters (runes) of its text (tool results included)
// and of its tool calls' names and arguments.
func MessageChars(m state.Message) int {
	n := len([]rune(m.Text()))
	for _, c := range m.ToolCalls() {
		if c.FunctionCall != nil {
			n += len([]rune(c.FunctionCall.Name)) + len([]rune(c.FunctionCall.Arguments))
		}
	}
	return n
}

// Defaults of [Summarize].
const (
	DefaultSummaryTrigger = 40
	DefaultSummaryKeep    = 20
)

// DefaultSummaryPrompt is the instruction [Summarize] sends the summarizer,
// followed by the messages to summarize.
const DefaultSummaryPrompt = "Summarize the conversation below for an assistant who will continue it without seeing it. " +
	"Keep the user's goals and constraints, decisions taken, facts found (file names, values, errors) and work still open. " +
	"Answer with the summary only."

// SummaryPrefix starts the text of the message that replaces the
// summarized messages.
const SummaryPrefix = "Summary of the earlier conversation:\n\n"

// SummaryOption configures [Summarize].
type SummaryOption func(*summaryConfig)

type summaryConfig struct {
	triggerMessages, triggerChars int
	keep                          int
	prompt                        string
}

// WithTriggerMessages summarizes once the conversation has more than n
// messages besides the system messages (default [DefaultSummaryTrigger];
// 0 or less: never on the count).
func WithTriggerMessages(n int) SummaryOption {
	return func(c *summaryConfig) { c.triggerMessages = n }
}

// WithTriggerChars summarizes once the conversation's messages besides
// the system messages have more than n characters (see [MessageChars]);
// by default (0) the size does not trigger.
func WithTriggerChars(n int) SummaryOption {
	return func(c *summaryConfig) { c.triggerChars = n }
}

// WithKeepLast sets how many of the last messages are kept as they are
// when the older ones are summarized (default [DefaultSummaryKeep], at
// least 1); the window is widened as [Trim]'s, so that no tool result is
// kept without its call.
func WithKeepLast(n int) SummaryOption {
	return func(c *summaryConfig) { c.keep = max(n, 1) }
}

// WithSummaryPrompt replaces [DefaultSummaryPrompt].
func WithSummaryPrompt(prompt string) SummaryOption {
	return func(c *summaryConfig) { c.prompt = prompt }
}

// Summarize replaces the older messages of a long conversation by a
// summary before the model sees it, as LangChain's
// SummarizationMiddleware: once the conversation passes a threshold
// ([WithTriggerMessages], [WithTriggerChars]), every message but the
// system messages and the last ones ([WithKeepLast]) is sent to
// summarizer with [WithSummaryPrompt], and the model is sent the system
// messages, a human message with [SummaryPrefix] and the summary, and the
// kept messages.
//
// The conversation given to the call (and the graph's state) is not
// changed; instead, the middleware remembers its summaries (the last 64,
// by the exact messages they replace), so that the next calls of a
// growing conversation reuse the summary of its beginning and summarize
// again only when what follows it passes the threshold, folding the
// earlier summary into the new one. A failed summary fails the call, with
// the summarizer's error wrapped.
func Summarize(summarizer llm.Model, opts ...SummaryOption) ModelMiddleware {
	cfg := summaryConfig{triggerMessages: DefaultSummaryTrigger, keep: DefaultSummaryKeep, prompt: DefaultSummaryPrompt}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	s := &summarizerState{cfg: cfg, model: summarizer, cache: make(map[[32]byte]string)}
	return func(m llm.Model) llm.Model {
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			msgs, err := s.compress(ctx, msgs)
			if err != nil {
				return nil, err
			}
			return m.Generate(ctx, msgs, opts...)
		})
	}
}

const summaryCacheSize = 64

type summarizerState struct {
	cfg   summaryConfig
	model llm.Model

	mu    sync.Mutex
	cache map[[32]byte]string // summaries by the hash of the messages they replace
	order [][32]byte          // insertion order, for eviction
}

func (s *summarizerState) lookup(h [32]byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.cache[h]
	return v, ok
}

func (s *summarizerState) store(h [32]byte, summary string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cache[h]; ok {
		return
	}
	if len(s.order) >= summaryCacheSize {
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
	s.cache[h] = summary
	s.order = append(s.order, h)
}

func (s *summarizerState) over(msgs []state.Message) bool {
	if s.cfg.triggerMessages > 0 && len(msgs) > s.cfg.triggerMessages {
		return true
	}
	return s.cfg.triggerChars > 0 && nonSystemChars(msgs) > s.cfg.triggerChars
}

// compress returns the conversation to send the model.
func (s *summarizerState) compress(ctx context.Context, msgs []state.Message) ([]state.Message, error) {
	var system, rest []state.Message
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeSystem {
			system = append(system, m)
		} else {
			rest = append(rest, m)
		}
	}
	// prefix[i] is the hash of rest[:i].
	prefix := make([][32]byte, len(rest)+1)
	for i, m := range rest {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("middleware: summarize: %w", err)
		}
		mh := sha256.Sum256(b)
		prefix[i+1] = sha256.Sum256(append(prefix[i][:], mh[:]...))
	}
	// The longest beginning already summarized.
	from, summary := 0, ""
	for i := len(rest); i > 0; i-- {
		if v, ok := s.lookup(prefix[i]); ok {
			from, summary = i, v
			break
		}
	}
	tail := rest[from:]
	conv := tail
	if summary != "" {
		conv = append([]state.Message{summaryMessage(summary)}, tail...)
	}
	if s.over(conv) {
		kept := llm.Trim(tail, s.cfg.keep)
		if cut := len(tail) - len(kept); cut > 0 {
			var err error
			summary, err = s.summarize(ctx, summary, tail[:cut])
			if err != nil {
				return nil, err
			}
			s.store(prefix[from+cut], summary)
			conv = append([]state.Message{summaryMessage(summary)}, kept...)
		}
	}
	return append(system, conv...), nil
}

// summarize asks the summarizer for a summary of an earlier summary (if
// any) followed by msgs.
func (s *summarizerState) summarize(ctx context.Context, earlier string, msgs []state.Message) (string, error) {
	var b strings.Builder
	b.WriteString(s.cfg.prompt)
	b.WriteString("\n\n")
	if earlier != "" {
		b.WriteString("Summary of what came before:\n")
		b.WriteString(earlier)
		b.WriteString("\n\nThen:\n")
	}
	for _, m := range msgs {
		writeMessage(&b, m)
	}
	resp, err := s.model.Generate(ctx, []state.Message{state.Human(b.String())})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctxError(ctx, err)
		}
		return "", fmt.Errorf("middleware: summarize: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", fmt.Errorf("middleware: summarize: %s answered with an empty summary", modelName(s.model))
	}
	return text, nil
}

func summaryMessage(summary string) state.Message {
	return state.Human(SummaryPrefix + summary)
}

// writeMessage writes m as a line of a transcript.
func writeMessage(b *strings.Builder, m state.Message) {
	role := string(m.Role)
	if m.Role == llms.ChatMessageTypeTool && m.Name != "" {
		role += " " + m.Name
	}
	fmt.Fprintf(b, "[%s] %s", role, m.Text())
	for _, c := range m.ToolCalls() {
		if c.FunctionCall != nil {
			fmt.Fprintf(b, " [calls %s(%s)]", c.FunctionCall.Name, c.FunctionCall.Arguments)
		}
	}
	b.WriteString("\n")
}
