package coder_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/tmc/langchaingo/llms"
)

// coderServer is an OpenAI-compatible chat-completions server playing the
// coder's model: it classifies with the choose_intent tool, fixes Sum with
// file_patch, and answers questions saying whether it was shown Sum's
// source.
type coderServer struct {
	*httptest.Server
	mu      sync.Mutex
	systems []string
}

func newCoderServer(t *testing.T) *coderServer {
	t.Helper()
	s := &coderServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *coderServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	system := body.Messages[0].Content
	s.mu.Lock()
	s.systems = append(s.systems, system)
	s.mu.Unlock()
	var tools []string
	for _, t := range body.Tools {
		tools = append(tools, t.Function.Name)
	}
	call := func(name string, args any) llm.Reply {
		b, _ := json.Marshal(args)
		return llm.Reply{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: name, Arguments: string(b)}}}}
	}
	var reply llm.Reply
	switch {
	case strings.Join(tools, ",") == "choose_intent":
		reply = call("choose_intent", map[string]string{"intent": "edit"})
	case strings.Join(tools, ",") == "file_patch,file_write":
		reply = call("file_patch", map[string]string{"path": "calc.go",
			"old_text": "for i := 1; i < len(xs); i++", "new_text": "for i := 0; i < len(xs); i++"})
	case strings.HasPrefix(system, "You are a coding assistant answering"):
		reply = llm.Reply{Text: fmt.Sprintf("Sum adds xs (source shown: %v).",
			strings.Contains(system, "func Sum(xs []int) int"))}
	default:
		http.Error(w, "unknown role", http.StatusBadRequest)
		return
	}
	openaitest.WriteReply(w, map[string]any{"stream": body.Stream}, "c", reply)
}

func TestFullRunOverAnOpenAICompatibleServer(t *testing.T) {
	srv := newCoderServer(t)
	model, err := llm.New(t.Context(), "openai-compatible:test-model@"+srv.URL+"/v1", llm.WithMaxAttempts(1))
	require.NoError(t, err)
	dir := goSample(t)
	a := newAgent(t, model, dir, coder.WithModelName("test-model"))

	// No pattern is confident: the model classifies (a tool call), then
	// edits (another), and the tests pass.
	res, err := a.Ask(t.Context(), "t1", "Sum is off by one somewhere")
	require.NoError(t, err)
	require.Equal(t, coder.Decision{Intent: coder.IntentEdit, Confidence: 1, Source: coder.SourceModel,
		Reason: "the model classified the request as edit"}, res.Route)
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, res.Answer)
	require.Equal(t, 1, res.Attempts)
	require.Contains(t, readFile(t, dir, "calc.go"), "for i := 0; i < len(xs); i++")

	// A question on the same thread: the pattern routes it, the answer
	// comes from the model over the fixed source.
	res, err = a.Ask(t.Context(), "t1", "what does Sum do?")
	require.NoError(t, err)
	require.Equal(t, coder.SourcePattern, res.Route.Source)
	require.Equal(t, "Sum adds xs (source shown: true).", res.Answer)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.systems, 3)
}

func TestAModelDownForAllItsAttemptsIsNotCalledAgainByANodeRerun(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	model, err := llm.New(t.Context(), "openai-compatible:test-model@"+srv.URL+"/v1",
		llm.WithMaxAttempts(3), llm.WithBackoff(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	a := newAgent(t, model, goSample(t))
	res, err := a.Ask(t.Context(), "t1", "what does Sum do in calc.go?")
	require.NoError(t, err, "the request ends with an answer saying what failed")
	require.Equal(t, coder.OutcomeError, res.Outcome)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 3, hits, "the model's own attempts, and no node rerun on top of them")
}
