package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// openAIServer is an httptest server speaking OpenAI's chat-completions
// wire format: the i-th request (from 0) is answered by answer(i).
type openAIServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

// reply is how the server answers one request: a status and, for 200, the
// text of the assistant's message.
type reply struct {
	status     int
	text       string
	retryAfter string // a Retry-After header
}

func newOpenAIServer(t *testing.T, replies ...reply) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		i := len(s.bodies) - 1
		s.mu.Unlock()
		rp := reply{status: http.StatusInternalServerError, text: "no reply scripted"}
		if i < len(replies) {
			rp = replies[i]
		}
		w.Header().Set("Content-Type", "application/json")
		if rp.retryAfter != "" {
			w.Header().Set("Retry-After", rp.retryAfter)
		}
		if rp.status != http.StatusOK {
			w.WriteHeader(rp.status)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"test","code":null}}`, fmt.Sprintf("scripted status %d", rp.status))
			return
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"gpt-test",
  "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}],
  "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, i, rp.text)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *openAIServer) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// model returns an "openai:gpt-test" model of llm.New against s that does
// not retry by itself, so that the middleware's retries are the only ones.
func (s *openAIServer) model(t *testing.T) llm.Model {
	t.Helper()
	m, err := llm.New(t.Context(), "openai:gpt-test",
		llm.WithBaseURL(s.URL+"/v1"), llm.WithAPIKey("sk-test"), llm.WithMaxAttempts(1))
	require.NoError(t, err)
	return m
}

// fast are retry options that do not make tests wait.
var fast = middleware.WithBackoff(time.Millisecond, 2*time.Millisecond)

func texts(msgs []state.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
		for _, c := range m.ToolCalls() {
			out[i] += "+call " + c.ID
		}
	}
	return out
}

func human(n int) []state.Message {
	var out []state.Message
	for i := range n {
		out = append(out, state.Human(fmt.Sprintf("h%d", i+1)))
	}
	return out
}

// recorder is a middleware that appends "name>" and "<name" around the
// calls it wraps to a shared log.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) model(name string) middleware.ModelMiddleware {
	return func(m llm.Model) llm.Model {
		return modelFunc(func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			r.add(name + ">")
			resp, err := m.Generate(ctx, msgs, opts...)
			r.add("<" + name)
			return resp, err
		})
	}
}

// modelFunc is a model made of a function, for middleware written in
// tests.
type modelFunc func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error)

func (f modelFunc) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	return f(ctx, msgs, opts...)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
