package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"required,description=What to echo"`
}

func echoTool() tools.Tool {
	return tools.New("echo", "Echo a text.", func(ctx context.Context, a echoArgs) (string, error) {
		return "echo: " + a.Text, nil
	})
}

// fnTool is a tool with no arguments running fn.
func fnTool(name string, fn func(ctx context.Context) (string, error)) tools.Tool {
	return tools.New(name, "Test tool "+name+".", func(ctx context.Context, _ struct{}) (string, error) {
		return fn(ctx)
	})
}

func newNode(t *testing.T, ts []tools.Tool, opts ...tools.ToolNodeOption) *tools.ToolNode {
	t.Helper()
	n, err := tools.NewToolNode(ts, append([]tools.ToolNodeOption{tools.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	return n
}

func aiCalls(calls ...llms.ToolCall) []state.Message {
	return []state.Message{state.Human("go"), state.AI("", calls...)}
}

// contents returns the (call ID, name, content) of tool messages.
func contents(t *testing.T, msgs []state.Message) [][3]string {
	t.Helper()
	var out [][3]string
	for _, m := range msgs {
		require.Equal(t, llms.ChatMessageTypeTool, m.Role)
		rs := m.ToolResults()
		require.Len(t, rs, 1)
		require.Equal(t, rs[0].Name, m.Name)
		out = append(out, [3]string{rs[0].ToolCallID, rs[0].Name, rs[0].Content})
	}
	return out
}

func TestToolNodeReturnsResultsInCallOrder(t *testing.T) {
	// "first" finishes only after "second" has finished, so the calls run
	// concurrently and complete in reverse order.
	secondDone := make(chan struct{})
	first := fnTool("first", func(ctx context.Context) (string, error) {
		<-secondDone
		return "1", nil
	})
	second := fnTool("second", func(ctx context.Context) (string, error) {
		close(secondDone)
		return "2", nil
	})
	n := newNode(t, []tools.Tool{first, second, echoTool()})

	out, err := n.Run(t.Context(), aiCalls(
		state.ToolCall("c1", "first", `{}`),
		state.ToolCall("c2", "second", `{}`),
		state.ToolCall("c3", "echo", `{"text":"hi"}`),
	))
	require.NoError(t, err)
	want := [][3]string{{"c1", "first", "1"}, {"c2", "second", "2"}, {"c3", "echo", "echo: hi"}}
	require.Empty(t, cmp.Diff(want, contents(t, out)))
}

func TestToolNodeErrorMessages(t *testing.T) {
	failing := fnTool("failing", func(ctx context.Context) (string, error) {
		return "", errors.New("disk full")
	})
	panicking := fnTool("panicking", func(ctx context.Context) (string, error) {
		panic("boom")
	})
	tests := []struct {
		name string
		call llms.ToolCall
		want string
	}{
		{
			name: "unknown tool lists the valid ones, sorted",
			call: state.ToolCall("c1", "nope", `{}`),
			want: "Error: nope is not a valid tool, try one of [echo, failing, panicking].",
		},
		{
			name: "bad arguments show the arguments and the decoding problem",
			call: state.ToolCall("c1", "echo", `{"txt":"hi"}`),
			want: "Error invoking tool 'echo' with arguments {\"txt\":\"hi\"}: json: unknown field \"txt\"\n Please fix the error and try again.",
		},
		{
			name: "missing required argument",
			call: state.ToolCall("c1", "echo", `{}`),
			want: "Error invoking tool 'echo' with arguments {}: missing required argument(s): text\n Please fix the error and try again.",
		},
		{
			name: "tool error",
			call: state.ToolCall("c1", "failing", `{}`),
			want: "Error: disk full\n Please fix your mistakes.",
		},
		{
			name: "panic",
			call: state.ToolCall("c1", "panicking", `{}`),
			want: "Error: tool panicking panicked: boom\n Please fix your mistakes.",
		},
	}
	n := newNode(t, []tools.Tool{echoTool(), failing, panicking})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := n.Run(t.Context(), aiCalls(tt.call))
			require.NoError(t, err)
			require.Len(t, out, 1)
			require.Equal(t, tt.want, out[0].ToolResults()[0].Content)
			require.Equal(t, "c1", out[0].ToolResults()[0].ToolCallID)
		})
	}
}

func TestToolNodeFailOnErrorFailsTheNode(t *testing.T) {
	diskFull := errors.New("disk full")
	tests := []struct {
		name  string
		tool  tools.Tool
		check func(t *testing.T, err error)
	}{
		{
			name: "tool error",
			tool: fnTool("t", func(ctx context.Context) (string, error) { return "", diskFull }),
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, diskFull)
			},
		},
		{
			name: "panic",
			tool: fnTool("t", func(ctx context.Context) (string, error) { panic("boom") }),
			check: func(t *testing.T, err error) {
				p, ok := errors.AsType[*tools.PanicError](err)
				require.True(t, ok)
				require.Equal(t, "boom", p.Value)
				require.NotEmpty(t, p.Stack)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, []tools.Tool{tt.tool}, tools.WithFailOnError())
			_, err := n.Run(t.Context(), aiCalls(state.ToolCall("c1", "t", `{}`)))
			callErr, ok := errors.AsType[*tools.CallError](err)
			require.True(t, ok, "got %v", err)
			require.Equal(t, "t", callErr.Tool)
			require.Equal(t, "c1", callErr.CallID)
			tt.check(t, err)
		})
	}
}

func TestToolNodeFailOnErrorStillReportsBadArgumentsAsMessages(t *testing.T) {
	n := newNode(t, []tools.Tool{echoTool()}, tools.WithFailOnError())
	out, err := n.Run(t.Context(), aiCalls(
		state.ToolCall("c1", "echo", `{"bad":1}`),
		state.ToolCall("c2", "missing", `{}`),
	))
	require.NoError(t, err)
	require.Len(t, out, 2)
	require.True(t, strings.HasPrefix(out[0].ToolResults()[0].Content, "Error invoking tool 'echo'"))
	require.Equal(t, "Error: missing is not a valid tool, try one of [echo].", out[1].ToolResults()[0].Content)
}

func TestToolNodeCallTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tests := []struct {
		name string
		tool tools.Tool
	}{
		{"tool honouring its context", fnTool("slow", func(ctx context.Context) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})},
		{"tool ignoring its context", fnTool("slow", func(ctx context.Context) (string, error) {
			<-release
			return "too late", nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, []tools.Tool{tt.tool}, tools.WithCallTimeout(time.Millisecond))
			out, err := n.Run(t.Context(), aiCalls(state.ToolCall("c1", "slow", `{}`)))
			require.NoError(t, err)
			require.Equal(t, "Error: tool slow did not finish within 1ms\n Please fix your mistakes.", out[0].ToolResults()[0].Content)

			n = newNode(t, []tools.Tool{tt.tool}, tools.WithCallTimeout(time.Millisecond), tools.WithFailOnError())
			_, err = n.Run(t.Context(), aiCalls(state.ToolCall("c1", "slow", `{}`)))
			timeout, ok := errors.AsType[*tools.TimeoutError](err)
			require.True(t, ok, "got %v", err)
			require.True(t, timeout.Timeout())
			require.Equal(t, time.Millisecond, timeout.Limit)
		})
	}
}

func TestToolNodeCancelledContextFailsTheNode(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	blocking := fnTool("block", func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	n := newNode(t, []tools.Tool{blocking})
	go func() {
		<-started
		cancel()
	}()
	out, err := n.Run(ctx, aiCalls(state.ToolCall("c1", "block", `{}`)))
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, out)
}

func TestToolNodeMaxConcurrency(t *testing.T) {
	var active, peak atomic.Int32
	tool := fnTool("t", func(ctx context.Context) (string, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return "ok", nil
	})
	n := newNode(t, []tools.Tool{tool}, tools.WithMaxConcurrency(1))
	var calls []llms.ToolCall
	for _, id := range []string{"a", "b", "c", "d"} {
		calls = append(calls, state.ToolCall(id, "t", `{}`))
	}
	out, err := n.RunCalls(t.Context(), calls)
	require.NoError(t, err)
	require.Len(t, out, 4)
	require.Equal(t, int32(1), peak.Load())
}

func TestToolNodeRunsCallsConcurrentlyByDefault(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(3)
	tool := fnTool("t", func(ctx context.Context) (string, error) {
		wg.Done()
		wg.Wait() // returns only once all three calls are running
		return "ok", nil
	})
	n := newNode(t, []tools.Tool{tool})
	out, err := n.RunCalls(t.Context(), []llms.ToolCall{
		state.ToolCall("a", "t", `{}`), state.ToolCall("b", "t", `{}`), state.ToolCall("c", "t", `{}`),
	})
	require.NoError(t, err)
	require.Len(t, out, 3)
}

func TestToolNodePassesTheCallIDToTheTool(t *testing.T) {
	tool := fnTool("t", func(ctx context.Context) (string, error) { return tools.CallID(ctx), nil })
	n := newNode(t, []tools.Tool{tool})
	out, err := n.Run(t.Context(), aiCalls(state.ToolCall("call-7", "t", `{}`)))
	require.NoError(t, err)
	require.Equal(t, "call-7", out[0].ToolResults()[0].Content)
	require.Empty(t, tools.CallID(t.Context()))
}

func TestToolNodeInput(t *testing.T) {
	n := newNode(t, []tools.Tool{echoTool()})
	tests := []struct {
		name    string
		msgs    []state.Message
		wantErr error
		wantLen int
	}{
		{name: "no messages", msgs: nil, wantErr: tools.ErrNoMessages},
		{name: "last message is not an AI message", msgs: []state.Message{state.Human("hi")}, wantErr: tools.ErrNoAIMessage},
		{name: "AI message without tool calls", msgs: []state.Message{state.AI("done")}, wantLen: 0},
		{name: "AI message with a tool call", msgs: aiCalls(state.ToolCall("c", "echo", `{"text":"x"}`)), wantLen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := n.Run(t.Context(), tt.msgs)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, out, tt.wantLen)
		})
	}
}

func TestNewToolNodeRejectsDuplicateNames(t *testing.T) {
	_, err := tools.NewToolNode([]tools.Tool{echoTool(), echoTool()})
	_, ok := errors.AsType[*tools.DuplicateToolError](err)
	require.True(t, ok, "got %v", err)
}

func TestSetToolNodeSeesToolsAddedLater(t *testing.T) {
	var s tools.Set
	n := s.ToolNode(tools.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, s.Add(echoTool()))
	out, err := n.Run(t.Context(), aiCalls(state.ToolCall("c", "echo", `{"text":"late"}`)))
	require.NoError(t, err)
	require.Equal(t, "echo: late", out[0].ToolResults()[0].Content)
	require.Len(t, n.Tools(), 1)
}

func TestDefinitions(t *testing.T) {
	echo := echoTool()
	want := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name:        "echo",
		Description: "Echo a text.",
		Parameters:  json.RawMessage(`{"properties":{"text":{"type":"string","description":"What to echo"}},"additionalProperties":false,"type":"object","required":["text"]}`),
	}}}
	require.Empty(t, cmp.Diff(want, tools.Definitions(echo)))
	require.Empty(t, cmp.Diff(want, newNode(t, []tools.Tool{echo}).Definitions()))
	require.Nil(t, tools.Definitions())
}

type msgState struct {
	Messages state.Messages
}

func getMsgs(s msgState) state.Messages { return s.Messages }

func TestCondition(t *testing.T) {
	route := tools.Condition(getMsgs, "tools")
	tests := []struct {
		name    string
		msgs    []state.Message
		want    string
		wantErr error
	}{
		{name: "no messages is an error", wantErr: tools.ErrNoMessages},
		{name: "tool calls go to the tools node", msgs: aiCalls(state.ToolCall("c", "echo", `{}`)), want: "tools"},
		{name: "an answer ends the run", msgs: []state.Message{state.Human("hi"), state.AI("hello")}, want: graph.End},
		{name: "a human message ends the run", msgs: []state.Message{state.Human("hi")}, want: graph.End},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s msgState
			if tt.msgs != nil {
				// Load the messages as a graph state would hold them.
				b, err := json.Marshal(tt.msgs)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, &s.Messages))
			}
			got, err := route(t.Context(), s)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNodeRunsInAGraph(t *testing.T) {
	n := newNode(t, []tools.Tool{echoTool()})
	b := graph.New[msgState]()
	b.AddNode("model", func(ctx context.Context, s msgState) (msgState, error) {
		if s.Messages.Len() > 2 {
			return msgState{Messages: state.Msgs(state.AI("done"))}, nil
		}
		return msgState{Messages: state.Msgs(state.AI("", state.ToolCall("c1", "echo", `{"text":"ping"}`)))}, nil
	})
	b.AddNode("tools", tools.Node(n, getMsgs, func(m []state.Message) msgState { return msgState{Messages: state.Msgs(m...)} }))
	b.AddEdge(graph.Start, "model")
	b.AddConditionalEdges("model", tools.Condition(getMsgs, "tools"), graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile()
	require.NoError(t, err)

	out, err := g.Invoke(t.Context(), msgState{Messages: state.Msgs(state.Human("hi"))})
	require.NoError(t, err)
	var texts []string
	for _, m := range out.Messages.List() {
		texts = append(texts, string(m.Role)+":"+m.Text())
	}
	require.Equal(t, []string{"human:hi", "ai:", "tool:echo: ping", "ai:done"}, texts)
}

func TestToolNodeWithMaxCallsAnswersTheCallsPastTheLimitWithoutRunningThem(t *testing.T) {
	var ran atomic.Int32
	counted := fnTool("count", func(ctx context.Context) (string, error) {
		return fmt.Sprint(ran.Add(1)), nil
	})
	n := newNode(t, []tools.Tool{counted}, tools.WithMaxCalls(2))
	var calls []llms.ToolCall
	for i := range 5 {
		calls = append(calls, state.ToolCall(fmt.Sprintf("c%d", i), "count", `{}`))
	}
	out, err := n.Run(t.Context(), aiCalls(calls...))
	require.NoError(t, err)
	require.Equal(t, int32(2), ran.Load())
	got := contents(t, out)
	require.Len(t, got, 5, "every call has its answer")
	for i, c := range got {
		require.Equal(t, fmt.Sprintf("c%d", i), c[0])
		if i >= 2 {
			require.Equal(t, "Error: not run: at most 2 tool calls are run per message; call count again if you still need it.", c[2])
		}
	}
}
