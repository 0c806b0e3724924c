package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
)

// fakeServer is an httptest server that records every request and lets the
// test answer each one, knowing how many came before.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// handlerFunc answers the hit-th request (from 1).
type handlerFunc func(w http.ResponseWriter, r *http.Request, hit int, body []byte)

func newFakeServer(t *testing.T, h handlerFunc) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fs.mu.Lock()
		fs.requests = append(fs.requests, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		hit := len(fs.requests)
		fs.mu.Unlock()
		h(w, r, hit, body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) hits() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.requests)
}

func (fs *fakeServer) request(i int) recorded {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.requests[i]
}

// jsonBody decodes the i-th request body into a generic value.
func (fs *fakeServer) jsonBody(t *testing.T, i int) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(fs.request(i).Body, &v))
	return v
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// writeSSE writes OpenAI-style "data:" events, then [DONE].
func writeSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		fl.Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}

// writeAnthropicSSE writes Anthropic-style named events.
func writeAnthropicSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, ev := range events {
		var t struct{ Type string }
		_ = json.Unmarshal([]byte(ev), &t)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", t.Type, ev)
		fl.Flush()
	}
}

// delayRecorder replaces the sleep between attempts: it records the delays
// and returns at once, so retry tests take no wall time.
type delayRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (d *delayRecorder) option() Option {
	return func(s *settings) {
		s.customSleep = true
		s.sleep = func(ctx context.Context, delay time.Duration) error {
			d.mu.Lock()
			d.delays = append(d.delays, delay)
			d.mu.Unlock()
			return ctx.Err()
		}
	}
}

func (d *delayRecorder) get() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.delays...)
}

// weatherTool is a tool definition used across tests.
var weatherTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "get_weather",
	Description: "Weather for a city",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
}}

// tokenCollector is a token sink that records what it receives.
type tokenCollector struct {
	mu     sync.Mutex
	tokens []string
}

func (c *tokenCollector) sink(_ context.Context, tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, tok)
}

func (c *tokenCollector) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

// openAIModel builds an "openai:" model against fs through New.
func openAIModel(t *testing.T, fs *fakeServer, opts ...Option) Model {
	t.Helper()
	m, err := New(context.Background(), "openai:gpt-test",
		append([]Option{WithBaseURL(fs.URL + "/v1"), WithAPIKey("sk-test")}, opts...)...)
	require.NoError(t, err)
	return m
}

// anthropicModel builds an "anthropic:" model against fs through New.
func anthropicModel(t *testing.T, fs *fakeServer, opts ...Option) Model {
	t.Helper()
	m, err := New(context.Background(), "anthropic:claude-test",
		append([]Option{WithBaseURL(fs.URL), WithAPIKey("ak-test")}, opts...)...)
	require.NoError(t, err)
	return m
}

// newRawOpenAI builds a langchaingo openai client the way a user would,
// without WrapTransport.
func newRawOpenAI(t *testing.T, baseURL string) llms.Model {
	t.Helper()
	m, err := openai.New(openai.WithBaseURL(baseURL), openai.WithToken("sk-raw"), openai.WithModel("gpt-raw"))
	require.NoError(t, err)
	return m
}

// newRawAnthropic builds a langchaingo anthropic client without
// WrapTransport.
func newRawAnthropic(t *testing.T, baseURL string) llms.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.WithBaseURL(baseURL+"/v1"), anthropic.WithToken("ak-raw"), anthropic.WithModel("claude-raw"))
	require.NoError(t, err)
	return m
}
