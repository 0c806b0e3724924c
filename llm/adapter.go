package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/internal/backoff"
	"github.com/agentgraph/agentgraph/state"
)

// FromLangchain adapts a langchaingo model. name identifies it in errors,
// in [RetryInfo] and in [Meter.ByModel] (for example "openai:gpt-4o-mini").
//
// Every call goes through m.GenerateContent; langchaingo types are used at
// that boundary only. The adapter works around the quirks of langchaingo
// v0.1.14's providers, detected from m's Go type (override with
// [WithProvider]):
//
//   - anthropic answers with one choice per content block: all choices are
//     merged into one AI message (text concatenated, tool calls in order)
//     and usage is read from one choice, not summed. Its request encoder
//     only sends the first part of an AI or tool message, so such messages
//     are sent one part per message, and system messages are joined into
//     one.
//   - googleai returns tool calls without IDs: stable IDs are derived from
//     the conversation and the call. It matches tool results by function
//     name, so results without a Name get the name of their call, and
//     consecutive tool messages are sent as one.
//   - openai accepts one tool result per tool message: a tool message with
//     several results is split.
//   - Every provider: tool calls are given Type "function" and "{}" for
//     empty arguments both ways; stop reasons are mapped onto the Stop*
//     constants; usage is read from whichever GenerationInfo keys and
//     integer types the provider used.
//
// Failed calls are retried with exponential backoff and jitter (see
// [WithMaxAttempts], [WithBackoff]) when they are rate limits (429), server
// errors (5xx), timeouts or network errors, honouring the server's
// Retry-After. How the status is known: langchaingo's providers return
// errors as plain text ("API returned unexpected status code: 429: …"), so
// when the provider's HTTP client uses [WrapTransport] (every client [New]
// builds does), the status and Retry-After / retry-after-ms headers are read
// from the HTTP response itself; otherwise the status is parsed from the
// error text ("status code: NNN", "Error NNN", "HTTP NNN"), and the delay
// from "try again in …" phrases. Errors with neither are retried only when
// they are recognisably transient (timeouts, resets, "overloaded", …).
//
// No attempt waits forever: each is bounded by [WithAttemptTimeout] and,
// when its client uses [WrapTransport], by [WithStallTimeout] (both on by
// default). An attempt cut by either fails with a [*TimeoutError] and is
// retried like a 5xx. [WithProgress] and [ContextWithProgress] observe the
// attempts, first bytes, waits and failures.
//
// Cancellation of ctx is never retried, and the returned error satisfies
// errors.Is(err, context.Canceled) or errors.Is(err, context.DeadlineExceeded)
// (langchaingo's openai client loses those; the adapter checks ctx itself),
// and errors.Is(err, cause) too when ctx was cancelled with a cause. A call
// during which ctx ended returns that error even if the provider returned an
// answer: langchaingo's stream readers return a truncated answer without
// error when the context ends mid-stream. Other failures are returned as
// [*Error].
func FromLangchain(m llms.Model, name string, opts ...Option) Model {
	s := newSettings(opts)
	if s.provider == "" {
		s.provider = detectProvider(m)
	}
	a := &adapter{lc: m, name: name, s: s, kind: string(s.provider), model: name}
	if kind, model, ok := strings.Cut(name, ":"); ok && model != "" && slices.Contains(specKinds, kind) {
		a.kind, a.model = kind, model
		if kind == "gemini" {
			a.kind = "googleai"
		}
		if i := strings.Index(model, "@http"); i > 0 {
			a.model = model[:i] // "openai-compatible:<model>@<baseURL>"
		}
	}
	return a
}

// specKinds are the provider kinds of [New]'s specs.
var specKinds = []string{"openai", "anthropic", "googleai", "gemini", "ollama", "openai-compatible"}

type adapter struct {
	lc   llms.Model
	name string
	s    settings
	// kind and model are the provider and model of [CallInfo].
	kind, model string
}

// Generate implements [Model].
func (a *adapter) Generate(ctx context.Context, msgs []state.Message, opts ...CallOption) (*Response, error) {
	cfg := NewCallOptions(opts...)
	ctx, done := ObserveCall(ctx, CallInfo{Name: a.name, Provider: a.kind, Model: a.model, Options: cfg, Messages: msgs})
	resp, err := a.generate(ctx, msgs, cfg)
	done(resp, err)
	return resp, err
}

func (a *adapter) generate(ctx context.Context, msgs []state.Message, cfg CallOptions) (*Response, error) {
	lcMsgs, err := toLangchain(msgs, a.s.provider)
	if err != nil {
		return nil, err
	}
	tools, err := normalizeTools(cfg.Tools)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 && a.s.provider == ProviderOllama {
		return nil, fmt.Errorf("llm: %s: langchaingo's native ollama provider ignores tools; use New(ctx, \"ollama:<model>\"), which goes through Ollama's OpenAI-compatible endpoint", a.name)
	}
	var base []llms.CallOption
	if len(tools) > 0 {
		base = append(base, llms.WithTools(tools))
	}
	if cfg.ToolChoice != nil {
		base = append(base, llms.WithToolChoice(cfg.ToolChoice))
	}
	if cfg.Temperature != nil {
		base = append(base, llms.WithTemperature(*cfg.Temperature))
	}
	if cfg.MaxTokens > 0 {
		base = append(base, llms.WithMaxTokens(cfg.MaxTokens))
	}
	if len(cfg.StopWords) > 0 {
		base = append(base, llms.WithStopWords(cfg.StopWords))
	}
	base = append(base, a.s.extra...)
	base = append(base, cfg.Extra...)

	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, ctxError(ctx, a.name, nil)
		}
		a.report(ctx, ProgressEvent{Kind: ProgressAttempt, Attempt: attempt})
		resp, streamed, obs, err := a.try(ctx, attempt, lcMsgs, base, cfg.TokenSink)

		// A context that ended during the call wins even over a "success":
		// langchaingo's streaming readers can return what they had so far,
		// without error, when the context ends mid-stream.
		if ctx.Err() != nil {
			return nil, ctxError(ctx, a.name, err)
		}
		if err == nil && (resp == nil || len(resp.Choices) == 0) {
			e := &Error{Model: a.name, Attempts: attempt, Err: ErrEmptyResponse}
			a.report(ctx, ProgressEvent{Kind: ProgressGaveUp, Attempt: attempt, Reason: ReasonOther, Err: e})
			return nil, e
		}
		if err == nil {
			msg, usage, stop, reasoning := fromLangchain(resp, msgs)
			msg.ID = cfg.MessageID
			recordUsage(ctx, a.s.meter, a.name, usage)
			return &Response{Message: msg, Usage: usage, StopReason: stop, Reasoning: reasoning, Attempts: attempt}, nil
		}

		f := classify(err, obs)
		if !f.retryable || streamed || attempt >= a.s.maxAttempts || f.retryAfter > a.s.maxRetryAfter {
			e := &Error{Model: a.name, Attempts: attempt, StatusCode: f.status, RetryAfter: f.retryAfter, Retryable: f.retryable, Err: err}
			a.report(ctx, ProgressEvent{Kind: ProgressGaveUp, Attempt: attempt, Reason: f.reason,
				StatusCode: f.status, RetryAfter: f.retryAfter, Err: e})
			return nil, e
		}
		delay := f.retryAfter
		if delay <= 0 {
			delay = backoff.Delay(attempt, a.s.initialBackoff, a.s.maxBackoff)
		}
		if a.s.onRetry != nil {
			a.s.onRetry(ctx, RetryInfo{Model: a.name, Attempt: attempt, StatusCode: f.status, Delay: delay, Err: err})
		}
		a.report(ctx, ProgressEvent{Kind: ProgressRetryWait, Attempt: attempt, Reason: f.reason,
			StatusCode: f.status, RetryAfter: f.retryAfter, Delay: delay, Err: err})
		if a.s.sleep(ctx, delay) != nil {
			return nil, ctxError(ctx, a.name, err)
		}
	}
}

// try makes attempt n: one provider call under the attempt and stall
// timeouts. It
// reports whether text reached the token sink, and what the transport saw
// of the HTTP exchange. When the attempt was cut by a timeout (and not by
// ctx), err is the [*TimeoutError] and resp is nil.
func (a *adapter) try(ctx context.Context, n int, msgs []llms.MessageContent, base []llms.CallOption,
	sink func(context.Context, string),
) (resp *llms.ContentResponse, streamed bool, obs *httpObservation, err error) {
	actx := ctx
	if d := a.s.attemptTimeout; d > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(actx, d, &TimeoutError{Limit: TimeoutAttempt, After: d})
		defer cancel()
	}
	actx, cancel := context.WithCancelCause(actx)
	defer cancel(nil)
	actx, obs = withObservation(actx)

	w := &watchdog{stall: a.s.stallTimeout, cancel: cancel, firstByte: func() {
		a.report(ctx, ProgressEvent{Kind: ProgressFirstByte, Attempt: n})
	}}
	callOpts := base
	var gate *sinkGate
	if sink != nil {
		gate = &sinkGate{ctx: ctx, sink: sink}
		callOpts = append(callOpts[:len(callOpts):len(callOpts)], llms.WithStreamingFunc(func(c context.Context, b []byte) error {
			w.received() // clients without WrapTransport
			return gate.chunk(c, b)
		}))
	}
	w.stream = isStreaming(callOpts)
	actx = withWatchdog(actx, w)

	resp, err = a.lc.GenerateContent(actx, msgs, callOpts...)
	if ferr := obs.failure(); err != nil && ferr != nil {
		err = ferr
	}
	streamed = gate.close()
	w.close()
	if ctx.Err() == nil {
		if terr, ok := errors.AsType[*TimeoutError](context.Cause(actx)); ok {
			return nil, streamed, obs, terr
		}
	}
	return resp, streamed, obs, err
}

// sinkGate forwards streamed text to the caller's token sink: it drops
// empty chunks and the tool-call JSON langchaingo's openai client mixes into
// the stream, serialises calls, remembers whether anything was delivered,
// and stops delivering once the attempt is over (some providers stream from
// a goroutine that can outlive a failed attempt).
type sinkGate struct {
	ctx    context.Context
	sink   func(context.Context, string)
	mu     sync.Mutex
	closed bool
	sent   bool
}

func (g *sinkGate) chunk(_ context.Context, b []byte) error {
	if len(b) == 0 || isToolDeltaChunk(b) {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.sent = true
	g.sink(g.ctx, string(b))
	return nil
}

// close ends delivery and reports whether any text was delivered. It is
// safe on a nil gate.
func (g *sinkGate) close() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return g.sent
}

// isToolDeltaChunk recognises the chunk langchaingo's openai client passes
// to the streaming func for tool-call deltas: the JSON array of the deltas,
// e.g. [{"type":"","function":{"name":"","arguments":"{\"a\":"}}].
func isToolDeltaChunk(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return false
	}
	var arr []map[string]json.RawMessage
	if json.Unmarshal(b, &arr) != nil || len(arr) == 0 {
		return false
	}
	for _, o := range arr {
		if _, ok := o["function"]; !ok {
			return false
		}
		if _, ok := o["type"]; !ok {
			return false
		}
	}
	return true
}

// Unwrap returns the langchaingo model behind a Model built by [New] or
// [FromLangchain], and false for any other Model.
func Unwrap(m Model) (llms.Model, bool) {
	a, ok := m.(*adapter)
	if !ok {
		return nil, false
	}
	return a.lc, true
}

// String returns the model's name.
func (a *adapter) String() string { return a.name }
