package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"required,description=The city"`
}

// flakyTool fails its first failures calls with err, then answers.
func flakyTool(name string, failures int, err error, calls *atomic.Int32) tools.Tool {
	return tools.New(name, "Weather of a city.", func(ctx context.Context, a cityArgs) (string, error) {
		if int(calls.Add(1)) <= failures {
			return "", err
		}
		return "sunny in " + a.City, nil
	})
}

func TestWrappedToolsKeepNameDescriptionAndParameters(t *testing.T) {
	var calls atomic.Int32
	inner := flakyTool("weather", 0, nil, &calls)
	w := middleware.WrapTool(inner, middleware.ToolRetry(), middleware.ToolCallLimit(), middleware.ToolErrorText(nil))
	require.Equal(t, inner.Name(), w.Name())
	require.Equal(t, inner.Description(), w.Description())
	require.JSONEq(t, string(inner.Parameters()), string(w.Parameters()))
	u, ok := w.(interface{ Unwrap() tools.Tool })
	require.True(t, ok)
	require.Equal(t, "weather", u.Unwrap().Name())
}

func TestToolRetry(t *testing.T) {
	flaky := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		failures  int
		args      string
		opts      []middleware.RetryOption
		wantCalls int32
		wantErr   bool
	}{
		{"recovers within the attempts", 2, `{"city":"Oslo"}`, nil, 3, false},
		{"gives up after the attempts", 5, `{"city":"Oslo"}`, nil, 3, true},
		{"bad arguments are not retried", 0, `{"town":"Oslo"}`, nil, 0, true},
		{"WithRetryIf decides", 2, `{"city":"Oslo"}`, []middleware.RetryOption{middleware.WithRetryIf(func(error) bool { return false })}, 1, true},
		{"WithMaxAttempts", 4, `{"city":"Oslo"}`, []middleware.RetryOption{middleware.WithMaxAttempts(5)}, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			w := middleware.WrapTool(flakyTool("weather", tc.failures, flaky, &calls), middleware.ToolRetry(append([]middleware.RetryOption{fast}, tc.opts...)...))
			out, err := w.Call(t.Context(), json.RawMessage(tc.args))
			require.Equal(t, tc.wantCalls, calls.Load())
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "sunny in Oslo", out)
		})
	}
}

func TestToolRetryNeverRetriesCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var calls atomic.Int32
	tool := tools.New("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		calls.Add(1)
		cancel()
		return "", errors.New("interrupted")
	})
	_, err := middleware.WrapTool(tool, middleware.ToolRetry(fast)).Call(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int32(1), calls.Load())
}

func TestToolCallLimit(t *testing.T) {
	limited := func(t *testing.T, opts ...middleware.LimitOption) (a, b tools.Tool) {
		var ca, cb atomic.Int32
		ts := middleware.WrapTools([]tools.Tool{flakyTool("a", 0, nil, &ca), flakyTool("b", 0, nil, &cb)}, middleware.ToolCallLimit(opts...))
		return ts[0], ts[1]
	}
	args := json.RawMessage(`{"city":"Oslo"}`)
	t.Run("all tools together", func(t *testing.T) {
		a, b := limited(t, middleware.WithRunLimit(2))
		run := middleware.ContextWithRun(t.Context(), "")
		_, err := a.Call(run, args)
		require.NoError(t, err)
		_, err = b.Call(run, args)
		require.NoError(t, err)
		_, err = a.Call(run, args)
		le, ok := errors.AsType[*middleware.CallLimitError](err)
		require.True(t, ok, "%v", err)
		require.Equal(t, middleware.CallLimitError{Tool: "a", Scope: middleware.ScopeRun, Limit: 2}, *le)
	})
	t.Run("per tool", func(t *testing.T) {
		a, b := limited(t, middleware.WithRunLimit(1), middleware.WithPerTool())
		run := middleware.ContextWithRun(t.Context(), "")
		_, err := a.Call(run, args)
		require.NoError(t, err)
		_, err = b.Call(run, args)
		require.NoError(t, err)
		_, err = b.Call(run, args)
		require.ErrorAs(t, err, new(*middleware.CallLimitError))
	})
	t.Run("message on limit", func(t *testing.T) {
		a, _ := limited(t, middleware.WithThreadLimit(1), middleware.WithMessageOnLimit())
		_, err := a.Call(middleware.ContextWithRun(t.Context(), "t"), args)
		require.NoError(t, err)
		out, err := a.Call(middleware.ContextWithRun(t.Context(), "t"), args)
		require.NoError(t, err)
		require.Contains(t, out, "limit of 1 tool calls per thread")
	})
	t.Run("in a ToolNode the refusal is a message to the model", func(t *testing.T) {
		a, _ := limited(t, middleware.WithRunLimit(1))
		node, err := tools.NewToolNode([]tools.Tool{a})
		require.NoError(t, err)
		msgs, err := node.RunCalls(middleware.ContextWithRun(t.Context(), ""), []llms.ToolCall{
			state.ToolCall("c1", "a", `{"city":"Oslo"}`), state.ToolCall("c2", "a", `{"city":"Rome"}`)})
		require.NoError(t, err)
		outs := []string{msgs[0].Text(), msgs[1].Text()}
		ran, limitedOne := 0, 0
		for _, o := range outs {
			if contains(o, "sunny in") {
				ran++
			}
			if contains(o, "tool call limit reached") {
				limitedOne++
			}
		}
		require.Equal(t, 1, ran, "one call of the two ran: %q", outs)
		require.Equal(t, 1, limitedOne, "one call of the two ran: %q", outs)
	})
}

func TestToolErrorText(t *testing.T) {
	var calls atomic.Int32
	boom := errors.New("disk full")
	w := middleware.WrapTool(flakyTool("write", 1, boom, &calls), middleware.ToolErrorText(nil))
	out, err := w.Call(t.Context(), json.RawMessage(`{"city":"x"}`))
	require.NoError(t, err)
	require.Equal(t, "Error: disk full", out)

	w = middleware.WrapTool(flakyTool("write", 1, boom, &calls), middleware.ToolErrorText(func(tool string, err error) string {
		return fmt.Sprintf("%s failed: %v", tool, err)
	}))
	calls.Store(0)
	out, err = w.Call(t.Context(), json.RawMessage(`{"city":"x"}`))
	require.NoError(t, err)
	require.Equal(t, "write failed: disk full", out)

	// The context's error stays an error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = w.Call(ctx, json.RawMessage(`{"city":"x"}`))
	require.ErrorIs(t, err, context.Canceled)
}

// A tool that asks a human (graph.Interrupt) pauses the run once through
// ToolRetry and ToolErrorText: a pause is neither retried nor turned into
// text.
func TestToolMiddlewareLetsAPauseThrough(t *testing.T) {
	type askState struct {
		Answer state.Value[string]
	}
	for _, tc := range []struct {
		name string
		mw   middleware.ToolMiddleware
	}{
		{"ToolRetry", middleware.ToolRetry(middleware.WithBackoff(time.Millisecond, time.Millisecond), middleware.WithRetryIf(func(error) bool { return true }))},
		{"ToolErrorText", middleware.ToolErrorText(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			ask := middleware.WrapTool(tools.New("ask", "asks a human", func(ctx context.Context, args struct{}) (string, error) {
				calls.Add(1)
				return graph.InterruptAs[string](ctx, "approve?")
			}), tc.mw)
			b := graph.New[askState]()
			b.AddNode("n", func(ctx context.Context, s askState) (askState, error) {
				out, err := ask.Call(ctx, json.RawMessage(`{}`))
				if err != nil {
					return s, err
				}
				s.Answer.Set(out)
				return s, nil
			})
			b.AddEdge(graph.Start, "n")
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), askState{}, graph.WithThread("t"))
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			require.Len(t, intr.Interrupts, 1, "asked once")
			require.Equal(t, int32(1), calls.Load())
			out, err := g.Resume(t.Context(), graph.Command[askState]{Resume: "yes"}, graph.WithThread("t"))
			require.NoError(t, err)
			require.Equal(t, "yes", out.Answer.Get())
		})
	}
}
