package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

const openAIOK = `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],
 "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

const anthropicOK = `{"id":"m","type":"message","role":"assistant","model":"claude-test","stop_reason":"end_turn",
 "content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}`

// failure describes how the fake server answers one hit.
type answer struct {
	status     int
	retryAfter string // Retry-After header
	message    string // error message in the provider's JSON error body
}

// providerCase builds a model of one provider against a fake server.
type providerCase struct {
	name  string
	ok    string
	model func(t *testing.T, fs *fakeServer, opts ...Option) Model
}

var retryProviders = []providerCase{
	{"openai", openAIOK, openAIModel},
	{"anthropic", anthropicOK, anthropicModel},
	{"openai without WrapTransport", openAIOK, func(t *testing.T, fs *fakeServer, opts ...Option) Model {
		return FromLangchain(newRawOpenAI(t, fs.URL+"/v1"), "raw-openai", opts...)
	}},
	{"anthropic without WrapTransport", anthropicOK, func(t *testing.T, fs *fakeServer, opts ...Option) Model {
		return FromLangchain(newRawAnthropic(t, fs.URL), "raw-anthropic", opts...)
	}},
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name    string
		answers []answer // answers before success; a hit beyond them succeeds
		// wantHits is the number of requests the server must see.
		wantHits int
		// wantErrStatus is the status of the returned *Error; 0 means success.
		wantErrStatus int
		// wantDelays, when set, are the exact delays between attempts when
		// the transport sees headers; headerless clients fall back to backoff.
		wantDelays []time.Duration
		// wantRetryable is Error.Retryable for failing cases.
		wantRetryable bool
	}{
		{
			name:       "429 with Retry-After, then success",
			answers:    []answer{{status: 429, retryAfter: "7", message: "Rate limit reached"}},
			wantHits:   2,
			wantDelays: []time.Duration{7 * time.Second},
		},
		{
			name:     "500 twice, then success",
			answers:  []answer{{status: 500, message: "boom"}, {status: 500, message: "boom"}},
			wantHits: 3,
		},
		{
			name:     "503 and 529 overloaded, then success",
			answers:  []answer{{status: 503, message: "unavailable"}, {status: 529, message: "Overloaded"}},
			wantHits: 3,
		},
		{
			name:          "400 is not retried",
			answers:       []answer{{status: 400, message: "bad request"}},
			wantHits:      1,
			wantErrStatus: 400,
		},
		{
			name:          "401 is not retried",
			answers:       []answer{{status: 401, message: "invalid key"}},
			wantHits:      1,
			wantErrStatus: 401,
		},
		{
			name:          "429 for an exhausted quota is not retried",
			answers:       []answer{{status: 429, message: "You exceeded your current quota"}},
			wantHits:      1,
			wantErrStatus: 429,
		},
		{
			name: "500 on every attempt exhausts the attempts",
			answers: []answer{{status: 500, message: "boom"}, {status: 500, message: "boom"},
				{status: 500, message: "boom"}, {status: 500, message: "boom"}},
			wantHits:      3,
			wantErrStatus: 500,
			wantRetryable: true,
		},
	}
	for _, p := range retryProviders {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
					if hit > len(tt.answers) {
						writeJSON(w, http.StatusOK, p.ok)
						return
					}
					a := tt.answers[hit-1]
					if a.retryAfter != "" {
						w.Header().Set("Retry-After", a.retryAfter)
					}
					writeJSON(w, a.status, fmt.Sprintf(`{"type":"error","error":{"type":"x","message":%q}}`, a.message))
				})
				var rec delayRecorder
				var infos []RetryInfo
				m := p.model(t, fs, rec.option(), WithMaxAttempts(3), WithBackoff(10*time.Millisecond, time.Second),
					WithOnRetry(func(_ context.Context, info RetryInfo) { infos = append(infos, info) }))

				resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
				require.Equal(t, tt.wantHits, fs.hits(), "server hits")
				if tt.wantErrStatus == 0 {
					require.NoError(t, err)
					require.Equal(t, "ok", resp.Message.Text())
					require.Equal(t, tt.wantHits, resp.Attempts)
				} else {
					llmErr, ok := errors.AsType[*Error](err)
					require.True(t, ok, "want *llm.Error, got %T: %v", err, err)
					require.Equal(t, tt.wantErrStatus, llmErr.StatusCode)
					require.Equal(t, tt.wantHits, llmErr.Attempts)
					require.Equal(t, tt.wantRetryable, llmErr.Retryable)
				}

				delays := rec.get()
				require.Len(t, delays, tt.wantHits-1)
				require.Len(t, infos, tt.wantHits-1)
				for i, info := range infos {
					require.Equal(t, i+1, info.Attempt)
					require.Equal(t, delays[i], info.Delay)
					require.Equal(t, tt.answers[i].status, info.StatusCode, "status seen by attempt %d", i+1)
				}
				headersVisible := p.name == "openai" || p.name == "anthropic" // built by New
				if tt.wantDelays != nil && headersVisible {
					require.Equal(t, tt.wantDelays, delays, "Retry-After honoured")
					return
				}
				for i, d := range delays {
					// Backoff with equal jitter: between half and all of 10ms·2^i.
					full := 10 * time.Millisecond << i
					require.GreaterOrEqual(t, d, full/2, "delay %d", i)
					require.LessOrEqual(t, d, full, "delay %d", i)
				}
			})
		}
	}
}

func TestRetryAfterLongerThanMaxIsNotWaited(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		w.Header().Set("Retry-After", "3600")
		writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached"}}`)
	})
	var rec delayRecorder
	m := openAIModel(t, fs, rec.option(), WithMaxRetryAfter(time.Minute))
	_, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
	llmErr, ok := errors.AsType[*Error](err)
	require.True(t, ok, "%T %v", err, err)
	require.Equal(t, 1, fs.hits())
	require.Equal(t, 429, llmErr.StatusCode)
	require.Equal(t, time.Hour, llmErr.RetryAfter)
	require.True(t, llmErr.Retryable)
	require.Empty(t, rec.get())
}

func TestRetryAfterFromHeadersAndText(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		text   string
		want   time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"2"}}, "", 2 * time.Second},
		{"milliseconds header wins", http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"150"}}, "", 150 * time.Millisecond},
		{"http date in the past", http.Header{"Retry-After": {"Mon, 02 Jan 2006 15:04:05 GMT"}}, "", 0},
		{"openai text seconds", nil, "Rate limit reached. Please try again in 1.5s. Visit …", 1500 * time.Millisecond},
		{"openai text ms", nil, "Please try again in 20ms.", 20 * time.Millisecond},
		{"retry after minutes", nil, "retry after 2 minutes", 2 * time.Minute},
		{"nothing", nil, "API returned unexpected status code: 429", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &httpObservation{}
			if tt.header != nil {
				obs.set(429, tt.header)
			}
			f := classify(errors.New(tt.text+" status code: 429"), obs)
			require.Equal(t, tt.want, f.retryAfter)
			require.Equal(t, 429, f.status)
		})
	}
}

func TestClassifyWithoutStatus(t *testing.T) {
	tests := []struct {
		err       string
		status    int
		retryable bool
	}{
		{"API returned unexpected status code: 502: bad gateway", 502, true},
		{"googleapi: Error 503: The model is overloaded.", 503, true},
		{"anthropic: failed to create message: API returned unexpected status code: 404: model not found", 404, false},
		{"request timeout: network operation exceeded timeout", 0, true},
		{"network error: failed to reach API server", 0, true},
		{"failed to process stream event: received error event: overloaded_error", 0, true},
		{"expected exactly one part for role tool, got 2", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.err, func(t *testing.T) {
			f := classify(errors.New(tt.err), nil)
			require.Equal(t, tt.status, f.status)
			require.Equal(t, tt.retryable, f.retryable)
		})
	}
}

// Cancellation mid-request surfaces as the context's error (langchaingo's
// openai client rewrites it to plain text) and is never retried.
func TestCancellation(t *testing.T) {
	boom := errors.New("user pressed stop")
	tests := []struct {
		name      string
		provider  string
		stream    bool
		newCtx    func() (context.Context, func())
		wantIs    []error
		wantCause error
	}{
		{name: "openai cancel", provider: "openai",
			newCtx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(context.Background())
				return ctx, cancel
			}, wantIs: []error{context.Canceled}},
		{name: "openai streaming cancel", provider: "openai", stream: true,
			newCtx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(context.Background())
				return ctx, cancel
			}, wantIs: []error{context.Canceled}},
		{name: "anthropic cancel", provider: "anthropic",
			newCtx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancel(context.Background())
				return ctx, cancel
			}, wantIs: []error{context.Canceled}},
		{name: "openai cancel with cause", provider: "openai",
			newCtx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancelCause(context.Background())
				return ctx, func() { cancel(boom) }
			}, wantIs: []error{context.Canceled, boom}},
		{name: "anthropic streaming cancel with cause", provider: "anthropic", stream: true,
			newCtx: func() (context.Context, func()) {
				ctx, cancel := context.WithCancelCause(context.Background())
				return ctx, func() { cancel(boom) }
			}, wantIs: []error{context.Canceled, boom}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
				}
				arrived <- struct{}{}
				<-r.Context().Done() // hold the request until the client gives up
			})
			var m Model
			if tt.provider == "openai" {
				m = openAIModel(t, fs)
			} else {
				m = anthropicModel(t, fs)
			}
			ctx, cancel := tt.newCtx()
			go func() {
				<-arrived
				cancel()
			}()
			var opts []CallOption
			if tt.stream {
				opts = append(opts, WithTokenSink(func(context.Context, string) {}))
			}
			_, err := m.Generate(ctx, []state.Message{state.Human("hi")}, opts...)
			require.Error(t, err)
			for _, target := range tt.wantIs {
				require.ErrorIs(t, err, target)
			}
			require.Equal(t, 1, fs.hits(), "cancellation is not retried")
		})
	}
}

func TestDeadlineExceeded(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		<-r.Context().Done()
	})
	m := openAIModel(t, fs)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := m.Generate(ctx, []state.Message{state.Human("hi")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, fs.hits())
}

// Cancelling while waiting between attempts stops at once.
func TestCancelDuringBackoff(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusInternalServerError, `{"error":{"message":"boom"}}`)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A one-hour backoff: the test only finishes because the hook cancels.
	m := openAIModel(t, fs, WithBackoff(time.Hour, time.Hour),
		WithOnRetry(func(context.Context, RetryInfo) { cancel() }))
	_, err := m.Generate(ctx, []state.Message{state.Human("hi")})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "500", "the provider's error is kept in the message")
	require.Equal(t, 1, fs.hits())
}

// An attempt that exceeds WithAttemptTimeout is retried; the caller's
// context is fine.
func TestAttemptTimeoutIsRetried(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		if hit == 1 {
			<-r.Context().Done()
			return
		}
		writeJSON(w, http.StatusOK, openAIOK)
	})
	var rec delayRecorder
	m := openAIModel(t, fs, rec.option(), WithAttemptTimeout(300*time.Millisecond))
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
	require.NoError(t, err)
	require.Equal(t, 2, resp.Attempts)
	require.Equal(t, 2, fs.hits())
}

func TestAttemptTimeouts(t *testing.T) {
	const text = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
	tests := []struct {
		name     string
		stream   bool
		wantHits int
	}{
		{"every attempt times out", false, 2},
		{"timeout after streamed text is not retried", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, text)
					w.(http.Flusher).Flush()
				}
				<-r.Context().Done()
			})
			var rec delayRecorder
			m := openAIModel(t, fs, rec.option(), WithMaxAttempts(2), WithAttemptTimeout(100*time.Millisecond))
			var opts []CallOption
			if tt.stream {
				opts = append(opts, WithTokenSink(func(context.Context, string) {}))
			}
			_, err := m.Generate(context.Background(), []state.Message{state.Human("hi")}, opts...)
			require.ErrorIs(t, err, ErrTimeout)
			terr, ok := errors.AsType[*TimeoutError](err)
			require.True(t, ok)
			require.Equal(t, TimeoutAttempt, terr.Limit)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "reserved for the caller's context")
			llmErr, ok := errors.AsType[*Error](err)
			require.True(t, ok)
			require.True(t, llmErr.Retryable)
			require.Equal(t, tt.wantHits, fs.hits())
		})
	}
}

// Once text has reached the token sink, a failure is not retried: the
// tokens cannot be taken back.
func TestNoRetryAfterStreamedTokens(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		// Then the connection dies mid-stream.
		hj, ok := w.(http.Hijacker)
		require.True(t, ok)
		conn, _, err := hj.Hijack()
		require.NoError(t, err)
		conn.Close()
	})
	var rec delayRecorder
	m := openAIModel(t, fs, rec.option())
	var toks tokenCollector
	_, err := m.Generate(context.Background(), []state.Message{state.Human("hi")}, WithTokenSink(toks.sink))
	require.Equal(t, []string{"Hel"}, toks.get())
	llmErr, ok := errors.AsType[*Error](err)
	require.True(t, ok, "%T %v", err, err)
	require.True(t, llmErr.Retryable, "a cut stream is a retryable failure…")
	require.Equal(t, 1, fs.hits(), "…but not once tokens were streamed")
	require.Empty(t, rec.get())
}

// A connection dropped before any answer is a network error: retried.
func TestDroppedConnectionIsRetried(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		if hit == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			conn.Close()
			return
		}
		writeJSON(w, http.StatusOK, openAIOK)
	})
	var rec delayRecorder
	m := openAIModel(t, fs, rec.option())
	resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
	require.NoError(t, err)
	require.Equal(t, 2, resp.Attempts)
	require.Len(t, rec.get(), 1)
}
