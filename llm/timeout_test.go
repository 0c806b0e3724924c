package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

// The first chunk OpenAI streams (the role, no text), and one with text.
const (
	roleChunk = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	textChunk = `{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`
)

// backstop is the attempt timeout of tests about other limits: should
// those fail to fire, the test fails instead of hanging.
const backstop = 10 * time.Second

// stallHandler answers the hit-th request; stall blocks until the client
// gives up on the request or the test ends.
type stallHandler func(w http.ResponseWriter, r *http.Request, hit int, stall func())

// newStallServer is newFakeServer for handlers that stall. Stalled
// handlers are released when the test ends, before the server is closed,
// so that closing it never waits for them.
func newStallServer(t *testing.T, h stallHandler) *fakeServer {
	t.Helper()
	release := make(chan struct{})
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, _ []byte) {
		h(w, r, hit, func() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
	})
	t.Cleanup(func() { close(release) }) // runs before fs.Close
	return fs
}

// startSSE sends the headers of an event stream and the given chunks, and
// flushes them.
func startSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	w.(http.Flusher).Flush()
}

// checkNoLeaks fails the test if it ends with more goroutines than it
// started with. Call it first, so that it runs after the other clean-ups
// (servers closed, stalled handlers released).
func checkNoLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines leaked: %d before the test, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// waitHits waits until fs has seen n requests: a request the client gave up
// on before its answer began may reach the handler after Generate returned.
func waitHits(t *testing.T, fs *fakeServer, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return fs.hits() >= n }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, n, fs.hits())
}

// progressLog records progress events.
type progressLog struct {
	mu     sync.Mutex
	events []ProgressEvent
}

func (l *progressLog) hook(_ context.Context, ev ProgressEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *progressLog) get() []ProgressEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ProgressEvent(nil), l.events...)
}

// summary renders the events as "kind attempt [reason]", one per event.
func (l *progressLog) summary() []string {
	var out []string
	for _, ev := range l.get() {
		s := fmt.Sprintf("%s %d", ev.Kind, ev.Attempt)
		if ev.Reason != "" {
			s += " " + string(ev.Reason)
		}
		out = append(out, s)
	}
	return out
}

// timeoutEvents is the progress of a call whose attempts all time out;
// firstByte tells whether each got a first byte.
func timeoutEvents(attempts int, firstByte bool) []string {
	var out []string
	for i := 1; i <= attempts; i++ {
		out = append(out, fmt.Sprintf("attempt %d", i))
		if firstByte {
			out = append(out, fmt.Sprintf("first_byte %d", i))
		}
		if i < attempts {
			out = append(out, fmt.Sprintf("retry_wait %d timeout", i))
		} else {
			out = append(out, fmt.Sprintf("gave_up %d timeout", i))
		}
	}
	return out
}

func TestTimeouts(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		spec    string // default "openai:gpt-test"
		stream  bool
		handler stallHandler
		opts    []Option
		// wantLimit and wantAfter describe the *TimeoutError.
		wantLimit TimeoutLimit
		wantAfter time.Duration
		// wantHits is the number of requests (and attempts).
		wantHits   int
		wantEvents []string
	}{
		{
			name: "accepts and never answers: attempt timeout, retried",
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				stall()
			},
			// The stall timeout is shorter, but a non-streaming call is not
			// timed while the server computes its answer.
			opts:      []Option{WithAttemptTimeout(60 * ms), WithStallTimeout(5 * ms)},
			wantLimit: TimeoutAttempt, wantAfter: 60 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, false),
		},
		{
			name: "accepts and never answers, timeout from the spec",
			spec: "openai:gpt-test?timeout=40ms",
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				stall()
			},
			wantLimit: TimeoutAttempt, wantAfter: 40 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, false),
		},
		{
			name:   "streaming, accepts and never answers: stall on the headers, retried",
			stream: true,
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				stall()
			},
			opts:      []Option{WithStallTimeout(30 * ms)},
			wantLimit: TimeoutStall, wantAfter: 30 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, false),
		},
		{
			name:   "streaming, headers and a first chunk, then silence: stall, retried",
			stream: true,
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				startSSE(w, roleChunk)
				stall()
			},
			opts:      []Option{WithStallTimeout(30 * ms)},
			wantLimit: TimeoutStall, wantAfter: 30 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, true),
		},
		{
			name:   "stall from the spec",
			spec:   "openai:gpt-test?stall=30ms",
			stream: true,
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				startSSE(w, roleChunk)
				stall()
			},
			wantLimit: TimeoutStall, wantAfter: 30 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, true),
		},
		{
			name: "non-streaming answer cut off mid-body: stall, retried",
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				fmt.Fprint(w, `{"choices":[`)
				w.(http.Flusher).Flush()
				stall()
			},
			opts:      []Option{WithStallTimeout(30 * ms)},
			wantLimit: TimeoutStall, wantAfter: 30 * ms,
			wantHits: 3, wantEvents: timeoutEvents(3, true),
		},
		{
			name:   "streaming, text streamed, then silence: stall, not retried",
			stream: true,
			handler: func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				startSSE(w, roleChunk, textChunk)
				stall()
			},
			opts:      []Option{WithStallTimeout(30 * ms)},
			wantLimit: TimeoutStall, wantAfter: 30 * ms,
			wantHits: 1, wantEvents: []string{"attempt 1", "first_byte 1", "gave_up 1 timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoLeaks(t)
			fs := newStallServer(t, tt.handler)
			spec := tt.spec
			if spec == "" {
				spec = "openai:gpt-test"
			}
			var rec delayRecorder
			var progress progressLog
			opts := []Option{WithBaseURL(fs.URL + "/v1"), WithAPIKey("sk-test"), rec.option(),
				WithMaxAttempts(3), WithProgress(progress.hook)}
			if tt.wantLimit == TimeoutStall {
				opts = append(opts, WithAttemptTimeout(backstop))
			}
			opts = append(opts, tt.opts...)
			m, err := New(context.Background(), spec, opts...)
			require.NoError(t, err)
			var callOpts []CallOption
			var toks tokenCollector
			if tt.stream {
				callOpts = append(callOpts, WithTokenSink(toks.sink))
			}

			_, err = m.Generate(context.Background(), []state.Message{state.Human("hi")}, callOpts...)

			require.ErrorIs(t, err, ErrTimeout)
			require.ErrorIs(t, err, ErrAttemptTimeout, "the deprecated name still matches")
			require.NotErrorIs(t, err, context.DeadlineExceeded, "reserved for the caller's context")
			require.NotErrorIs(t, err, context.Canceled, "reserved for the caller's context")
			terr, ok := errors.AsType[*TimeoutError](err)
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, TimeoutError{Limit: tt.wantLimit, After: tt.wantAfter}, *terr)
			llmErr, ok := errors.AsType[*Error](err)
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, "openai:gpt-test", llmErr.Model)
			require.True(t, llmErr.Retryable)
			require.Equal(t, tt.wantHits, llmErr.Attempts)
			waitHits(t, fs, tt.wantHits)
			require.Len(t, rec.get(), tt.wantHits-1, "backoff between attempts")
			require.Equal(t, tt.wantEvents, progress.summary())
			last := progress.get()[len(progress.get())-1]
			require.Equal(t, err, last.Err, "gave_up carries the returned error")
		})
	}
}

// A server that stalls once and then answers: the retry succeeds.
func TestStallOnceThenAnswer(t *testing.T) {
	const anthropicStart = `{"type":"message_start","message":{"id":"m","model":"claude-test","role":"assistant","type":"message","content":[],"usage":{"input_tokens":5,"output_tokens":0}}}`
	tests := []struct {
		name     string
		model    func(t *testing.T, fs *fakeServer, opts ...Option) Model
		stream   bool
		opts     []Option
		first    func(w http.ResponseWriter, stall func())
		answer   func(w http.ResponseWriter)
		wantToks []string
		wantText string
	}{
		{
			name:   "streaming, stalls after the first chunk",
			model:  openAIModel,
			stream: true,
			opts:   []Option{WithStallTimeout(30 * time.Millisecond), WithAttemptTimeout(backstop)},
			first: func(w http.ResponseWriter, stall func()) {
				startSSE(w, roleChunk)
				stall()
			},
			answer: func(w http.ResponseWriter) {
				writeSSE(w, roleChunk, textChunk, `{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`)
			},
			wantToks: []string{"Hel", "lo"},
			wantText: "Hello",
		},
		{
			name:  "non-streaming, never answers",
			model: openAIModel,
			// Long enough for the first request to reach its handler (and
			// be hit 1) before the client gives up on it.
			opts: []Option{WithAttemptTimeout(200 * time.Millisecond)},
			first: func(w http.ResponseWriter, stall func()) {
				stall()
			},
			answer:   func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, openAIOK) },
			wantText: "ok",
		},
		{
			name:   "anthropic streaming, stalls after message_start",
			model:  anthropicModel,
			stream: true,
			opts:   []Option{WithStallTimeout(30 * time.Millisecond), WithAttemptTimeout(backstop)},
			first: func(w http.ResponseWriter, stall func()) {
				writeAnthropicSSE(w, anthropicStart)
				stall()
			},
			answer: func(w http.ResponseWriter) {
				writeAnthropicSSE(w, anthropicStart,
					`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
					`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
					`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`,
					`{"type":"content_block_stop","index":0}`,
					`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
					`{"type":"message_stop"}`)
			},
			wantToks: []string{"Hel", "lo"},
			wantText: "Hello",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoLeaks(t)
			fs := newStallServer(t, func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				if hit == 1 {
					tt.first(w, stall)
					return
				}
				tt.answer(w)
			})
			var rec delayRecorder
			var progress progressLog
			m := tt.model(t, fs, append([]Option{rec.option(), WithProgress(progress.hook)}, tt.opts...)...)
			var callOpts []CallOption
			var toks tokenCollector
			if tt.stream {
				callOpts = append(callOpts, WithTokenSink(toks.sink))
			}

			resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")}, callOpts...)
			require.NoError(t, err)
			require.Equal(t, tt.wantText, resp.Message.Text())
			require.Equal(t, 2, resp.Attempts)
			require.Equal(t, 2, fs.hits())
			require.Equal(t, tt.wantToks, toks.get(), "only the second attempt streamed text")

			want := []string{"attempt 1", "retry_wait 1 timeout", "attempt 2", "first_byte 2"}
			if tt.stream {
				want = []string{"attempt 1", "first_byte 1", "retry_wait 1 timeout", "attempt 2", "first_byte 2"}
			}
			require.Equal(t, want, progress.summary())
		})
	}
}

// The caller's cancellation during a stall is the context's error, never a
// timeout, even when the stall timeout had cut an attempt before.
func TestCancelDuringStall(t *testing.T) {
	tests := []struct {
		name       string
		stall      time.Duration
		cancelAt   ProgressKind
		wantEvents []string
	}{
		{
			name:  "cancelled while the server is silent",
			stall: time.Hour, cancelAt: ProgressFirstByte,
			wantEvents: []string{"attempt 1", "first_byte 1"},
		},
		{
			name:  "cancelled while waiting to retry a stalled attempt",
			stall: 30 * time.Millisecond, cancelAt: ProgressRetryWait,
			wantEvents: []string{"attempt 1", "first_byte 1", "retry_wait 1 timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoLeaks(t)
			fs := newStallServer(t, func(w http.ResponseWriter, r *http.Request, hit int, stall func()) {
				startSSE(w, roleChunk)
				stall()
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var progress progressLog
			hook := func(ctx context.Context, ev ProgressEvent) {
				progress.hook(ctx, ev)
				if ev.Kind == tt.cancelAt {
					cancel()
				}
			}
			var rec delayRecorder
			m := openAIModel(t, fs, rec.option(), WithStallTimeout(tt.stall), WithAttemptTimeout(backstop), WithProgress(hook))

			_, err := m.Generate(ctx, []state.Message{state.Human("hi")}, WithTokenSink(func(context.Context, string) {}))
			require.ErrorIs(t, err, context.Canceled)
			require.NotErrorIs(t, err, ErrTimeout)
			_, isLLMErr := errors.AsType[*Error](err)
			require.False(t, isLLMErr, "%T %v", err, err)
			require.Equal(t, 1, fs.hits(), "not retried")
			require.Equal(t, tt.wantEvents, progress.summary(), "nothing after the cancellation")
		})
	}
}

// Failed attempts are reported with their reason, status, the server's
// Retry-After and the wait; a successful attempt reports its first byte.
func TestProgressOfRetries(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		header    http.Header
		message   string
		wantEvent ProgressEvent // the event after "attempt 1", Err and Delay aside
		wantDelay time.Duration // 0: any backoff
		wantHits  int
	}{
		{
			name: "429 with Retry-After", status: 429, header: http.Header{"Retry-After": {"7"}}, message: "Rate limit reached",
			wantEvent: ProgressEvent{Kind: ProgressRetryWait, Attempt: 1, Reason: ReasonRateLimited, StatusCode: 429, RetryAfter: 7 * time.Second},
			wantDelay: 7 * time.Second, wantHits: 2,
		},
		{
			name: "429 with retry-after-ms", status: 429, header: http.Header{"Retry-After-Ms": {"250"}}, message: "Rate limit reached",
			wantEvent: ProgressEvent{Kind: ProgressRetryWait, Attempt: 1, Reason: ReasonRateLimited, StatusCode: 429, RetryAfter: 250 * time.Millisecond},
			wantDelay: 250 * time.Millisecond, wantHits: 2,
		},
		{
			name: "503", status: 503, message: "unavailable",
			wantEvent: ProgressEvent{Kind: ProgressRetryWait, Attempt: 1, Reason: ReasonServerError, StatusCode: 503},
			wantHits:  2,
		},
		{
			name: "429 asking for too long a wait", status: 429, header: http.Header{"Retry-After": {"3600"}}, message: "Rate limit reached",
			wantEvent: ProgressEvent{Kind: ProgressGaveUp, Attempt: 1, Reason: ReasonRateLimited, StatusCode: 429, RetryAfter: time.Hour},
			wantHits:  1,
		},
		{
			name: "400", status: 400, message: "bad request",
			wantEvent: ProgressEvent{Kind: ProgressGaveUp, Attempt: 1, Reason: ReasonOther, StatusCode: 400},
			wantHits:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
				if hit > 1 {
					writeJSON(w, http.StatusOK, openAIOK)
					return
				}
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				writeJSON(w, tt.status, fmt.Sprintf(`{"error":{"message":%q}}`, tt.message))
			})
			var rec delayRecorder
			var progress progressLog
			m := openAIModel(t, fs, rec.option(), WithProgress(progress.hook), WithBackoff(10*time.Millisecond, time.Second))

			resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
			require.Equal(t, tt.wantHits, fs.hits())
			events := progress.get()
			require.Equal(t, ProgressEvent{Kind: ProgressAttempt, Model: "openai:gpt-test", Attempt: 1, MaxAttempts: DefaultMaxAttempts}, events[0])
			got := events[1]
			require.Error(t, got.Err)
			gotDelay := got.Delay
			got.Err, got.Delay = nil, 0
			tt.wantEvent.Model, tt.wantEvent.MaxAttempts = "openai:gpt-test", DefaultMaxAttempts
			require.Equal(t, tt.wantEvent, got)

			if tt.wantEvent.Kind == ProgressGaveUp {
				require.Error(t, err)
				require.Len(t, events, 2)
				require.Equal(t, err, events[1].Err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 2, resp.Attempts)
			require.Equal(t, []time.Duration{gotDelay}, rec.get(), "the reported delay is the one waited")
			if tt.wantDelay != 0 {
				require.Equal(t, tt.wantDelay, gotDelay)
			} else {
				require.Positive(t, gotDelay)
			}
			require.Equal(t, []string{"attempt 2", "first_byte 2"}, (&progressLog{events: events[2:]}).summary(),
				"no first byte for an error answer; one for the answer")
		})
	}
}

// Hooks on the context and on the model all see the events: the model's
// first, then the context's, outermost first.
func TestContextWithProgress(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, openAIOK)
	})
	var mu sync.Mutex
	var seen []string
	hook := func(name string) Progress {
		return func(_ context.Context, ev ProgressEvent) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, name+" "+ev.Kind.String())
		}
	}
	m := openAIModel(t, fs, WithProgress(hook("model")))
	ctx := ContextWithProgress(context.Background(), hook("outer"))
	ctx = ContextWithProgress(ctx, nil)
	ctx = ContextWithProgress(ctx, hook("inner"))
	_, err := m.Generate(ctx, []state.Message{state.Human("hi")})
	require.NoError(t, err)
	require.Equal(t, []string{
		"model attempt", "outer attempt", "inner attempt",
		"model first_byte", "outer first_byte", "inner first_byte",
	}, seen)
}

func TestSpecParameters(t *testing.T) {
	tests := []struct {
		name        string
		spec        string
		opts        []Option
		wantName    string
		wantBaseURL string
		wantTimeout time.Duration
		wantStall   time.Duration
		wantErr     string
	}{
		{name: "defaults", spec: "openai:gpt-4o-mini",
			wantName: "openai:gpt-4o-mini", wantTimeout: DefaultAttemptTimeout, wantStall: DefaultStallTimeout},
		{name: "both", spec: "openai:gpt-4o-mini?timeout=3m&stall=45s",
			wantName: "openai:gpt-4o-mini", wantTimeout: 3 * time.Minute, wantStall: 45 * time.Second},
		{name: "zero disables", spec: " ollama:qwen3:32b?stall=0 ",
			wantName: "ollama:qwen3:32b", wantTimeout: DefaultAttemptTimeout},
		{name: "after the base URL", spec: "openai-compatible:qwen3@http://localhost:8000/v1?timeout=20m",
			wantName: "openai-compatible:qwen3@http://localhost:8000/v1", wantBaseURL: "http://localhost:8000/v1",
			wantTimeout: 20 * time.Minute, wantStall: DefaultStallTimeout},
		{name: "options win", spec: "openai:gpt-4o-mini?timeout=3m&stall=45s",
			opts:     []Option{WithAttemptTimeout(time.Minute), WithStallTimeout(0)},
			wantName: "openai:gpt-4o-mini", wantTimeout: time.Minute},
		{name: "not a duration", spec: "openai:gpt-4o-mini?timeout=soon", wantErr: `parameter timeout="soon"`},
		{name: "negative", spec: "openai:gpt-4o-mini?stall=-1s", wantErr: `parameter stall="-1s"`},
		{name: "unknown key", spec: "openai:gpt-4o-mini?retries=3", wantErr: `unknown parameter "retries"`},
		{name: "query of a base URL", spec: "openai-compatible:m@http://h/v1?api-version=1", wantErr: `unknown parameter "api-version"`},
		{name: "malformed", spec: "openai:gpt-4o-mini?timeout=%zz", wantErr: "parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(context.Background(), tt.spec, append([]Option{WithAPIKey("k")}, tt.opts...)...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			a := m.(*adapter)
			require.Equal(t, tt.wantName, a.String())
			require.Equal(t, tt.wantTimeout, a.s.attemptTimeout)
			require.Equal(t, tt.wantStall, a.s.stallTimeout)
			if tt.wantBaseURL != "" {
				p, err := resolveSpec(tt.spec, newSettings(nil))
				require.NoError(t, err)
				require.Equal(t, tt.wantBaseURL, p.baseURL)
			}
		})
	}
}

func TestClassifyReasons(t *testing.T) {
	tests := []struct {
		err       error
		status    int
		want      FailureReason
		retryable bool
	}{
		{&TimeoutError{Limit: TimeoutStall, After: time.Second}, 200, ReasonTimeout, true},
		{errors.New("API returned unexpected status code: 429: slow down"), 0, ReasonRateLimited, true},
		{errors.New("API returned unexpected status code: 429: You exceeded your current quota"), 0, ReasonRateLimited, false},
		{errors.New("API returned unexpected status code: 408"), 0, ReasonTimeout, true},
		{errors.New("API returned unexpected status code: 502: bad gateway"), 0, ReasonServerError, true},
		{errors.New("API returned unexpected status code: 501"), 0, ReasonOther, false},
		{errors.New("received error event: overloaded_error"), 0, ReasonServerError, true},
		{errors.New("read tcp: connection reset by peer"), 0, ReasonNetwork, true},
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), 0, ReasonTimeout, true},
		{errors.New("expected exactly one part for role tool, got 2"), 0, ReasonOther, false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			obs := &httpObservation{}
			if tt.status != 0 {
				obs.set(tt.status, http.Header{})
			}
			f := classify(tt.err, obs)
			require.Equal(t, tt.want, f.reason)
			require.Equal(t, tt.retryable, f.retryable)
		})
	}
}
