package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// ErrTimeout matches, with errors.Is, every error of an attempt that ran
// out of time: see [*TimeoutError]. It never matches the caller's own
// context ending, which surfaces as context.Canceled or
// context.DeadlineExceeded instead.
var ErrTimeout = errors.New("llm: timeout")

// ErrAttemptTimeout is the former name of [ErrTimeout].
//
// Deprecated: use [ErrTimeout], or [*TimeoutError] to know which limit was
// hit.
var ErrAttemptTimeout = ErrTimeout

// TimeoutLimit names the limit a timed-out attempt hit.
type TimeoutLimit string

// The limits of an attempt.
const (
	// TimeoutAttempt: the attempt as a whole took longer than
	// [WithAttemptTimeout].
	TimeoutAttempt TimeoutLimit = "attempt"
	// TimeoutStall: the server sent nothing for [WithStallTimeout] while an
	// answer was awaited.
	TimeoutStall TimeoutLimit = "stall"
)

// TimeoutError is the error of an attempt that the adapter cut short
// because the provider took too long. Generate retries it like a 5xx (see
// [WithMaxAttempts]), unless answer text has already reached the token sink;
// when it gives up, the TimeoutError is the Err of the returned [*Error].
// errors.Is(err, ErrTimeout) holds for it.
type TimeoutError struct {
	// Limit is the limit that was hit.
	Limit TimeoutLimit
	// After is that limit's value.
	After time.Duration
}

// Error says which limit was hit.
func (e *TimeoutError) Error() string {
	if e.Limit == TimeoutStall {
		return fmt.Sprintf("llm: stalled: no data from the server for %v (stall timeout)", e.After)
	}
	return fmt.Sprintf("llm: attempt timed out after %v", e.After)
}

// Is makes errors.Is(err, ErrTimeout) hold.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Timeout reports true, as net.Error and os.IsTimeout expect of timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// watchdog enforces the stall timeout of one attempt and reports the first
// byte of its answer. The adapter puts it on the attempt's context; the
// transport ([WrapTransport]) times every wait on the server with it.
type watchdog struct {
	stall  time.Duration // 0: no stall timeout
	stream bool          // streaming call: the wait for headers is timed too
	cancel context.CancelCauseFunc
	// firstByte is called once, on the first byte of a successful answer,
	// unless the attempt is over by then.
	firstByte func()

	mu     sync.Mutex
	closed bool
	seen   bool
}

type watchKey struct{}

func withWatchdog(ctx context.Context, w *watchdog) context.Context {
	return context.WithValue(ctx, watchKey{}, w)
}

func watchdogFrom(ctx context.Context) *watchdog {
	w, _ := ctx.Value(watchKey{}).(*watchdog)
	return w
}

// await starts the stall clock for one wait on the server: unless the
// returned function is called within the stall timeout, the attempt is
// cancelled with a [*TimeoutError]. It is safe on a nil watchdog.
func (w *watchdog) await() (stop func()) {
	if w == nil || w.stall <= 0 {
		return func() {}
	}
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return func() {}
	}
	t := time.AfterFunc(w.stall, func() { w.cancel(&TimeoutError{Limit: TimeoutStall, After: w.stall}) })
	return func() { t.Stop() }
}

// awaitHeaders is await for the wait on the response headers, which is
// timed for streaming calls only: a non-streaming answer's headers come
// when the whole answer is ready.
func (w *watchdog) awaitHeaders() (stop func()) {
	if w == nil || !w.stream {
		return func() {}
	}
	return w.await()
}

// received notes that answer data arrived. It is safe on a nil watchdog.
func (w *watchdog) received() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.seen {
		return
	}
	w.seen = true
	if w.firstByte != nil {
		w.firstByte()
	}
}

// close ends the attempt: no more first-byte report, no more stall clocks.
// It waits for a first-byte report in progress.
func (w *watchdog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

// watchedBody times every read of a response body against the stall
// timeout. Only the time spent blocked in Read counts: a slow consumer
// (a token sink that takes its time) is not mistaken for a silent server.
type watchedBody struct {
	io.ReadCloser
	w  *watchdog
	ok bool // 2xx: data is the answer (reported as the first byte)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	stop := b.w.await()
	n, err := b.ReadCloser.Read(p)
	stop()
	if n > 0 && b.ok {
		b.w.received()
	}
	return n, err
}

// isStreaming reports whether opts make the provider stream its answer.
func isStreaming(opts []llms.CallOption) bool {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.StreamingFunc != nil
}
