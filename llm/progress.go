package llm

import (
	"context"
	"strconv"
	"time"
)

// Progress observes the attempts of Generate calls, so that a user
// interface can show "waiting for the model", back-offs and failures.
// Attach it to a model with [WithProgress] or to a context with
// [ContextWithProgress].
//
// ctx is the context given to Generate. Progress is called synchronously
// and holds up the call while it runs: it must return quickly. Events of
// one Generate call are delivered one at a time and in order: each attempt
// starts with [ProgressAttempt], may report [ProgressFirstByte], and is
// followed by [ProgressRetryWait] or [ProgressGaveUp] when it fails (a
// successful call ends with no event of its own: Generate returns). All
// events are delivered on the goroutine that called Generate except
// [ProgressFirstByte], which may come from a goroutine of the HTTP client.
// A call ended by the caller's context reports nothing more.
type Progress func(ctx context.Context, ev ProgressEvent)

// ProgressKind is what a [ProgressEvent] reports.
type ProgressKind int

// The kinds of [ProgressEvent].
const (
	// ProgressAttempt: attempt Attempt is starting; the request is about to
	// be sent and the model is being waited for.
	ProgressAttempt ProgressKind = iota + 1
	// ProgressFirstByte: the first byte of the model's answer to attempt
	// Attempt arrived (the body of a successful HTTP response; for a client
	// without [WrapTransport], the first streamed chunk). With streaming,
	// the model has started answering. Reported at most once per attempt.
	ProgressFirstByte
	// ProgressRetryWait: attempt Attempt failed for a transient Reason
	// (Err, StatusCode, RetryAfter) and Generate waits Delay before the
	// next one.
	ProgressRetryWait
	// ProgressGaveUp: attempt Attempt failed and Generate returns Err, an
	// [*Error]: the failure is not retryable, or the attempts ran out, or
	// the server asked for a delay longer than [WithMaxRetryAfter], or text
	// had already been streamed.
	ProgressGaveUp
)

var progressKindNames = [...]string{
	ProgressAttempt:   "attempt",
	ProgressFirstByte: "first_byte",
	ProgressRetryWait: "retry_wait",
	ProgressGaveUp:    "gave_up",
}

// String returns the kind's name: "attempt", "first_byte", "retry_wait" or
// "gave_up".
func (k ProgressKind) String() string {
	if k > 0 && int(k) < len(progressKindNames) {
		return progressKindNames[k]
	}
	return "ProgressKind(" + strconv.Itoa(int(k)) + ")"
}

// FailureReason classifies a failed attempt, for [ProgressEvent.Reason].
type FailureReason string

// The reasons of failed attempts.
const (
	// ReasonRateLimited: HTTP 429 or a rate-limit error; RetryAfter is the
	// delay the server asked for, if any.
	ReasonRateLimited FailureReason = "rate_limited"
	// ReasonTimeout: the attempt hit a timeout of its own ([*TimeoutError])
	// or the server or network reported one (HTTP 408, a timed-out
	// connection).
	ReasonTimeout FailureReason = "timeout"
	// ReasonServerError: HTTP 5xx (or 409 / 425), or the provider said it
	// is overloaded or unavailable.
	ReasonServerError FailureReason = "server_error"
	// ReasonNetwork: the connection failed or broke (refused, reset, cut
	// mid-answer).
	ReasonNetwork FailureReason = "network"
	// ReasonOther: any other failure (a 4xx, an empty or unreadable
	// answer, …); such failures are not retried.
	ReasonOther FailureReason = "other"
)

// ProgressEvent is one report of a [Progress] observer.
type ProgressEvent struct {
	Kind ProgressKind
	// Model is the model's name (as in [Error.Model]).
	Model string
	// Attempt is the attempt the event is about, from 1.
	Attempt int
	// MaxAttempts is the most attempts the call may make ([WithMaxAttempts]).
	MaxAttempts int

	// The fields below are set for ProgressRetryWait and ProgressGaveUp.

	// Reason classifies the failure.
	Reason FailureReason
	// StatusCode is the failed attempt's HTTP status, 0 if unknown.
	StatusCode int
	// RetryAfter is the delay the server asked for (Retry-After), 0 if none.
	RetryAfter time.Duration
	// Delay is how long Generate waits before the next attempt
	// (ProgressRetryWait only): RetryAfter when the server gave one, else
	// the backoff.
	Delay time.Duration
	// Err is the failed attempt's error for ProgressRetryWait (a
	// [*TimeoutError] for timeouts), and the error Generate returns (an
	// [*Error]) for ProgressGaveUp.
	Err error
}

// WithProgress reports the progress of every call of the model to p; see
// [Progress]. Hooks attached to the call's context with
// [ContextWithProgress] are called too, after p.
func WithProgress(p Progress) Option {
	return func(s *settings) { s.progress = p }
}

type progressKey struct{}

// ContextWithProgress returns a context that makes the models built by
// [New] and [FromLangchain] report the progress of calls made with it to
// p, in addition to any hook attached with [WithProgress]. Hooks
// accumulate: one attached by an outer caller keeps receiving events, and
// is called first.
func ContextWithProgress(ctx context.Context, p Progress) context.Context {
	if p == nil {
		return ctx
	}
	prev := progressFromContext(ctx)
	hooks := make([]Progress, len(prev), len(prev)+1)
	copy(hooks, prev)
	return context.WithValue(ctx, progressKey{}, append(hooks, p))
}

func progressFromContext(ctx context.Context) []Progress {
	hooks, _ := ctx.Value(progressKey{}).([]Progress)
	return hooks
}

// report sends ev to the model's hook and to those on ctx.
func (a *adapter) report(ctx context.Context, ev ProgressEvent) {
	hooks := progressFromContext(ctx)
	if a.s.progress == nil && len(hooks) == 0 {
		return
	}
	ev.Model = a.name
	ev.MaxAttempts = a.s.maxAttempts
	if a.s.progress != nil {
		a.s.progress(ctx, ev)
	}
	for _, h := range hooks {
		h(ctx, ev)
	}
}
