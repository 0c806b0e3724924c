package llm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

func TestScriptedReplaysInOrder(t *testing.T) {
	m := NewScripted(
		Reply{ToolCalls: []llms.ToolCall{
			{FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{"q":"go"}`}},
			state.ToolCall("mine", "read", ""),
		}, Usage: Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		Reply{Text: "Go is a language.", StopReason: StopLength},
	)
	ctx := context.Background()
	conv := []state.Message{state.Human("What is Go?")}

	r1, err := m.Generate(ctx, conv, WithMessageID("m1"))
	require.NoError(t, err)
	want := state.AI("",
		state.ToolCall("call_1_1", "search", `{"q":"go"}`),
		state.ToolCall("mine", "read", "{}"))
	want.ID = "m1"
	require.Empty(t, cmp.Diff(want, r1.Message))
	require.Equal(t, StopToolCalls, r1.StopReason)
	require.Equal(t, Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, r1.Usage)

	conv = append(conv, r1.Message, state.Tool("call_1_1", "search", "a language"), state.Tool("mine", "read", "…"))
	r2, err := m.Generate(ctx, conv, WithTemperature(0))
	require.NoError(t, err)
	require.Equal(t, "Go is a language.", r2.Message.Text())
	require.Equal(t, StopLength, r2.StopReason)
	require.Equal(t, 0, m.Remaining())

	calls := m.Calls()
	require.Len(t, calls, 2)
	require.Len(t, calls[0].Messages, 1)
	require.Len(t, calls[1].Messages, 4)
	require.Equal(t, 0.0, *calls[1].Options.Temperature)
	require.Equal(t, "m1", calls[0].Options.MessageID)
}

func TestScriptedExhausted(t *testing.T) {
	m := NewScripted(Reply{Text: "only one"})
	ctx := context.Background()
	_, err := m.Generate(ctx, []state.Message{state.Human("first")})
	require.NoError(t, err)

	_, err = m.Generate(ctx, []state.Message{state.Human("first"), state.AI("only one"), state.Human("second question")})
	exhausted, ok := errors.AsType[*ScriptExhaustedError](err)
	require.True(t, ok, "%T %v", err, err)
	require.Equal(t, 1, exhausted.Scripted)
	require.Equal(t, 2, exhausted.Call)
	require.Equal(t, "second question", exhausted.LastMessage.Text())
	require.Equal(t,
		`llm: scripted model exhausted: 1 replies scripted, call 2 has none; last message (human) "second question"`,
		err.Error())
	require.Len(t, m.Calls(), 2, "the failed call is recorded too")

	_, err = NewScripted().Generate(ctx, nil)
	require.EqualError(t, err, "llm: scripted model exhausted: 0 replies scripted, call 1 has none; no messages")
}

func TestScriptedExpectAndErr(t *testing.T) {
	boom := errors.New("provider down")
	lastIs := func(want string) func([]state.Message) error {
		return func(msgs []state.Message) error {
			if got := msgs[len(msgs)-1].Text(); got != want {
				return fmt.Errorf("last message %q, want %q", got, want)
			}
			return nil
		}
	}
	m := NewScripted(
		Reply{Text: "a", Expect: lastIs("hello")},
		Reply{Text: "b", Expect: lastIs("hello")},
		Reply{Err: boom},
	)
	ctx := context.Background()
	_, err := m.Generate(ctx, []state.Message{state.Human("hello")})
	require.NoError(t, err)
	_, err = m.Generate(ctx, []state.Message{state.Human("bye")})
	require.EqualError(t, err, `llm: scripted reply 2: unexpected input: last message "bye", want "hello"`)
	_, err = m.Generate(ctx, []state.Message{state.Human("x")})
	require.ErrorIs(t, err, boom)
}

func TestScriptedStreamsTokens(t *testing.T) {
	m := NewScripted(Reply{Text: "Hello big  world"}, Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c", "f", "{}")}})
	var toks tokenCollector
	resp, err := m.Generate(context.Background(), nil, WithTokenSink(toks.sink))
	require.NoError(t, err)
	require.Equal(t, []string{"Hello", " big", "  world"}, toks.get())
	require.Equal(t, resp.Message.Text(), strings.Join(toks.get(), ""))

	// Tool calls only: nothing streamed.
	_, err = m.Generate(context.Background(), nil, WithTokenSink(toks.sink))
	require.NoError(t, err)
	require.Len(t, toks.get(), 3)
}

func TestScriptedCancelled(t *testing.T) {
	m := NewScripted(Reply{Text: "never"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, m.Remaining(), "a cancelled call uses no reply")
}

func TestScriptedConcurrent(t *testing.T) {
	const n = 50
	replies := make([]Reply, n)
	for i := range replies {
		replies[i] = Reply{Text: fmt.Sprint(i), Usage: Usage{TotalTokens: 1}}
	}
	m := NewScripted(replies...)
	var meter Meter
	ctx := ContextWithMeter(context.Background(), &meter)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for range n {
		wg.Go(func() {
			r, err := m.Generate(ctx, []state.Message{state.Human("hi")})
			require.NoError(t, err)
			mu.Lock()
			got = append(got, r.Message.Text())
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool { return len(got[i]) < len(got[j]) || len(got[i]) == len(got[j]) && got[i] < got[j] })
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	require.Equal(t, want, got, "every reply used exactly once")
	require.Len(t, m.Calls(), n)
	require.Equal(t, UsageTotals{Calls: n, Usage: Usage{TotalTokens: n}}, meter.Totals())
	_, err := m.Generate(ctx, nil)
	require.Error(t, err)
}
