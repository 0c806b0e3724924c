package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms/openai"
)

// embedServer is an httptest server that records the requests it gets and
// answers each with answer(hit, body), hit counting from 1.
type embedServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []embedRequest
}

type embedRequest struct {
	Method, Path, Auth string
	Body               map[string]any
}

func newEmbedServer(t *testing.T, answer func(w http.ResponseWriter, hit int, body map[string]any)) *embedServer {
	t.Helper()
	s := &embedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.reqs = append(s.reqs, embedRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		hit := len(s.reqs)
		s.mu.Unlock()
		answer(w, hit, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *embedServer) requests() []embedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]embedRequest(nil), s.reqs...)
}

// fakeVec is the vector the fake servers return for a text: its length and
// the code of its first byte, so that a test can tell which vector belongs
// to which text.
func fakeVec(text string) []float32 {
	var first float32
	if text != "" {
		first = float32(text[0])
	}
	return []float32{float32(len(text)), first}
}

// openAIEmbeddings answers like POST /v1/embeddings, one vector per input.
func openAIEmbeddings(w http.ResponseWriter, _ int, body map[string]any) {
	type datum struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	var data []datum
	inputs, _ := body["input"].([]any)
	for i, in := range inputs {
		s, _ := in.(string)
		data = append(data, datum{Object: "embedding", Embedding: fakeVec(s), Index: i})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": body["model"],
		"usage": map[string]int{"prompt_tokens": 3, "total_tokens": 3},
	})
}

// ollamaEmbed answers like Ollama's POST /api/embed with a single input.
func ollamaEmbed(w http.ResponseWriter, _ int, body map[string]any) {
	s, _ := body["input"].(string)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"model": body["model"], "embeddings": [][]float32{fakeVec(s)}})
}

func inputsOf(t *testing.T, r embedRequest) []string {
	t.Helper()
	raw, ok := r.Body["input"].([]any)
	require.True(t, ok, "input is not a list: %#v", r.Body["input"])
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i], ok = v.(string)
		require.True(t, ok, "input[%d] is not a string: %#v", i, v)
	}
	return out
}

func wantVecs(texts ...string) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVec(t)
	}
	return out
}

func TestEmbedderOpenAI(t *testing.T) {
	texts := []string{"alpha", "be\nta", "c", "delta!", "eps"}
	tests := []struct {
		name      string
		batch     int // 0: default
		wantCalls [][]string
	}{
		{"default batch", 0, [][]string{texts}},
		{"batches of 2", 2, [][]string{texts[0:2], texts[2:4], texts[4:5]}},
		{"batch of 1", 1, [][]string{{"alpha"}, {"be\nta"}, {"c"}, {"delta!"}, {"eps"}}},
		{"batch larger than input", 100, [][]string{texts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newEmbedServer(t, openAIEmbeddings)
			opts := []EmbedderOption{WithEmbedBaseURL(srv.URL + "/v1"), WithEmbedAPIKey("sk-test")}
			if tt.batch > 0 {
				opts = append(opts, WithEmbedBatchSize(tt.batch))
			}
			e, err := NewEmbedder("openai:text-embedding-3-small", opts...)
			require.NoError(t, err)
			in := append([]string(nil), texts...)

			got, err := e.Embed(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, wantVecs(texts...), got)
			require.Equal(t, texts, in, "Embed changed the caller's texts")

			reqs := srv.requests()
			require.Len(t, reqs, len(tt.wantCalls))
			for i, r := range reqs {
				require.Equal(t, http.MethodPost, r.Method)
				require.Equal(t, "/v1/embeddings", r.Path)
				require.Equal(t, "Bearer sk-test", r.Auth)
				require.Equal(t, "text-embedding-3-small", r.Body["model"])
				require.NotContains(t, r.Body, "dimensions")
				require.Equal(t, tt.wantCalls[i], inputsOf(t, r), "request %d", i)
			}
		})
	}
}

func TestEmbedderOllama(t *testing.T) {
	srv := newEmbedServer(t, ollamaEmbed)
	texts := []string{"one", "two\nlines", "three"}
	e, err := NewEmbedder("ollama:nomic-embed-text:v1.5", WithEmbedBaseURL(srv.URL), WithEmbedBatchSize(2))
	require.NoError(t, err)

	got, err := e.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Equal(t, wantVecs(texts...), got)

	reqs := srv.requests()
	require.Len(t, reqs, len(texts), "langchaingo's ollama client sends one request per text")
	for i, r := range reqs {
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/api/embed", r.Path)
		require.Equal(t, "nomic-embed-text:v1.5", r.Body["model"])
		require.Equal(t, texts[i], r.Body["input"])
	}
}

func TestEmbedderEnvironment(t *testing.T) {
	oa := newEmbedServer(t, openAIEmbeddings)
	ol := newEmbedServer(t, ollamaEmbed)
	other := newEmbedServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		http.Error(w, "wrong server", http.StatusTeapot)
	})
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", oa.URL+"/v1/")
	t.Setenv("OLLAMA_HOST", ol.URL)

	tests := []struct {
		name, spec string
		opts       []EmbedderOption
		srv        *embedServer
		path, auth string
	}{
		{"openai from env", "openai:m", nil, oa, "/v1/embeddings", "Bearer sk-env"},
		{"option beats env", "openai:m", []EmbedderOption{WithEmbedAPIKey("sk-opt"), WithEmbedBaseURL(oa.URL + "/x")}, oa, "/x/embeddings", "Bearer sk-opt"},
		{"spec URL beats env", "openai:m@" + oa.URL + "/y", nil, oa, "/y/embeddings", "Bearer sk-env"},
		{"compatible does not send OPENAI_API_KEY", "openai-compatible:m@" + oa.URL + "/v1", nil, oa, "/v1/embeddings", "Bearer not-needed"},
		{"ollama from OLLAMA_HOST", "ollama:m", nil, ol, "/api/embed", ""},
		{"ollama spec URL beats env", "ollama:m@" + ol.URL, nil, ol, "/api/embed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tt.srv.requests())
			e, err := NewEmbedder(tt.spec, tt.opts...)
			require.NoError(t, err)
			got, err := e.Embed(context.Background(), []string{"hi"})
			require.NoError(t, err)
			require.Equal(t, wantVecs("hi"), got)
			reqs := tt.srv.requests()
			require.Len(t, reqs, before+1)
			require.Equal(t, tt.path, reqs[before].Path)
			require.Equal(t, tt.auth, reqs[before].Auth)
			require.Equal(t, "m", reqs[before].Body["model"])
		})
	}
	require.Empty(t, other.requests())
}

func TestEmbedderDimensions(t *testing.T) {
	srv := newEmbedServer(t, openAIEmbeddings)
	e, err := NewEmbedder("openai:text-embedding-3-large", WithEmbedAPIKey("k"), WithEmbedBaseURL(srv.URL), WithEmbedDimensions(256))
	require.NoError(t, err)
	_, err = e.Embed(context.Background(), []string{"x"})
	require.NoError(t, err)
	require.Equal(t, float64(256), srv.requests()[0].Body["dimensions"])
}

func TestEmbedderNoTexts(t *testing.T) {
	srv := newEmbedServer(t, openAIEmbeddings)
	e, err := NewEmbedder("openai:m", WithEmbedAPIKey("k"), WithEmbedBaseURL(srv.URL))
	require.NoError(t, err)
	got, err := e.Embed(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, srv.requests())
}

func TestEmbedderErrors(t *testing.T) {
	status := func(code int, body string) func(http.ResponseWriter, int, map[string]any) {
		return func(w http.ResponseWriter, _ int, _ map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		}
	}
	// failSecond answers the first request well and the second with 500.
	failSecond := func(ok func(http.ResponseWriter, int, map[string]any)) func(http.ResponseWriter, int, map[string]any) {
		return func(w http.ResponseWriter, hit int, body map[string]any) {
			if hit == 2 {
				status(http.StatusInternalServerError, `{"error":{"message":"boom"}}`)(w, hit, body)
				return
			}
			ok(w, hit, body)
		}
	}
	tests := []struct {
		name       string
		provider   string // "openai" or "ollama"
		answer     func(http.ResponseWriter, int, map[string]any)
		texts      []string
		wantStatus int
		retryable  bool
		wantText   string
		wantIs     error
		wantCalls  int
	}{
		{"openai 500", "openai", status(500, `{"error":{"message":"server on fire"}}`), []string{"a"}, 500, true, "server on fire", nil, 1},
		{"openai 401", "openai", status(401, `{"error":{"message":"bad key"}}`), []string{"a"}, 401, false, "bad key", nil, 1},
		{"openai 429", "openai", status(429, `{"error":{"message":"slow down"}}`), []string{"a"}, 429, true, "slow down", nil, 1},
		{"openai malformed JSON", "openai", status(200, `{"data":[{"embedding":[1,`), []string{"a"}, 0, true, "decode response", nil, 1},
		{"openai wrong JSON type", "openai", status(200, `{"data":"nope"}`), []string{"a"}, 0, false, "decode response", nil, 1},
		{"openai no data", "openai", status(200, `{"data":[]}`), []string{"a"}, 0, false, "", nil, 1},
		{"openai too few vectors", "openai", status(200, `{"data":[{"embedding":[1],"index":0}]}`), []string{"a", "b"}, 0, false, "", openai.ErrUnexpectedResponseLength, 1},
		{"openai second batch fails", "openai", failSecond(openAIEmbeddings), []string{"a", "b", "c"}, 500, true, "boom", nil, 2},
		{"ollama 500", "ollama", status(500, `{"error":"model crashed"}`), []string{"a"}, 500, true, "model crashed", nil, 1},
		{"ollama 404", "ollama", status(404, `{"error":"model \"m\" not found"}`), []string{"a"}, 404, false, "not found", nil, 1},
		{"ollama malformed JSON", "ollama", status(200, `{"embeddings":[[1,`), []string{"a"}, 0, false, "unexpected end of JSON", nil, 1},
		{"ollama second text fails", "ollama", failSecond(ollamaEmbed), []string{"a", "b"}, 500, true, "boom", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newEmbedServer(t, tt.answer)
			spec := tt.provider + ":m"
			opts := []EmbedderOption{WithEmbedBaseURL(srv.URL + "/v1"), WithEmbedAPIKey("k"), WithEmbedBatchSize(2)}
			if tt.provider == "ollama" {
				opts[0] = WithEmbedBaseURL(srv.URL)
			}
			e, err := NewEmbedder(spec, opts...)
			require.NoError(t, err)

			got, err := e.Embed(context.Background(), tt.texts)
			require.Error(t, err)
			require.Nil(t, got)
			var lerr *Error
			require.ErrorAs(t, err, &lerr)
			require.Equal(t, spec, lerr.Model)
			require.Equal(t, tt.wantStatus, lerr.StatusCode)
			require.Equal(t, tt.retryable, lerr.Retryable)
			require.NotNil(t, lerr.Err, "the provider's error is kept")
			require.Contains(t, err.Error(), "llm: "+spec)
			require.Contains(t, err.Error(), tt.wantText)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			require.Len(t, srv.requests(), tt.wantCalls)
		})
	}
}

func TestEmbedderContext(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	srv := newEmbedServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		arrived <- struct{}{}
		<-release
	})
	t.Cleanup(func() { close(release) })
	e, err := NewEmbedder("openai:m", WithEmbedAPIKey("k"), WithEmbedBaseURL(srv.URL))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Embed(ctx, []string{"a"})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, srv.requests(), "a cancelled context sends nothing")

	ctx, cancelCause := context.WithCancelCause(context.Background())
	cause := errors.New("user pressed ^C")
	go func() {
		<-arrived // the request has reached the server
		cancelCause(cause)
	}()
	_, err = e.Embed(ctx, []string{"a"})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause)
	var lerr *Error
	require.False(t, errors.As(err, &lerr), "cancellation is not a provider error: %v", err)
}

func TestEmbedderCountMismatch(t *testing.T) {
	// Neither langchaingo provider lets a wrong count through, so check
	// the adapter's own guard with a client that does.
	tests := []struct {
		name string
		n    int
	}{{"too few", 1}, {"too many", 3}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &langchainEmbedder{name: "fake:m", impl: fixedEmbedder(make([][]float32, tt.n))}
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			require.ErrorIs(t, err, ErrEmbeddingCount)
			var lerr *Error
			require.ErrorAs(t, err, &lerr)
			require.Contains(t, err.Error(), fmt.Sprintf("%d vectors for 2 texts", tt.n))
		})
	}
}

type fixedEmbedder [][]float32

func (f fixedEmbedder) EmbedDocuments(context.Context, []string) ([][]float32, error) { return f, nil }
func (f fixedEmbedder) EmbedQuery(context.Context, string) ([]float32, error)         { return nil, nil }

func TestNewEmbedderSpecErrors(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	tests := []struct {
		name, spec string
		opts       []EmbedderOption
		want       string
	}{
		{"empty", "", nil, `want "provider:model"`},
		{"no colon", "openai", nil, `want "provider:model"`},
		{"no provider", ":m", nil, `want "provider:model"`},
		{"no model", "ollama:", nil, "empty model name"},
		{"only URL", "ollama:@http://localhost:1", nil, "empty model name"},
		{"unknown provider", "anthropic:claude", nil, `unknown provider "anthropic"`},
		{"openai without key", "openai:m", nil, "set OPENAI_API_KEY"},
		{"compatible without URL", "openai-compatible:m", nil, "needs a base URL"},
		{"bad base URL", "openai:m", []EmbedderOption{WithEmbedAPIKey("k"), WithEmbedBaseURL("localhost:8000")}, "invalid base URL"},
		{"bad ollama URL", "ollama:m", []EmbedderOption{WithEmbedBaseURL("::nope")}, "invalid base URL"},
		{"zero batch", "ollama:m", []EmbedderOption{WithEmbedBatchSize(0)}, "batch size 0"},
		{"negative dimensions", "ollama:m", []EmbedderOption{WithEmbedDimensions(-1)}, "dimensions -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEmbedder(tt.spec, tt.opts...)
			require.Nil(t, e)
			var serr *SpecError
			require.ErrorAs(t, err, &serr)
			require.Equal(t, tt.spec, serr.Spec)
			require.Contains(t, serr.Reason, tt.want)
			require.True(t, strings.HasPrefix(err.Error(), "llm: embedder spec "), err.Error())
		})
	}
}
