package llm

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

func TestNewMissingKeyNamesEnvVar(t *testing.T) {
	for _, env := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"} {
		t.Setenv(env, "")
	}
	tests := []struct {
		spec string
		want []string
	}{
		{"openai:gpt-4o-mini", []string{"OPENAI_API_KEY"}},
		{"anthropic:claude-sonnet-4-5", []string{"ANTHROPIC_API_KEY"}},
		{"googleai:gemini-2.5-flash", []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := New(context.Background(), tt.spec)
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.Contains(t, err.Error(), tt.spec)
		})
	}
}

func TestNewBadSpecs(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"gpt-4o", `want "provider:model"`},
		{"openai:", `want "provider:model"`},
		{"mystery:model", `unknown provider "mystery"`},
		{"openai-compatible:qwen", "needs a base URL"},
		{"ollama:@http://x", "empty model name"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := New(context.Background(), tt.spec, WithAPIKey("k"))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Each spec reaches the right URL with the right credentials.
func TestNewEndpoints(t *testing.T) {
	type seen struct{ path, auth, apiKey string }
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		if strings.HasSuffix(r.URL.Path, "/messages") {
			writeJSON(w, http.StatusOK, anthropicOK)
			return
		}
		writeJSON(w, http.StatusOK, openAIOK)
	})
	hostPort := strings.TrimPrefix(fs.URL, "http://")
	tests := []struct {
		name string
		spec string
		env  map[string]string
		opts []Option
		want seen
	}{
		{name: "openai from env", spec: "openai:gpt-4o-mini",
			env:  map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": fs.URL + "/v1"},
			want: seen{path: "/v1/chat/completions", auth: "Bearer sk-env"}},
		{name: "anthropic from env, /v1 appended", spec: "anthropic:claude-sonnet-4-5",
			env:  map[string]string{"ANTHROPIC_API_KEY": "ak-env", "ANTHROPIC_BASE_URL": fs.URL},
			want: seen{path: "/v1/messages", apiKey: "ak-env"}},
		{name: "ollama from OLLAMA_HOST host:port", spec: "ollama:llama3.1",
			env:  map[string]string{"OLLAMA_HOST": hostPort},
			want: seen{path: "/v1/chat/completions", auth: "Bearer ollama"}},
		{name: "openai-compatible in the spec does not leak OPENAI_API_KEY", spec: "openai-compatible:qwen3@" + fs.URL + "/v1",
			env:  map[string]string{"OPENAI_API_KEY": "sk-secret"},
			want: seen{path: "/v1/chat/completions", auth: "Bearer not-needed"}},
		{name: "openai-compatible with options", spec: "openai-compatible:qwen3",
			opts: []Option{WithBaseURL(fs.URL + "/custom/v1"), WithAPIKey("vllm-key")},
			want: seen{path: "/custom/v1/chat/completions", auth: "Bearer vllm-key"}},
		{name: "googleai key from GOOGLE_API_KEY", spec: "googleai:gemini-2.5-flash@" + fs.URL + "/v1beta/openai",
			env:  map[string]string{"GOOGLE_API_KEY": "g-env", "GEMINI_API_KEY": "ignored"},
			want: seen{path: "/v1beta/openai/chat/completions", auth: "Bearer g-env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			before := fs.hits()
			m, err := New(context.Background(), tt.spec, tt.opts...)
			require.NoError(t, err)
			resp, err := m.Generate(context.Background(), []state.Message{state.Human("hi")})
			require.NoError(t, err)
			require.Equal(t, "ok", resp.Message.Text())
			require.Equal(t, before+1, fs.hits())
			req := fs.request(before)
			require.Equal(t, tt.want, seen{path: req.Path, auth: req.Header.Get("Authorization"), apiKey: req.Header.Get("X-Api-Key")})
		})
	}
}

func TestNewCachesClients(t *testing.T) {
	ctx := context.Background()
	opts := []Option{WithAPIKey("k"), WithBaseURL("http://127.0.0.1:1/v1")}
	a, err := New(ctx, "openai:gpt-cache", opts...)
	require.NoError(t, err)

	// Concurrent lookups all get the same model.
	var wg sync.WaitGroup
	got := make([]Model, 16)
	for i := range got {
		wg.Go(func() {
			m, err := New(ctx, "openai:gpt-cache", opts...)
			require.NoError(t, err)
			got[i] = m
		})
	}
	wg.Wait()
	for _, m := range got {
		require.Same(t, a.(*adapter), m.(*adapter))
	}

	// Different retry settings: another Model, same langchaingo client.
	b, err := New(ctx, "openai:gpt-cache", append(opts, WithMaxAttempts(1))...)
	require.NoError(t, err)
	require.NotSame(t, a.(*adapter), b.(*adapter))
	la, _ := Unwrap(a)
	lb, _ := Unwrap(b)
	require.Same(t, la, lb)

	// Another model, key or URL: another client.
	for _, other := range [][]Option{
		{WithAPIKey("k2"), WithBaseURL("http://127.0.0.1:1/v1")},
		{WithAPIKey("k"), WithBaseURL("http://127.0.0.1:2/v1")},
	} {
		c, err := New(ctx, "openai:gpt-cache", other...)
		require.NoError(t, err)
		lc, _ := Unwrap(c)
		require.NotSame(t, la, lc)
	}
	d, err := New(ctx, "openai:gpt-other", opts...)
	require.NoError(t, err)
	ld, _ := Unwrap(d)
	require.NotSame(t, la, ld)
}

func TestOllamaHost(t *testing.T) {
	tests := []struct{ env, want string }{
		{"", "http://127.0.0.1:11434"},
		{"0.0.0.0", "http://0.0.0.0:11434"},
		{"gpu-box", "http://gpu-box:11434"},
		{"gpu-box:9999", "http://gpu-box:9999"},
		{"http://gpu-box", "http://gpu-box:80"},
		{"https://ollama.example.com/proxy/", "https://ollama.example.com:443/proxy"},
		{"[::1]:11434", "http://[::1]:11434"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			require.Equal(t, tt.want, ollamaHost(tt.env))
		})
	}
}
