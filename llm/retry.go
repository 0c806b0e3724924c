package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Error is returned by the adapter's Generate when the provider call failed
// for a reason other than the caller's context: a non-retryable error, or a
// retryable one that persisted through every attempt.
type Error struct {
	// Model is the model's name (the spec given to [New], or the name given
	// to [FromLangchain]).
	Model string
	// Attempts is the number of provider calls made.
	Attempts int
	// StatusCode is the HTTP status of the last failed attempt, 0 when it
	// is unknown (a network error, or a provider whose errors carry no
	// recognisable status; see [FromLangchain] for how it is found).
	StatusCode int
	// RetryAfter is the delay the server asked for in its last answer
	// (Retry-After / retry-after-ms headers or "try again in …" text), 0 if
	// none.
	RetryAfter time.Duration
	// Retryable reports whether the last failure was of a retryable kind
	// (429, 5xx, timeout, network); true means the attempts ran out, or the
	// server asked for a delay longer than [WithMaxRetryAfter].
	Retryable bool
	// Err is the provider's error.
	Err error
}

// Error describes the failure: model, attempts, HTTP status and the
// provider's message.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: %s", e.Model)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ": %d attempts", e.Attempts)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the provider's error.
func (e *Error) Unwrap() error { return e.Err }

// ErrEmptyResponse is returned (wrapped in [*Error]) when a provider answers
// without any choice.
var ErrEmptyResponse = errors.New("llm: provider returned an empty response")

// RetryInfo describes a failed attempt that is about to be retried; see
// [WithOnRetry].
type RetryInfo struct {
	Model      string
	Attempt    int           // the attempt that failed, from 1
	StatusCode int           // its HTTP status, 0 if unknown
	Delay      time.Duration // how long Generate waits before the next attempt
	Err        error         // the provider's error
}

// failure is the classification of one failed attempt.
type failure struct {
	retryable  bool
	reason     FailureReason
	status     int
	retryAfter time.Duration
}

var (
	statusTextRe = regexp.MustCompile(`(?i)\b(?:status(?:\s+code)?|error|http(?:/\d(?:\.\d)?)?)[\s:=]+([45]\d\d)\b`)
	tryAgainRe   = regexp.MustCompile(`(?i)\b(?:try again|retry)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b`)
)

// transientTexts are the phrases of retryable errors that carry no status,
// with the reason each one suggests.
var transientTexts = []struct {
	text   string
	reason FailureReason
}{
	{"rate limit", ReasonRateLimited},
	{"too many requests", ReasonRateLimited},
	{"overloaded", ReasonServerError},
	{"temporarily unavailable", ReasonServerError},
	{"service unavailable", ReasonServerError},
	{"timeout", ReasonTimeout},
	{"timed out", ReasonTimeout},
	{"network error", ReasonNetwork},
	{"connection reset", ReasonNetwork},
	{"connection refused", ReasonNetwork},
	{"broken pipe", ReasonNetwork},
	{"unexpected eof", ReasonNetwork},
}

// classify decides whether err, returned by an attempt whose HTTP exchange
// (if the transport saw it) is obs, is worth retrying, and why it failed.
func classify(err error, obs *httpObservation) failure {
	f := failure{reason: ReasonOther}
	if errors.Is(err, ErrTimeout) {
		// The adapter's own timeouts; whatever status the transport saw
		// (200, for a stream that stalled) is not the failure.
		f.retryable, f.reason = true, ReasonTimeout
		return f
	}
	var header http.Header
	if obs != nil {
		f.status, header = obs.get()
	}
	msg := err.Error()
	if f.status == 0 || f.status < 400 {
		f.status = 0
		if m := statusTextRe.FindStringSubmatch(msg); m != nil {
			f.status, _ = strconv.Atoi(m[1])
		}
	}
	f.retryAfter = retryAfterFromHeader(header)
	if f.retryAfter == 0 {
		f.retryAfter = retryAfterFromText(msg)
	}
	lower := strings.ToLower(msg)

	switch {
	case f.status == http.StatusTooManyRequests:
		// OpenAI answers 429 for an exhausted quota too; waiting won't help.
		f.retryable, f.reason = !strings.Contains(lower, "quota"), ReasonRateLimited
		return f
	case f.status == http.StatusRequestTimeout:
		f.retryable, f.reason = true, ReasonTimeout
		return f
	case f.status == 425, f.status == http.StatusConflict:
		f.retryable, f.reason = true, ReasonServerError
		return f
	case f.status >= 500:
		f.retryable = f.status != http.StatusNotImplemented && f.status != http.StatusHTTPVersionNotSupported
		if f.retryable {
			f.reason = ReasonServerError
		}
		return f
	case f.status >= 400:
		return f
	}

	var lerr *llms.Error
	if errors.As(err, &lerr) {
		switch lerr.Code {
		case llms.ErrCodeRateLimit:
			f.retryable, f.reason = true, ReasonRateLimited
			return f
		case llms.ErrCodeTimeout:
			f.retryable, f.reason = true, ReasonTimeout
			return f
		case llms.ErrCodeProviderUnavailable:
			f.retryable, f.reason = true, ReasonServerError
			return f
		}
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		f.retryable, f.reason = true, ReasonTimeout
		return f
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A deadline of the provider client's own (the caller's context
		// was checked before classify is called).
		f.retryable, f.reason = true, ReasonTimeout
		return f
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		f.retryable, f.reason = true, ReasonNetwork
		return f
	}
	for _, t := range transientTexts {
		if strings.Contains(lower, t.text) {
			f.retryable, f.reason = true, t.reason
			return f
		}
	}
	return f
}

func retryAfterFromHeader(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func retryAfterFromText(msg string) time.Duration {
	m := tryAgainRe.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n <= 0 {
		return 0
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "ms"), strings.HasPrefix(u, "milli"):
		unit = time.Millisecond
	case strings.HasPrefix(u, "m"):
		unit = time.Minute
	}
	return time.Duration(n * float64(unit))
}

// ctxError wraps the caller's context error so that errors.Is finds
// context.Canceled / context.DeadlineExceeded, and the cancellation cause
// too when one was given; the provider's error is kept as text only.
func ctxError(ctx context.Context, name string, providerErr error) error {
	err := ctx.Err()
	cause := context.Cause(ctx)
	suffix := ""
	if providerErr != nil {
		suffix = " (provider: " + providerErr.Error() + ")"
	}
	if cause != nil && cause != err {
		return fmt.Errorf("llm: %s: %w: %w%s", name, err, cause, suffix)
	}
	return fmt.Errorf("llm: %s: %w%s", name, err, suffix)
}
