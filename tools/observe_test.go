package tools_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// seenCall is what CallHooks saw of one tool call.
type seenCall struct {
	Tool, CallID, Args, Out, Err string
	CallIDInTool                 string // tools.CallID of the context End got
}

type callRecorder struct {
	mu    sync.Mutex
	calls []seenCall
}

func (r *callRecorder) hooks() tools.CallHooks {
	return tools.CallHooks{End: func(ctx context.Context, call tools.CallInfo, out string, err error) {
		c := seenCall{Tool: call.Tool.Name(), CallID: call.CallID, Args: string(call.Args), Out: out, CallIDInTool: tools.CallID(ctx)}
		if err != nil {
			c.Err = err.Error()
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
	}}
}

func (r *callRecorder) get() []seenCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.calls)
	slices.SortFunc(out, func(a, b seenCall) int { return strings.Compare(a.CallID, b.CallID) })
	return out
}

// A ToolNode reports every call it makes to the hooks of its context, with
// the call's outcome: the output, the tool's error, a panic or a timeout.
// A call of an unknown tool runs nothing and is not reported.
func TestToolNodeReportsCallsToHooks(t *testing.T) {
	failing := fnTool("fail", func(ctx context.Context) (string, error) { return "", errors.New("no luck") })
	panicking := fnTool("panic", func(ctx context.Context) (string, error) { panic("boom") })
	slow := fnTool("slow", func(ctx context.Context) (string, error) {
		<-ctx.Done() // until the call's timeout
		return "", ctx.Err()
	})
	tests := []struct {
		name string
		tool tools.Tool
		opts []tools.ToolNodeOption
		call llms.ToolCall
		want []seenCall
	}{
		{name: "output", tool: echoTool(), call: state.ToolCall("c1", "echo", `{"text":"hi"}`),
			want: []seenCall{{Tool: "echo", CallID: "c1", Args: `{"text":"hi"}`, Out: "echo: hi", CallIDInTool: "c1"}}},
		{name: "error", tool: failing, call: state.ToolCall("c2", "fail", `{}`),
			want: []seenCall{{Tool: "fail", CallID: "c2", Args: `{}`, Err: "no luck", CallIDInTool: "c2"}}},
		{name: "panic", tool: panicking, call: state.ToolCall("c3", "panic", `{}`),
			want: []seenCall{{Tool: "panic", CallID: "c3", Args: `{}`, Err: "tool panic panicked: boom", CallIDInTool: "c3"}}},
		{name: "timeout", tool: slow, opts: []tools.ToolNodeOption{tools.WithCallTimeout(time.Millisecond)},
			call: state.ToolCall("c4", "slow", `{}`),
			want: []seenCall{{Tool: "slow", CallID: "c4", Args: `{}`, Err: "tool slow did not finish within 1ms", CallIDInTool: "c4"}}},
		{name: "unknown tool", tool: echoTool(), call: state.ToolCall("c5", "missing", `{}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec callRecorder
			ctx := tools.ContextWithCallHooks(t.Context(), rec.hooks())
			_, err := newNode(t, []tools.Tool{tt.tool}, tt.opts...).Run(ctx, aiCalls(tt.call))
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, rec.get()))
		})
	}
}

type hookKey struct{}

// The tool runs with the context the Start hooks returned, and each End
// hook gets its own Start's context, innermost first.
func TestToolHooksNestInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	log := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	hook := func(name string) tools.CallHooks {
		return tools.CallHooks{
			Start: func(ctx context.Context, call tools.CallInfo) context.Context {
				return context.WithValue(ctx, hookKey{}, name)
			},
			End: func(ctx context.Context, call tools.CallInfo, out string, err error) {
				log("end " + name + " with " + ctx.Value(hookKey{}).(string))
			},
		}
	}
	probe := fnTool("probe", func(ctx context.Context) (string, error) {
		log("tool sees " + ctx.Value(hookKey{}).(string))
		return "", nil
	})
	ctx := tools.ContextWithCallHooks(t.Context(), hook("outer"))
	ctx = tools.ContextWithCallHooks(ctx, hook("inner"))
	_, err := newNode(t, []tools.Tool{probe}).Run(ctx, aiCalls(state.ToolCall("c1", "probe", `{}`)))
	require.NoError(t, err)
	require.Equal(t, []string{"tool sees inner", "end inner with inner", "end outer with outer"}, order)
}
