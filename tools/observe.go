package tools

import (
	"context"
	"encoding/json"

	"github.com/agentgraph/agentgraph/internal/callhook"
)

// CallHooks observe tool calls, for tracing and metrics. Attach them to a
// context with [ContextWithCallHooks]; a [ToolNode] calls them around every
// call it makes of a tool with that context. Either field may be nil.
//
// The calls of one node run concurrently, so hooks must be safe for
// concurrent use.
type CallHooks struct {
	// Start is called before the tool is called. It returns the context
	// the tool runs with (a span attached, say).
	Start func(ctx context.Context, call CallInfo) context.Context
	// End is called once the call is over, with the context Start
	// returned and the call's outcome: the tool's output, or its error (a
	// [*PanicError] when it panicked, a [*TimeoutError] when it ran out of
	// time, the context's error when the node gave up on it).
	End func(ctx context.Context, call CallInfo, out string, err error)
}

// CallInfo describes a tool call to [CallHooks].
type CallInfo struct {
	// Tool is the called tool.
	Tool Tool
	// CallID is the ID of the model's tool call ("" when unknown).
	CallID string
	// Args are the call's JSON arguments. Hooks must not modify them.
	Args json.RawMessage
}

type callHooksKey struct{}

// ContextWithCallHooks returns a context that makes a [ToolNode] call h
// around every tool call it makes with it. Hooks accumulate: those
// attached by an outer caller keep being called; the Start hooks run
// outermost first and the End hooks in the reverse order, each End with the
// context its own Start returned.
func ContextWithCallHooks(ctx context.Context, h CallHooks) context.Context {
	return callhook.With(ctx, callHooksKey{}, callhook.Hooks[CallInfo, string]{Start: h.Start, End: h.End})
}

// ObserveCall runs the Start hooks attached to ctx with
// [ContextWithCallHooks] for the call described by call, and returns the
// context to make the call with and the function to call with its outcome,
// which runs the End hooks. A [ToolNode] calls it for every call; code that
// calls tools itself can call it to be observed the same way:
//
//	ctx, done := tools.ObserveCall(ctx, tools.CallInfo{Tool: t, CallID: id, Args: args})
//	out, err := t.Call(ctx, args)
//	done(out, err)
//
// Without hooks it returns ctx and a function that does nothing.
func ObserveCall(ctx context.Context, call CallInfo) (context.Context, func(out string, err error)) {
	return callhook.Observe[CallInfo, string](ctx, callHooksKey{}, call)
}
