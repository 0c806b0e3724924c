package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

func TestModelRetryOverTheOpenAIWire(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replies  []reply
		wantHits int
		wantErr  int // the status of the *llm.Error expected, 0 for success
	}{
		{"429 is retried", []reply{{status: 429}, {status: 200, text: "ok"}}, 2, 0},
		{"500 is retried", []reply{{status: 500}, {status: 503}, {status: 200, text: "ok"}}, 3, 0},
		{"400 is not retried", []reply{{status: 400}, {status: 200, text: "ok"}}, 1, 400},
		{"attempts run out", []reply{{status: 500}, {status: 500}, {status: 500}, {status: 200, text: "ok"}}, 3, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOpenAIServer(t, tc.replies...)
			m := middleware.WrapModel(srv.model(t), middleware.ModelRetry(middleware.WithMaxAttempts(3), fast))
			resp, err := m.Generate(t.Context(), []state.Message{state.Human("hi")})
			require.Equal(t, tc.wantHits, srv.hits())
			if tc.wantErr == 0 {
				require.NoError(t, err)
				require.Equal(t, "ok", resp.Message.Text())
				require.Equal(t, tc.wantHits, resp.Attempts, "Attempts counts the failed provider calls too")
				return
			}
			e, ok := errors.AsType[*llm.Error](err)
			require.True(t, ok, "an *llm.Error: %v", err)
			require.Equal(t, tc.wantErr, e.StatusCode)
		})
	}
}

func TestModelRetryRetriesOnlyWhatItIsTold(t *testing.T) {
	boom := errors.New("boom")
	script := llm.NewScripted(llm.Reply{Err: boom}, llm.Reply{Err: boom}, llm.Reply{Text: "ok"})
	// By default a plain error is not an *llm.Error, so not retried.
	_, err := middleware.WrapModel(script, middleware.ModelRetry(fast)).Generate(t.Context(), human(1))
	require.ErrorIs(t, err, boom)
	require.Len(t, script.Calls(), 1)

	var retries []middleware.Retry
	m := middleware.WrapModel(script, middleware.ModelRetry(fast,
		middleware.WithRetryIf(func(err error) bool { return errors.Is(err, boom) }),
		middleware.WithOnRetry(func(_ context.Context, r middleware.Retry) { retries = append(retries, r) })))
	resp, err := m.Generate(t.Context(), human(1))
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Message.Text())
	require.Len(t, retries, 1)
	require.Equal(t, 1, retries[0].Attempt)
	require.ErrorIs(t, retries[0].Err, boom)
}

func TestModelRetryNeverRetriesCancellation(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 500}, reply{status: 500}, reply{status: 200, text: "ok"})
	cause := errors.New("user left")
	ctx, cancel := context.WithCancelCause(t.Context())
	m := middleware.WrapModel(srv.model(t), middleware.ModelRetry(
		middleware.WithBackoff(time.Hour, time.Hour), // only the cancellation ends the wait
		middleware.WithOnRetry(func(context.Context, middleware.Retry) { cancel(cause) })))
	_, err := m.Generate(ctx, human(1))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause)
	require.Equal(t, 1, srv.hits())

	// A context already done: no attempt after the first failure.
	_, err = middleware.WrapModel(llm.NewScripted(llm.Reply{Text: "never"}), middleware.ModelRetry(fast)).Generate(ctx, human(1))
	require.ErrorIs(t, err, context.Canceled)
}

func TestModelRetryDoesNotRetryAStreamedAnswer(t *testing.T) {
	// A model that streams a token and then fails with a retryable error.
	calls := 0
	flaky := modelFunc(func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
		calls++
		if sink := llm.NewCallOptions(opts...).TokenSink; sink != nil {
			sink(ctx, "Hel")
		}
		return nil, &llm.Error{Model: "flaky", StatusCode: 503, Retryable: true, Err: errors.New("overloaded")}
	})
	var got []string
	m := middleware.WrapModel(flaky, middleware.ModelRetry(fast))
	_, err := m.Generate(t.Context(), human(1), llm.WithTokenSink(func(_ context.Context, tok string) { got = append(got, tok) }))
	require.Error(t, err)
	require.Equal(t, 1, calls)
	require.Equal(t, []string{"Hel"}, got)

	// Without a sink it is retried.
	calls = 0
	_, err = m.Generate(t.Context(), human(1))
	require.Error(t, err)
	require.Equal(t, middleware.DefaultMaxAttempts, calls)
}

func TestWrapModelFirstIsOutermost(t *testing.T) {
	rec := &recorder{}
	m := middleware.WrapModel(llm.NewScripted(llm.Reply{Text: "ok"}), rec.model("a"), nil, rec.model("b"), rec.model("c"))
	_, err := m.Generate(t.Context(), human(1))
	require.NoError(t, err)
	require.Equal(t, []string{"a>", "b>", "c>", "<c", "<b", "<a"}, rec.log)
}

func TestWrappedModelsKeepTheName(t *testing.T) {
	srv := newOpenAIServer(t)
	inner := srv.model(t)
	m := middleware.WrapModel(inner, middleware.ModelRetry(), middleware.Trim(3), middleware.Fallback(llm.NewScripted()))
	s, ok := m.(fmt.Stringer)
	require.True(t, ok)
	require.Equal(t, "openai:gpt-test", s.String())
	// Unwrap leads back to the model of llm.New, which llm.Unwrap knows.
	for {
		u, ok := m.(interface{ Unwrap() llm.Model })
		if !ok {
			break
		}
		m = u.Unwrap()
	}
	_, ok = llm.Unwrap(m)
	require.True(t, ok)
}

func TestFallbackTriesTheNextModelOnFailure(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 400})
	backup := llm.NewScripted(llm.Reply{Text: "from backup"})
	m := middleware.WrapModel(srv.model(t), middleware.Fallback(backup))
	resp, err := m.Generate(t.Context(), human(1))
	require.NoError(t, err)
	require.Equal(t, "from backup", resp.Message.Text())
	require.Equal(t, 1, srv.hits())
	require.Len(t, backup.Calls(), 1)
}

func TestFallbackReportsEveryError(t *testing.T) {
	e1, e2, e3 := errors.New("one"), errors.New("two"), errors.New("three")
	m := middleware.WrapModel(llm.NewScripted(llm.Reply{Err: e1}),
		middleware.Fallback(llm.NewScripted(llm.Reply{Err: e2}), nil, llm.NewScripted(llm.Reply{Err: e3})))
	_, err := m.Generate(t.Context(), human(1))
	fe, ok := errors.AsType[*middleware.FallbackError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, []string{"scripted", "scripted", "scripted"}, fe.Models)
	require.Equal(t, "middleware: every model failed; scripted: one; scripted: two; scripted: three", err.Error())
	require.ErrorIs(t, err, e1)
	require.ErrorIs(t, err, e2)
	require.ErrorIs(t, err, e3)
}

func TestFallbackStopsOnCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	primary := modelFunc(func(ctx context.Context, _ []state.Message, _ ...llm.CallOption) (*llm.Response, error) {
		cancel()
		return nil, errors.New("cut")
	})
	backup := llm.NewScripted(llm.Reply{Text: "never"})
	_, err := middleware.WrapModel(primary, middleware.Fallback(backup)).Generate(ctx, human(1))
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, backup.Calls())
}

func TestRetryInsideFallbackRetriesThePrimaryFirst(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 500}, reply{status: 500})
	backup := llm.NewScripted(llm.Reply{Text: "backup"})
	m := middleware.WrapModel(srv.model(t), middleware.Fallback(backup), middleware.ModelRetry(middleware.WithMaxAttempts(2), fast))
	resp, err := m.Generate(t.Context(), human(1))
	require.NoError(t, err)
	require.Equal(t, "backup", resp.Message.Text())
	require.Equal(t, 2, srv.hits())
}

func TestModelCallLimitPerRunAtItsBoundary(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"}, llm.Reply{Text: "2"}, llm.Reply{Text: "3"}, llm.Reply{Text: "4"})
	m := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(2)))
	run := middleware.ContextWithRun(t.Context(), "")
	for range 2 {
		_, err := m.Generate(run, human(1))
		require.NoError(t, err)
	}
	_, err := m.Generate(run, human(1))
	le, ok := errors.AsType[*middleware.CallLimitError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, middleware.CallLimitError{Scope: middleware.ScopeRun, Limit: 2}, *le)
	require.Len(t, script.Calls(), 2, "the refused call was not made")

	// A new run counts from zero.
	_, err = m.Generate(middleware.ContextWithRun(t.Context(), ""), human(1))
	require.NoError(t, err)
}

func TestModelCallLimitPerThreadCountsAcrossRuns(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"}, llm.Reply{Text: "2"}, llm.Reply{Text: "3"}, llm.Reply{Text: "4"})
	m := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(2), middleware.WithThreadLimit(3)))
	run1 := middleware.ContextWithRun(t.Context(), "t1")
	for range 2 {
		_, err := m.Generate(run1, human(1))
		require.NoError(t, err)
	}
	run2 := middleware.ContextWithRun(t.Context(), "t1")
	_, err := m.Generate(run2, human(1))
	require.NoError(t, err)
	_, err = m.Generate(run2, human(1))
	le, ok := errors.AsType[*middleware.CallLimitError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, middleware.ScopeThread, le.Scope)
	require.Equal(t, 3, le.Limit)

	// Another thread has its own count.
	_, err = m.Generate(middleware.ContextWithRun(t.Context(), "t2"), human(1))
	require.NoError(t, err)
}

func TestModelCallLimitNeedsARun(t *testing.T) {
	m := middleware.WrapModel(llm.NewScripted(llm.Reply{Text: "1"}), middleware.ModelCallLimit(middleware.WithRunLimit(1)))
	_, err := m.Generate(t.Context(), human(1))
	require.ErrorIs(t, err, middleware.ErrNoRun)

	// Without a limit nothing is counted, run or not.
	m = middleware.WrapModel(llm.NewScripted(llm.Reply{Text: "1"}), middleware.ModelCallLimit())
	_, err = m.Generate(t.Context(), human(1))
	require.NoError(t, err)
}

func TestModelCallLimitCanAnswerInstead(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"})
	m := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(1), middleware.WithMessageOnLimit()))
	run := middleware.ContextWithRun(t.Context(), "")
	_, err := m.Generate(run, human(1))
	require.NoError(t, err)
	var streamed []string
	resp, err := m.Generate(run, human(1), llm.WithMessageID("m-2"),
		llm.WithTokenSink(func(_ context.Context, tok string) { streamed = append(streamed, tok) }))
	require.NoError(t, err)
	require.Empty(t, resp.Message.ToolCalls())
	require.Equal(t, "m-2", resp.Message.ID)
	require.Equal(t, llm.StopEnd, resp.StopReason)
	require.Contains(t, resp.Message.Text(), "limit of 1 model calls per run")
	require.Equal(t, []string{resp.Message.Text()}, streamed)
	require.Len(t, script.Calls(), 1)
}

func TestModelCallLimitUnderConcurrentCalls(t *testing.T) {
	const limit, callers = 10, 50
	replies := make([]llm.Reply, callers)
	for i := range replies {
		replies[i] = llm.Reply{Text: "ok"}
	}
	script := llm.NewScripted(replies...)
	m := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithRunLimit(limit), middleware.WithThreadLimit(limit+5)))
	run := middleware.ContextWithRun(t.Context(), "shared")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for range callers {
		wg.Go(func() {
			_, err := m.Generate(run, human(1))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if _, isLimit := errors.AsType[*middleware.CallLimitError](err); isLimit {
				refused++
			}
		})
	}
	wg.Wait()
	require.Equal(t, limit, ok)
	require.Equal(t, callers-limit, refused)
	require.Len(t, script.Calls(), limit)
}

func TestTrimKeepsToolCallsWithTheirResults(t *testing.T) {
	conv := []state.Message{
		state.System("sys"),
		state.Human("weather in Oslo and Rome?"),
		state.AI("", state.ToolCall("c1", "weather", `{"city":"Oslo"}`), state.ToolCall("c2", "weather", `{"city":"Rome"}`)),
		state.Tool("c1", "weather", "rain"),
		state.Tool("c2", "weather", "sun"),
	}
	script := llm.NewScripted(llm.Reply{Text: "ok"}, llm.Reply{Text: "ok"})
	m := middleware.WrapModel(script, middleware.Trim(1))
	_, err := m.Generate(t.Context(), conv)
	require.NoError(t, err)
	want := []string{"system:sys", "ai:+call c1+call c2", "tool:rain", "tool:sun"}
	require.Empty(t, cmp.Diff(want, texts(script.Calls()[0].Messages)))
	require.Len(t, conv, 5, "the caller's conversation is not changed")

	// Trim(0) counts as 1: the last message (and its call) is always sent.
	_, err = middleware.WrapModel(script, middleware.Trim(0)).Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, texts(script.Calls()[1].Messages)))
}

func TestTrimCharsFitsTheBudget(t *testing.T) {
	conv := []state.Message{
		state.System("a long system prompt that does not count"),
		state.Human("aaaaaaaaaa"),                     // 10
		state.AI("bbbbb"),                             // 5
		state.Human("ccc"),                            // 3
		state.AI("", state.ToolCall("c1", "f", "{}")), // 1 + 2
		state.Tool("c1", "f", "dddd"),                 // 4
	}
	for _, tc := range []struct {
		budget int
		want   []string
	}{
		{7, []string{"ai:+call c1", "tool:dddd"}},               // exactly the pair
		{9, []string{"ai:+call c1", "tool:dddd"}},               // one short of "ccc"
		{10, []string{"human:ccc", "ai:+call c1", "tool:dddd"}}, // exactly with "ccc"
		{2, []string{"ai:+call c1", "tool:dddd"}},               // the last message is always sent
		{1000, []string{"human:aaaaaaaaaa", "ai:bbbbb", "human:ccc", "ai:+call c1", "tool:dddd"}},
	} {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			script := llm.NewScripted(llm.Reply{Text: "ok"})
			_, err := middleware.WrapModel(script, middleware.TrimChars(tc.budget)).Generate(t.Context(), conv)
			require.NoError(t, err)
			want := append([]string{"system:a long system prompt that does not count"}, tc.want...)
			require.Empty(t, cmp.Diff(want, texts(script.Calls()[0].Messages)))
		})
	}
}

func TestSummarizeReplacesOlderMessagesAndReusesTheSummary(t *testing.T) {
	summarizer := llm.NewScripted(llm.Reply{Text: "S1"}, llm.Reply{Text: "S2"})
	model := llm.NewScripted(llm.Reply{Text: "a"}, llm.Reply{Text: "b"}, llm.Reply{Text: "c"})
	m := middleware.WrapModel(model, middleware.Summarize(summarizer,
		middleware.WithTriggerMessages(5), middleware.WithKeepLast(2)))
	conv := append([]state.Message{state.System("sys")}, human(6)...)

	// 6 messages > 5: the first 4 are summarized.
	_, err := m.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Len(t, summarizer.Calls(), 1)
	prompt := summarizer.Calls()[0].Messages[0].Text()
	require.True(t, contains(prompt, "[human] h1\n") && contains(prompt, "[human] h4\n") && !contains(prompt, "h5"), prompt)
	require.Equal(t, []string{"system:sys", "human:" + middleware.SummaryPrefix + "S1", "human:h5", "human:h6"},
		texts(model.Calls()[0].Messages))

	// One more message: the summary covers the same beginning, and
	// summary + 3 messages is under the trigger: no new summary.
	conv = append(conv, state.Human("h7"))
	_, err = m.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Len(t, summarizer.Calls(), 1)
	require.Equal(t, []string{"system:sys", "human:" + middleware.SummaryPrefix + "S1", "human:h5", "human:h6", "human:h7"},
		texts(model.Calls()[1].Messages))

	// Two more: summary + 5 > 5, the earlier summary is folded into the new one.
	conv = append(conv, state.Human("h8"), state.Human("h9"))
	_, err = m.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Len(t, summarizer.Calls(), 2)
	prompt = summarizer.Calls()[1].Messages[0].Text()
	require.True(t, contains(prompt, "S1") && contains(prompt, "h5") && contains(prompt, "h7") && !contains(prompt, "h8"), prompt)
	require.Equal(t, []string{"system:sys", "human:" + middleware.SummaryPrefix + "S2", "human:h8", "human:h9"},
		texts(model.Calls()[2].Messages))
}

func TestSummarizeKeepsToolCallsWithTheirResults(t *testing.T) {
	summarizer := llm.NewScripted(llm.Reply{Text: "S"})
	model := llm.NewScripted(llm.Reply{Text: "a"})
	m := middleware.WrapModel(model, middleware.Summarize(summarizer, middleware.WithTriggerChars(10), middleware.WithKeepLast(1)))
	conv := []state.Message{
		state.Human("a question that is long enough"),
		state.AI("", state.ToolCall("c1", "f", "{}")),
		state.Tool("c1", "f", "result"),
	}
	_, err := m.Generate(t.Context(), conv)
	require.NoError(t, err)
	require.Equal(t, []string{"human:" + middleware.SummaryPrefix + "S", "ai:+call c1", "tool:result"}, texts(model.Calls()[0].Messages))
}

func TestSummarizeFailureFailsTheCall(t *testing.T) {
	srv := newOpenAIServer(t, reply{status: 400})
	model := llm.NewScripted(llm.Reply{Text: "a"})
	m := middleware.WrapModel(model, middleware.Summarize(srv.model(t), middleware.WithTriggerMessages(1), middleware.WithKeepLast(1)))
	_, err := m.Generate(t.Context(), human(3))
	e, ok := errors.AsType[*llm.Error](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, http.StatusBadRequest, e.StatusCode)
	require.Empty(t, model.Calls())

	empty := llm.NewScripted(llm.Reply{Text: "  "})
	_, err = middleware.WrapModel(model, middleware.Summarize(empty, middleware.WithTriggerMessages(1), middleware.WithKeepLast(1))).Generate(t.Context(), human(3))
	require.ErrorContains(t, err, "empty summary")
}

func TestARunWithoutThreadIsItsOwnThread(t *testing.T) {
	script := llm.NewScripted(llm.Reply{Text: "1"}, llm.Reply{Text: "2"}, llm.Reply{Text: "3"})
	m := middleware.WrapModel(script, middleware.ModelCallLimit(middleware.WithThreadLimit(1)))
	run1 := middleware.ContextWithRun(t.Context(), "")
	_, err := m.Generate(run1, human(1))
	require.NoError(t, err)
	_, err = m.Generate(run1, human(1))
	le, ok := errors.AsType[*middleware.CallLimitError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, middleware.ScopeThread, le.Scope)
	_, err = m.Generate(middleware.ContextWithRun(t.Context(), ""), human(1))
	require.NoError(t, err, "another run without thread is another thread")
}
