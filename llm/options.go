package llm

import (
	"context"
	"net/http"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/internal/backoff"
)

// Option configures a Model built by [New] or [FromLangchain].
type Option func(*settings)

type settings struct {
	provider       Provider
	maxAttempts    int
	initialBackoff time.Duration
	maxBackoff     time.Duration
	maxRetryAfter  time.Duration
	attemptTimeout time.Duration
	stallTimeout   time.Duration
	meter          *Meter
	onRetry        func(context.Context, RetryInfo)
	progress       Progress

	// Whether the timeouts were set by an option (which wins over the
	// parameters of New's spec).
	attemptTimeoutSet, stallTimeoutSet bool

	// Used by New only.
	baseURL    string
	apiKey     string
	httpClient *http.Client

	// Set by New: langchaingo options added to every call.
	extra []llms.CallOption
	// Tests replace the sleep between attempts (customSleep keeps such
	// models out of New's cache).
	sleep       func(context.Context, time.Duration) error
	customSleep bool
}

// Defaults of the retry policy.
const (
	DefaultMaxAttempts    = 4
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 20 * time.Second
	DefaultMaxRetryAfter  = time.Minute
)

// Default timeouts of an attempt; see [WithAttemptTimeout] and
// [WithStallTimeout].
//
// The attempt timeout is a backstop, not the hang detector: it cuts
// healthy calls too, and a call cut after its text was streamed is not
// retried, so it must exceed the longest legitimate answer — long outputs
// of slow or local models and reasoning models take several minutes. Ten
// minutes is also the request timeout OpenAI's and Anthropic's official
// SDKs default to.
//
// The stall timeout is what catches a server that stops talking; it only
// counts time spent waiting on the server. OpenAI-wire endpoints send
// nothing while a reasoning model thinks, nor local servers while they load
// a model or read a long prompt; such silences commonly pass 30–60 s, and a
// stall timeout that cuts them retries into the same silence. Two minutes
// spares them, yet reports a hung stream within minutes.
const (
	DefaultAttemptTimeout = 10 * time.Minute
	DefaultStallTimeout   = 2 * time.Minute
)

func newSettings(opts []Option) settings {
	s := settings{
		maxAttempts:    DefaultMaxAttempts,
		initialBackoff: DefaultInitialBackoff,
		maxBackoff:     DefaultMaxBackoff,
		maxRetryAfter:  DefaultMaxRetryAfter,
		attemptTimeout: DefaultAttemptTimeout,
		stallTimeout:   DefaultStallTimeout,
		sleep:          backoff.Sleep,
	}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// WithMaxAttempts sets how many times a call is tried in total (the first
// attempt included); 1 disables retries. Values below 1 count as 1. Default
// [DefaultMaxAttempts].
func WithMaxAttempts(n int) Option {
	return func(s *settings) { s.maxAttempts = max(n, 1) }
}

// WithBackoff sets the delay before the first retry and the cap of the
// exponential growth (default [DefaultInitialBackoff], [DefaultMaxBackoff]).
// The delay doubles with each retry and is jittered: a retry waits between
// half and all of it.
func WithBackoff(initial, maxDelay time.Duration) Option {
	return func(s *settings) {
		s.initialBackoff = max(initial, 0)
		s.maxBackoff = max(maxDelay, s.initialBackoff)
	}
}

// WithMaxRetryAfter sets the longest server-requested delay (Retry-After)
// that is honoured; when a server asks for more, Generate gives up at once
// and returns an [*Error] with RetryAfter set, leaving the decision to the
// caller. Default [DefaultMaxRetryAfter].
func WithMaxRetryAfter(d time.Duration) Option {
	return func(s *settings) { s.maxRetryAfter = d }
}

// WithAttemptTimeout bounds each attempt (one provider call: sending the
// request and receiving the whole answer) to d; default
// [DefaultAttemptTimeout]. Zero or less means no bound beyond the caller's
// context. An attempt that runs out of time fails with a [*TimeoutError]
// (Limit [TimeoutAttempt]) and is retried like a 5xx; with a token sink, an
// attempt that times out after it has streamed text is not retried. The
// spec of [New] can set it too ("?timeout=5m"); this option wins.
func WithAttemptTimeout(d time.Duration) Option {
	return func(s *settings) { s.attemptTimeout, s.attemptTimeoutSet = d, true }
}

// WithStallTimeout fails an attempt when the server sends nothing for d
// while its answer is awaited: the response headers of a streaming call,
// or the next bytes of any response body; default [DefaultStallTimeout].
// Only time spent waiting on the server counts, not time the caller's
// token sink takes. Zero or less disables it. The attempt fails with a
// [*TimeoutError] (Limit [TimeoutStall]) and is retried like a 5xx, unless
// it had already streamed text to the token sink. The spec of [New] can
// set it too ("?stall=90s"); this option wins.
//
// The stall timeout is enforced by [WrapTransport], which every client of
// [New] uses; a model built with [FromLangchain] over a client without it
// is bounded by [WithAttemptTimeout] only. A non-streaming call is not
// timed while the server computes its answer (its headers come with the
// whole answer); [WithAttemptTimeout] bounds that wait.
func WithStallTimeout(d time.Duration) Option {
	return func(s *settings) { s.stallTimeout, s.stallTimeoutSet = d, true }
}

// WithMeter records the usage of every successful call into m. See also
// [ContextWithMeter].
func WithMeter(m *Meter) Option {
	return func(s *settings) { s.meter = m }
}

// WithOnRetry calls f before every retry (for logging, tracing or metrics).
// f runs on the goroutine that called Generate and delays the retry while
// it runs.
func WithOnRetry(f func(ctx context.Context, info RetryInfo)) Option {
	return func(s *settings) { s.onRetry = f }
}

// WithProvider tells [FromLangchain] which provider's quirks to work around,
// overriding the detection from the model's Go type (useful when the
// provider is wrapped in middleware). [New] ignores it.
func WithProvider(p Provider) Option {
	return func(s *settings) { s.provider = p }
}

// WithBaseURL sets the server URL for [New], overriding environment
// variables and defaults. For OpenAI-wire providers it is the URL that
// "/chat/completions" is appended to (it normally ends in "/v1"); for
// anthropic, the URL that "/v1/messages" is appended to ("/v1" is not
// repeated if present). [FromLangchain] ignores it.
func WithBaseURL(u string) Option {
	return func(s *settings) { s.baseURL = u }
}

// WithAPIKey sets the API key for [New], overriding environment variables.
// [FromLangchain] ignores it.
func WithAPIKey(key string) Option {
	return func(s *settings) { s.apiKey = key }
}

// WithHTTPClient makes [New] send requests through a copy of c whose
// transport is wrapped with [WrapTransport]. By default [New] uses a client
// over [http.DefaultTransport] without an overall timeout: the adapter
// bounds each attempt ([WithAttemptTimeout], [WithStallTimeout]).
// [FromLangchain] ignores it.
func WithHTTPClient(c *http.Client) Option {
	return func(s *settings) { s.httpClient = c }
}
