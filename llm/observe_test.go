package llm

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/state"
)

// observed is what a CallHooks saw of one call.
type observed struct {
	Name, Provider, Model string
	Temperature           float64
	Messages              int
	Text                  string
	Err                   string
}

// recorder is a CallHooks recording what it sees.
type recorder struct {
	mu    sync.Mutex
	calls []observed
}

func (r *recorder) hooks() CallHooks {
	return CallHooks{End: func(ctx context.Context, call CallInfo, resp *Response, err error) {
		o := observed{Name: call.Name, Provider: call.Provider, Model: call.Model, Messages: len(call.Messages)}
		if call.Options.Temperature != nil {
			o.Temperature = *call.Options.Temperature
		}
		if resp != nil {
			o.Text = resp.Message.Text()
		}
		if err != nil {
			o.Err = err.Error()
		}
		r.mu.Lock()
		r.calls = append(r.calls, o)
		r.mu.Unlock()
	}}
}

func (r *recorder) get() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observed(nil), r.calls...)
}

// The models of this package report every call to the hooks of the
// context, naming the provider and the model requested.
func TestCallHooksSeeEveryModelOfThePackage(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, hit int, body []byte) {
		writeJSON(w, http.StatusOK, `{"id":"c","object":"chat.completion","created":1,"model":"m",
  "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}],
  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	})
	newModel := func(t *testing.T, spec string) Model {
		m, err := New(t.Context(), spec, WithBaseURL(fs.URL+"/v1"), WithAPIKey("sk-test"))
		require.NoError(t, err)
		return m
	}
	tests := []struct {
		name  string
		model func(t *testing.T) Model
		want  observed
	}{
		{name: "New openai", model: func(t *testing.T) Model { return newModel(t, "openai:gpt-test") },
			want: observed{Name: "openai:gpt-test", Provider: "openai", Model: "gpt-test"}},
		{name: "New openai-compatible", model: func(t *testing.T) Model { return newModel(t, "openai-compatible:local-1@"+fs.URL+"/v1") },
			want: observed{Name: "openai-compatible:local-1@" + fs.URL + "/v1", Provider: "openai-compatible", Model: "local-1"}},
		{name: "New gemini alias", model: func(t *testing.T) Model { return newModel(t, "gemini:gemini-test") },
			want: observed{Name: "gemini:gemini-test", Provider: "googleai", Model: "gemini-test"}},
		{name: "FromLangchain with a spec-like name", model: func(t *testing.T) Model {
			return FromLangchain(newRawOpenAI(t, fs.URL+"/v1"), "ollama:qwen3:32b")
		}, want: observed{Name: "ollama:qwen3:32b", Provider: "ollama", Model: "qwen3:32b"}},
		{name: "FromLangchain with a plain name", model: func(t *testing.T) Model {
			return FromLangchain(newRawOpenAI(t, fs.URL+"/v1"), "house-model")
		}, want: observed{Name: "house-model", Provider: "openai", Model: "house-model"}},
		{name: "Scripted", model: func(t *testing.T) Model { return NewScripted(Reply{Text: "hello"}) },
			want: observed{Name: "scripted", Provider: "scripted", Model: "scripted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			ctx := ContextWithCallHooks(t.Context(), rec.hooks())
			_, err := tt.model(t).Generate(ctx, []state.Message{state.Human("hi")}, WithTemperature(0.5))
			require.NoError(t, err)
			want := tt.want
			want.Temperature, want.Messages, want.Text = 0.5, 1, "hello"
			require.Empty(t, cmp.Diff([]observed{want}, rec.get()))
		})
	}
}

func TestCallHooksSeeFailedCalls(t *testing.T) {
	var rec recorder
	ctx := ContextWithCallHooks(t.Context(), rec.hooks())
	_, err := NewScripted(Reply{Err: errors.New("down")}).Generate(ctx, nil)
	require.EqualError(t, err, "down")
	require.Equal(t, []observed{{Name: "scripted", Provider: "scripted", Model: "scripted", Err: "down"}}, rec.get())
}

type hookKey struct{}

// Hooks accumulate: Starts run outermost first, each on the context the
// previous one returned; Ends run in reverse, each with its own Start's
// context; the model runs with the innermost context.
func TestCallHooksNestInOrder(t *testing.T) {
	var order []string
	hook := func(name string) CallHooks {
		return CallHooks{
			Start: func(ctx context.Context, call CallInfo) context.Context {
				prev, _ := ctx.Value(hookKey{}).(string)
				order = append(order, "start "+name+" after "+prev)
				return context.WithValue(ctx, hookKey{}, name)
			},
			End: func(ctx context.Context, call CallInfo, resp *Response, err error) {
				order = append(order, "end "+name+" with "+ctx.Value(hookKey{}).(string))
			},
		}
	}
	ctx := ContextWithCallHooks(t.Context(), hook("outer"))
	ctx = ContextWithCallHooks(ctx, CallHooks{})
	ctx = ContextWithCallHooks(ctx, hook("inner"))
	_, err := NewScripted(Reply{Text: "ok", Expect: func([]state.Message) error {
		order = append(order, "model")
		return nil
	}}).Generate(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		"start outer after ",
		"start inner after outer",
		"model",
		"end inner with inner",
		"end outer with outer",
	}, order)
}

func TestObserveCallWithoutHooksKeepsTheContext(t *testing.T) {
	ctx := context.WithValue(t.Context(), hookKey{}, "mine")
	got, done := ObserveCall(ctx, CallInfo{Name: "x"})
	require.Equal(t, ctx, got)
	done(nil, nil)
}
