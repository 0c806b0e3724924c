package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

func TestModelRetryWaitsWhatTheServerAsks(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 429, retryAfter: "2"}, reply{status: 200, text: "ok"})
	ctx, cancel := context.WithCancel(t.Context())
	var delays []time.Duration
	m := middleware.WrapModel(srv.model(t), middleware.ModelRetry(middleware.WithBackoff(time.Millisecond, time.Minute),
		middleware.WithOnRetry(func(_ context.Context, r middleware.Retry) {
			delays = append(delays, r.Delay)
			cancel() // the delay is what is tested, not the wait
		})))
	_, err := m.Generate(ctx, human(1))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []time.Duration{2 * time.Second}, delays)
}

func TestModelRetryDoesNotWaitLongerThanItsCap(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 429, retryAfter: "3600"}, reply{status: 200, text: "ok"})
	m := middleware.WrapModel(srv.model(t), middleware.ModelRetry(middleware.WithBackoff(time.Millisecond, time.Second)))
	_, err := m.Generate(t.Context(), human(1))
	e, ok := errors.AsType[*llm.Error](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, time.Hour, e.RetryAfter)
	require.Equal(t, 1, srv.hits())
}

func TestWrappingNilGivesErrorsNotPanics(t *testing.T) {
	m := middleware.WrapModel(nil, middleware.ModelRetry(), middleware.Trim(3), middleware.Fallback(nil), middleware.ModelCallLimit())
	_, err := m.Generate(t.Context(), human(1))
	require.ErrorIs(t, err, middleware.ErrNilModel)
	require.Equal(t, "<nil>", m.(fmt.Stringer).String())

	tl := middleware.WrapTool(nil, middleware.ToolRetry(), middleware.ToolCallLimit(), middleware.ToolErrorText(nil))
	require.Empty(t, tl.Name())
	_, err = tl.Call(t.Context(), nil)
	require.ErrorIs(t, err, middleware.ErrNilTool)
	require.Nil(t, middleware.WrapModel(nil), "no middleware: the model as it is")
}

func TestEmptyConversations(t *testing.T) {
	for name, mw := range map[string]middleware.ModelMiddleware{
		"Trim":      middleware.Trim(2),
		"TrimChars": middleware.TrimChars(-5),
		"Summarize": middleware.Summarize(llm.NewScripted(), middleware.WithTriggerMessages(1), middleware.WithTriggerChars(1)),
	} {
		t.Run(name, func(t *testing.T) {
			script := llm.NewScripted(llm.Reply{Text: "a"}, llm.Reply{Text: "b"})
			m := middleware.WrapModel(script, mw)
			_, err := m.Generate(t.Context(), nil)
			require.NoError(t, err)
			require.Empty(t, script.Calls()[0].Messages)
			_, err = m.Generate(t.Context(), []state.Message{state.System("only a system prompt")})
			require.NoError(t, err)
			require.Equal(t, []string{"system:only a system prompt"}, texts(script.Calls()[1].Messages))
		})
	}
}

func TestSummarizeUnderConcurrentCalls(t *testing.T) {
	const callers = 16
	replies := make([]llm.Reply, callers)
	for i := range replies {
		replies[i] = llm.Reply{Text: "S"}
	}
	summarizer := llm.NewScripted(replies...)
	model := llm.NewScripted(replies...)
	m := middleware.WrapModel(model, middleware.Summarize(summarizer, middleware.WithTriggerMessages(3), middleware.WithKeepLast(1)))
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			conv := human(4 + i%3) // three conversations, shared beginnings
			_, errs[i] = m.Generate(t.Context(), conv)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, model.Calls(), callers)
	for _, c := range model.Calls() {
		require.LessOrEqual(t, len(c.Messages), 3, "within the trigger")
		require.Equal(t, "human:"+middleware.SummaryPrefix+"S", texts(c.Messages)[0])
	}
	require.LessOrEqual(t, len(summarizer.Calls()), callers)
}

func TestHandleErrorsWithoutAnswerFailsTheNode(t *testing.T) {
	b := graph.New[coderState]()
	b.Use(middleware.HandleErrors[coderState](nil, nil, nil, middleware.WithNodeAttempts(2)))
	calls := 0
	b.AddNode("edit", func(ctx context.Context, s coderState) (coderState, error) {
		calls++
		return coderState{}, errors.New("nope")
	})
	b.AddEdge(graph.Start, "edit")
	_, err := compile(t, b).Invoke(t.Context(), coderState{})
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "edit", ne.Node)
	require.Equal(t, 2, calls)
}

func TestALimitCountsWhatItWraps(t *testing.T) {
	overloaded := &llm.Error{Model: "m", StatusCode: 503, Retryable: true, Err: errors.New("overloaded")}
	for _, tc := range []struct {
		name      string
		mws       func() []middleware.ModelMiddleware
		wantCalls int
		wantErr   bool
	}{
		{"outside the retry: one call however many attempts", func() []middleware.ModelMiddleware {
			return []middleware.ModelMiddleware{middleware.ModelCallLimit(middleware.WithRunLimit(1)), middleware.ModelRetry(fast)}
		}, 3, false},
		{"inside the retry: every attempt counts", func() []middleware.ModelMiddleware {
			return []middleware.ModelMiddleware{middleware.ModelRetry(fast), middleware.ModelCallLimit(middleware.WithRunLimit(1))}
		}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := llm.NewScripted(llm.Reply{Err: overloaded}, llm.Reply{Err: overloaded}, llm.Reply{Text: "ok"})
			m := middleware.WrapModel(script, tc.mws()...)
			_, err := m.Generate(middleware.ContextWithRun(t.Context(), ""), human(1))
			require.Len(t, script.Calls(), tc.wantCalls)
			if tc.wantErr {
				require.ErrorAs(t, err, new(*middleware.CallLimitError), "the second attempt is refused and not retried")
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestToolRetryDoesNotRetryARefusal(t *testing.T) {
	var calls atomic.Int32
	tl := middleware.WrapTool(flakyTool("a", 0, nil, &calls), middleware.ToolRetry(fast), middleware.ToolCallLimit(middleware.WithRunLimit(0)))
	_, err := tl.Call(middleware.ContextWithRun(t.Context(), ""), []byte(`{"city":"x"}`))
	require.ErrorAs(t, err, new(*middleware.CallLimitError))
	_, err = tl.Call(t.Context(), []byte(`{"city":"x"}`))
	require.ErrorIs(t, err, middleware.ErrNoRun)
	require.Zero(t, calls.Load())
}

func TestSummarizePromptAndTranscript(t *testing.T) {
	summarizer := llm.NewScripted(llm.Reply{Text: "S"})
	model := llm.NewScripted(llm.Reply{Text: "a"})
	m := middleware.WrapModel(model, middleware.Summarize(summarizer,
		middleware.WithSummaryPrompt("PROMPT"), middleware.WithTriggerMessages(3), middleware.WithKeepLast(1)))
	_, err := m.Generate(t.Context(), []state.Message{
		state.Human("q"),
		state.AI("looking", state.ToolCall("c1", "grep", `{"p":"x"}`)),
		state.Tool("c1", "grep", "found"),
		state.AI("done"),
	})
	require.NoError(t, err)
	require.Equal(t, "PROMPT\n\n[human] q\n[ai] looking [calls grep({\"p\":\"x\"})]\n[tool grep] found\n",
		summarizer.Calls()[0].Messages[0].Text())
}

func TestSummarizeForgetsTheOldestSummaries(t *testing.T) {
	const conversations = 65 // one more than the summaries remembered
	replies := make([]llm.Reply, conversations+2)
	for i := range replies {
		replies[i] = llm.Reply{Text: fmt.Sprint("S", i)}
	}
	summarizer := llm.NewScripted(replies...)
	model := llm.NewScripted(replies...)
	m := middleware.WrapModel(model, middleware.Summarize(summarizer, middleware.WithTriggerMessages(1), middleware.WithKeepLast(1)))
	conv := func(i int) []state.Message {
		return []state.Message{state.Human(fmt.Sprint("conversation ", i)), state.Human("last")}
	}
	for i := range conversations {
		_, err := m.Generate(t.Context(), conv(i))
		require.NoError(t, err)
	}
	require.Len(t, summarizer.Calls(), conversations)
	_, err := m.Generate(t.Context(), conv(conversations-1))
	require.NoError(t, err)
	require.Len(t, summarizer.Calls(), conversations, "a recent summary is reused")
	_, err = m.Generate(t.Context(), conv(0))
	require.NoError(t, err)
	require.Len(t, summarizer.Calls(), conversations+1, "the oldest was forgotten")
}
