package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/backoff"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Defaults of [ModelRetry] and [ToolRetry].
const (
	DefaultMaxAttempts    = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = time.Minute
)

// RetryOption configures [ModelRetry] and [ToolRetry].
type RetryOption func(*retryConfig)

type retryConfig struct {
	maxAttempts      int
	initial, maxWait time.Duration
	retryIf          func(error) bool
	onRetry          func(ctx context.Context, r Retry)
}

// Retry describes a failed attempt that is about to be retried; see
// [WithOnRetry].
type Retry struct {
	// Attempt is the attempt that failed, from 1.
	Attempt int
	// Delay is how long the middleware waits before the next attempt.
	Delay time.Duration
	// Err is the attempt's error.
	Err error
}

func newRetryConfig(opts []RetryOption) retryConfig {
	c := retryConfig{
		maxAttempts: DefaultMaxAttempts,
		initial:     DefaultInitialBackoff,
		maxWait:     DefaultMaxBackoff,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithMaxAttempts sets how many times a call is tried in total, the first
// attempt included; values below 1 count as 1 (no retry). Default
// [DefaultMaxAttempts].
func WithMaxAttempts(n int) RetryOption {
	return func(c *retryConfig) { c.maxAttempts = max(n, 1) }
}

// WithBackoff sets the wait before the first retry and the cap of its
// growth (default [DefaultInitialBackoff], [DefaultMaxBackoff]). The wait
// doubles with each retry and is jittered: a retry waits between half and
// all of it, so that concurrent callers spread out.
func WithBackoff(initial, maxWait time.Duration) RetryOption {
	return func(c *retryConfig) {
		c.initial = max(initial, 0)
		c.maxWait = max(maxWait, c.initial)
	}
}

// WithRetryIf decides which errors are retried, replacing the default of
// the middleware ([ModelRetry]: [IsRetryableModelError]; [ToolRetry]:
// [IsRetryableToolError]). The context's own errors are
// never retried, whatever retry says.
func WithRetryIf(retry func(err error) bool) RetryOption {
	return func(c *retryConfig) { c.retryIf = retry }
}

// WithOnRetry calls f before each wait for a retry, on the goroutine of
// the call.
func WithOnRetry(f func(ctx context.Context, r Retry)) RetryOption {
	return func(c *retryConfig) { c.onRetry = f }
}

// IsRetryableModelError reports whether err is (or wraps) an [*llm.Error]
// of a retryable kind: a rate limit (429, not an exhausted quota), a
// server error (5xx but 501 and 505, 408, 409, 425), a timeout or a
// network failure, as classified by package llm. It is [ModelRetry]'s
// default.
func IsRetryableModelError(err error) bool {
	e, ok := errors.AsType[*llm.Error](err)
	return ok && e.Retryable
}

// ModelRetry retries failed model calls with exponential backoff and
// jitter (see [WithBackoff]). By default it retries only what package llm
// classifies as transient ([IsRetryableModelError]); [WithRetryIf]
// changes that. When the server asked for a delay (Retry-After, in
// [llm.Error.RetryAfter]), the wait is at least that long; a delay longer
// than the backoff's cap is not waited for: the error is returned.
//
// It never retries when the call's context is done: the context's error
// is returned (errors.Is finds context.Canceled or
// context.DeadlineExceeded, and the cancellation cause), also when it ends
// during a wait. A call whose answer had started streaming to the
// caller's token sink ([llm.WithTokenSink]) is not retried either: the
// tokens cannot be taken back.
//
// The models of llm.New retry transient failures themselves (see
// llm.WithMaxAttempts); ModelRetry adds retries around those, and is what
// retries other models (your own, or a Fallback chain). The Attempts of a
// successful response count the provider calls of every attempt.
func ModelRetry(opts ...RetryOption) ModelMiddleware {
	cfg := newRetryConfig(opts)
	if cfg.retryIf == nil {
		cfg.retryIf = IsRetryableModelError
	}
	return func(m llm.Model) llm.Model {
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			opts, watch := watchSink(opts)
			calls := 0 // provider calls made by the failed attempts
			for attempt := 1; ; attempt++ {
				resp, err := m.Generate(ctx, msgs, opts...)
				if err == nil {
					if resp != nil {
						resp.Attempts += calls
					}
					return resp, nil
				}
				if ctx.Err() != nil {
					return nil, ctxError(ctx, err)
				}
				calls += providerCalls(err)
				if attempt >= cfg.maxAttempts || watch.didStream() || !cfg.retryIf(err) {
					return nil, err
				}
				delay := backoff.Delay(attempt, cfg.initial, cfg.maxWait)
				if e, ok := errors.AsType[*llm.Error](err); ok && e.RetryAfter > delay {
					if e.RetryAfter > cfg.maxWait {
						return nil, err
					}
					delay = e.RetryAfter
				}
				if serr := cfg.wait(ctx, attempt, delay, err); serr != nil {
					return nil, serr
				}
			}
		})
	}
}

// providerCalls is how many provider calls a failed model call made.
func providerCalls(err error) int {
	if e, ok := errors.AsType[*llm.Error](err); ok && e.Attempts > 0 {
		return e.Attempts
	}
	return 1
}

// wait reports the retry and sleeps; it returns the context's error when
// the context ends first.
func (c *retryConfig) wait(ctx context.Context, attempt int, delay time.Duration, err error) error {
	if c.onRetry != nil {
		c.onRetry(ctx, Retry{Attempt: attempt, Delay: delay, Err: err})
	}
	if serr := backoff.Sleep(ctx, delay); serr != nil {
		return ctxError(ctx, err)
	}
	return nil
}

// IsRetryableToolError reports whether a tool's error is worth another
// try: every error but an [*tools.ArgumentError] (the same arguments would
// fail again), the refusals of this package ([*CallLimitError],
// [ErrNoRun], [ErrNilTool]) and the context's errors. It is [ToolRetry]'s
// default. (ToolRetry never retries the pause of a tool that called
// graph.Interrupt, whatever [WithRetryIf] says.)
func IsRetryableToolError(err error) bool {
	if _, ok := errors.AsType[*tools.ArgumentError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*CallLimitError](err); ok {
		return false
	}
	return !errors.Is(err, ErrNoRun) && !errors.Is(err, ErrNilTool) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ToolRetry retries failed tool calls with exponential backoff and jitter
// (see [WithBackoff]), by default every error but bad arguments
// ([IsRetryableToolError]; change it with [WithRetryIf]). The error of the
// last attempt is returned when they run out.
//
// It never retries when the call's context is done, and then returns the
// context's error. Inside a [tools.ToolNode] the time limit of
// tools.WithCallTimeout covers all the attempts together.
func ToolRetry(opts ...RetryOption) ToolMiddleware {
	cfg := newRetryConfig(opts)
	if cfg.retryIf == nil {
		cfg.retryIf = IsRetryableToolError
	}
	return func(t tools.Tool) tools.Tool {
		return wrapTool(t, func(ctx context.Context, args []byte) (string, error) {
			for attempt := 1; ; attempt++ {
				out, err := t.Call(ctx, args)
				if err == nil {
					return out, nil
				}
				if ctx.Err() != nil {
					return "", ctxError(ctx, err)
				}
				// A pause (graph.Interrupt from inside the tool) is not a
				// failure: retrying would ask the human again.
				if attempt >= cfg.maxAttempts || graph.IsInterrupt(err) || !cfg.retryIf(err) {
					return "", err
				}
				if serr := cfg.wait(ctx, attempt, backoff.Delay(attempt, cfg.initial, cfg.maxWait), err); serr != nil {
					return "", serr
				}
			}
		})
	}
}

// ctxError returns the error of a call during which ctx ended: err itself
// when it already says so, else the context's error (and its cause) with
// err's text.
func ctxError(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if errors.Is(err, cerr) {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && cause != cerr {
		return fmt.Errorf("middleware: %w: %w (last error: %v)", cerr, cause, err)
	}
	return fmt.Errorf("middleware: %w (last error: %v)", cerr, err)
}
