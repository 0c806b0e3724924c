package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func setMsgs(m []state.Message) msgState { return msgState{Messages: state.Msgs(m...)} }

// loaded returns s with msgs as its current messages, as a graph state
// holds them.
func loaded(t *testing.T, msgs ...state.Message) msgState {
	t.Helper()
	var s msgState
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &s.Messages))
	return s
}

// appended returns the messages the write carried by f appends.
func appended(t *testing.T, f state.Messages) []state.Message {
	t.Helper()
	require.True(t, f.Channel().Written())
	var out state.Messages
	require.NoError(t, out.Channel().MergeWrites([]state.Channel{f.Channel()}))
	return out.List()
}

func TestSplitCalls(t *testing.T) {
	ai := state.AI("Let me look.", state.ToolCall("c1", "echo", `{"text":"a"}`), state.ToolCall("c2", "nope", `{}`))
	ai.ID = "msg-1"
	got := tools.SplitCalls(ai)
	require.Len(t, got, 2)
	for i, m := range got {
		require.Equal(t, llms.ChatMessageTypeAI, m.Role)
		require.Equal(t, "msg-1", m.ID, "the copies keep the message's ID")
		require.Equal(t, fmt.Sprintf("tools.SplitCalls: call %d of 2", i+1), m.Text(), "the text says which call it holds, not the message's")
		require.Equal(t, []llms.ToolCall{ai.ToolCalls()[i]}, m.ToolCalls())
	}
	require.Len(t, ai.Parts, 3, "m is not modified")
	require.Nil(t, tools.SplitCalls(state.AI("no calls")))
}

func TestSendCondition(t *testing.T) {
	route := tools.SendCondition(getMsgs, setMsgs, "tools")

	_, err := route(t.Context(), msgState{})
	require.ErrorIs(t, err, tools.ErrNoMessages)

	for _, last := range []state.Message{state.AI("hello"), state.Human("hi")} {
		r, err := route(t.Context(), loaded(t, state.Human("hi"), last))
		require.NoError(t, err)
		require.Equal(t, graph.To[msgState](graph.End), r)
	}

	ai := state.AI("", state.ToolCall("c1", "echo", `{"text":"a"}`), state.ToolCall("c2", "echo", `{"text":"b"}`))
	ai.ID = "msg-1"
	r, err := route(t.Context(), loaded(t, state.Human("go"), ai))
	require.NoError(t, err)
	require.Empty(t, r.Nodes)
	require.Len(t, r.Sends, 2)
	for i, s := range r.Sends {
		require.Equal(t, "tools", s.Node)
		// The argument is a write of the one-call copy of the message.
		require.Empty(t, cmp.Diff([]state.Message{tools.SplitCalls(ai)[i]}, appended(t, s.Arg.Messages)))
	}
}

// sendGraph is a model/tools loop in which "model" asks for calls once and
// then answers, and each call is a task of "tools" (SendCondition).
func sendGraph(t *testing.T, n *tools.ToolNode, calls []llms.ToolCall, opts ...graph.CompileOption) *graph.Graph[msgState] {
	t.Helper()
	b := graph.New[msgState]()
	b.AddNode("model", func(ctx context.Context, s msgState) (msgState, error) {
		if last, _ := s.Messages.Last(); last.Role == llms.ChatMessageTypeTool {
			return msgState{Messages: state.Msgs(state.AI("done"))}, nil
		}
		return msgState{Messages: state.Msgs(state.AI("", calls...))}, nil
	})
	b.AddNode("tools", tools.Node(n, getMsgs, setMsgs))
	b.AddEdge(graph.Start, "model")
	b.AddBranch("model", tools.SendCondition(getMsgs, setMsgs, "tools"), graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

func TestSendConditionRunsEachCallAsATaskInCallOrder(t *testing.T) {
	// Each "wait" call finishes only after the call after it: they finish
	// in the reverse of their order.
	finished := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{}), "3": make(chan struct{})}
	next := map[string]string{"1": "2", "2": "3"}
	wait := tools.New("wait", "Wait for the next call.", func(ctx context.Context, a echoArgs) (string, error) {
		defer close(finished[a.Text])
		if n, ok := next[a.Text]; ok {
			select {
			case <-finished[n]:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "waited " + a.Text, nil
	})
	failing := fnTool("fail", func(ctx context.Context) (string, error) { return "", errors.New("no luck") })
	n := newNode(t, []tools.Tool{wait, failing})
	calls := []llms.ToolCall{
		state.ToolCall("c1", "wait", `{"text":"1"}`),
		state.ToolCall("c2", "fail", `{}`),
		state.ToolCall("c3", "wait", `{"text":"2"}`),
		state.ToolCall("c4", "nope", `{}`),
		state.ToolCall("c5", "wait", `{"text":"3"}`),
	}
	g := sendGraph(t, n, calls)

	var updates [][][3]string
	var pushed int
	var final msgState
	for ev, err := range g.Stream(t.Context(), msgState{Messages: state.Msgs(state.Human("go"))},
		graph.WithStreamModes(graph.ModeUpdates|graph.ModeTasks|graph.ModeValues)) {
		require.NoError(t, err)
		if ev.Node != "tools" {
			if s, ok := ev.Payload.(msgState); ok && ev.Mode == graph.ModeValues {
				final = s
			}
			continue
		}
		switch p := ev.Payload.(type) {
		case graph.TaskStart:
			require.True(t, p.Push, "a Send task")
			pushed++
		case msgState:
			updates = append(updates, contents(t, appended(t, p.Messages)))
		}
	}
	require.Equal(t, len(calls), pushed, "one task per call")
	require.Len(t, updates, len(calls), "one update per call")
	for _, u := range updates {
		require.Len(t, u, 1, "each task appends one tool message")
	}

	var results []state.Message
	for _, m := range final.Messages.List() {
		if m.Role == llms.ChatMessageTypeTool {
			results = append(results, m)
		}
	}
	want := [][3]string{
		{"c1", "wait", "waited 1"},
		{"c2", "fail", "Error: no luck\n Please fix your mistakes."},
		{"c3", "wait", "waited 2"},
		{"c4", "nope", "Error: nope is not a valid tool, try one of [fail, wait]."},
		{"c5", "wait", "waited 3"},
	}
	require.Empty(t, cmp.Diff(want, contents(t, results)), "tool messages in call order")
	last, _ := final.Messages.Last()
	require.Equal(t, "done", last.Text())
}

func TestSendConditionResumeRunsOnlyTheFailedCall(t *testing.T) {
	var echoes atomic.Int32
	echo := tools.New("echo", "Echo a text.", func(ctx context.Context, a echoArgs) (string, error) {
		echoes.Add(1)
		return "echo: " + a.Text, nil
	})
	var flakyRuns atomic.Int32
	flaky := fnTool("flaky", func(ctx context.Context) (string, error) {
		if flakyRuns.Add(1) == 1 {
			return "", errors.New("transient")
		}
		return "ok", nil
	})
	n := newNode(t, []tools.Tool{echo, flaky}, tools.WithFailOnError())
	calls := []llms.ToolCall{
		state.ToolCall("c1", "echo", `{"text":"a"}`),
		state.ToolCall("c2", "flaky", `{}`),
		state.ToolCall("c3", "echo", `{"text":"b"}`),
	}
	g := sendGraph(t, n, calls, graph.WithCheckpointer(checkpoint.NewMemory()))
	thread := graph.WithThread("t")

	_, err := g.Invoke(t.Context(), msgState{Messages: state.Msgs(state.Human("go"))}, thread, graph.WithMaxConcurrency(1))
	callErr, ok := errors.AsType[*tools.CallError](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, "c2", callErr.CallID)
	// With one task at a time, c1 ran and the failure stopped the step
	// before c3.
	require.Equal(t, int32(1), echoes.Load())

	out, err := g.Resume(t.Context(), graph.Command[msgState]{}, thread)
	require.NoError(t, err)
	require.Equal(t, int32(2), echoes.Load(), "c1 did not run again")
	require.Equal(t, int32(2), flakyRuns.Load())
	var results []state.Message
	for _, m := range out.Messages.List() {
		if m.Role == llms.ChatMessageTypeTool {
			results = append(results, m)
		}
	}
	want := [][3]string{{"c1", "echo", "echo: a"}, {"c2", "flaky", "ok"}, {"c3", "echo", "echo: b"}}
	require.Empty(t, cmp.Diff(want, contents(t, results)))
}

func TestMaxConcurrencyHoldsAcrossSendTasks(t *testing.T) {
	const limit = 2
	var mu sync.Mutex
	active, peak := 0, 0
	work := fnTool("work", func(ctx context.Context) (string, error) {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		defer func() {
			mu.Lock()
			active--
			mu.Unlock()
		}()
		return "done", nil
	})
	var calls []llms.ToolCall
	for i := range 6 {
		calls = append(calls, state.ToolCall(fmt.Sprint("c", i), "work", `{}`))
	}
	g := sendGraph(t, newNode(t, []tools.Tool{work}, tools.WithMaxConcurrency(limit)), calls)
	out, err := g.Invoke(t.Context(), msgState{Messages: state.Msgs(state.Human("go"))})
	require.NoError(t, err)
	require.Equal(t, 2+len(calls)+1, out.Messages.Len())
	require.LessOrEqual(t, peak, limit)
}

func TestMaxCallsHoldsAcrossSendTasks(t *testing.T) {
	var ran atomic.Int32
	counted := fnTool("count", func(ctx context.Context) (string, error) {
		ran.Add(1)
		return "ran", nil
	})
	var calls []llms.ToolCall
	for i := range 12 {
		calls = append(calls, state.ToolCall(fmt.Sprint("c", i), "count", `{}`))
	}
	g := sendGraph(t, newNode(t, []tools.Tool{counted}, tools.WithMaxCalls(8)), calls)
	out, err := g.Invoke(t.Context(), msgState{Messages: state.Msgs(state.Human("go"))})
	require.NoError(t, err)
	require.Equal(t, int32(8), ran.Load(), "12 calls in one message, each its own task: 8 run")
	got := contents(t, out.Messages.List()[2:14])
	for i, c := range got {
		require.Equal(t, fmt.Sprint("c", i), c[0], "in call order")
		if i < 8 {
			require.Equal(t, "ran", c[2])
		} else {
			require.Equal(t, "Error: not run: at most 8 tool calls are run per message; call count again if you still need it.", c[2])
		}
	}
}

func TestMaxCallsIgnoresATextThatOnlyLooksLikeASplitPosition(t *testing.T) {
	var ran atomic.Int32
	counted := fnTool("count", func(ctx context.Context) (string, error) {
		ran.Add(1)
		return "ran", nil
	})
	n := newNode(t, []tools.Tool{counted}, tools.WithMaxCalls(1))
	for _, text := range []string{
		"tools.SplitCalls: call 5 of 3",  // past its own total
		"tools.SplitCalls: call 0 of 3",  // positions are 1-based
		"tools.SplitCalls: call 02 of 3", // not as SplitCalls writes it
		"tools.SplitCalls: call 2 of 3 please",
		"call 2 of 3",
	} {
		out, err := n.Run(t.Context(), []state.Message{state.AI(text, state.ToolCall("c", "count", `{}`))})
		require.NoError(t, err)
		require.Equal(t, "ran", contents(t, out)[0][2], text)
	}
	require.Equal(t, int32(5), ran.Load())
}
