package llm

import (
	"context"

	"github.com/agentgraph/agentgraph/internal/callhook"
	"github.com/agentgraph/agentgraph/state"
)

// CallHooks observe model calls, for tracing and metrics. Attach them to a
// context with [ContextWithCallHooks]; the models of this package (those
// built by [New] and [FromLangchain], and [Scripted]) call them around every
// Generate call made with that context. Either field may be nil.
//
// Hooks are called from the goroutine that called Generate, so they must be
// safe for concurrent use when the model is.
type CallHooks struct {
	// Start is called when a Generate call starts, before its first
	// attempt. It returns the context the call runs with (a span attached,
	// say).
	Start func(ctx context.Context, call CallInfo) context.Context
	// End is called when the call returns, with the context Start
	// returned and the call's outcome: a response, or the error Generate
	// returns.
	End func(ctx context.Context, call CallInfo, resp *Response, err error)
}

// CallInfo describes a model call to [CallHooks].
type CallInfo struct {
	// Name identifies the model as in errors and [Meter.ByModel]: the
	// spec given to [New] ("openai:gpt-4o-mini"), the name given to
	// [FromLangchain], or "scripted".
	Name string
	// Provider is the kind of provider serving the model: "openai",
	// "anthropic", "googleai", "ollama" or "openai-compatible" for [New];
	// for [FromLangchain], the provider part of a "provider:model" name,
	// else the [Provider] the adapter works with ("generic" when
	// unknown); "scripted" for [Scripted].
	Provider string
	// Model is the name of the model requested ("gpt-4o-mini"), Name
	// when it has no "provider:" part.
	Model string
	// Options are the call's options.
	Options CallOptions
	// Messages is the conversation sent to the model. Hooks must not
	// modify it.
	Messages []state.Message
}

type callHooksKey struct{}

// ContextWithCallHooks returns a context that makes the models of this
// package call h around every Generate call made with it. Hooks accumulate:
// those attached by an outer caller keep being called; the Start hooks run
// outermost first and the End hooks in the reverse order, each End with the
// context its own Start returned.
func ContextWithCallHooks(ctx context.Context, h CallHooks) context.Context {
	return callhook.With(ctx, callHooksKey{}, callhook.Hooks[CallInfo, *Response]{Start: h.Start, End: h.End})
}

// ObserveCall runs the Start hooks attached to ctx with
// [ContextWithCallHooks] for a call described by call, and returns the
// context to make the call with and the function to call with its outcome,
// which runs the End hooks. Model implementations outside this package call
// it to be observed like this package's models:
//
//	ctx, done := llm.ObserveCall(ctx, llm.CallInfo{Name: m.name, Provider: "mine", Model: m.name,
//		Options: llm.NewCallOptions(opts...), Messages: msgs})
//	resp, err := m.generate(ctx, msgs, opts...)
//	done(resp, err)
//	return resp, err
//
// Without hooks it returns ctx and a function that does nothing.
func ObserveCall(ctx context.Context, call CallInfo) (context.Context, func(resp *Response, err error)) {
	return callhook.Observe[CallInfo, *Response](ctx, callHooksKey{}, call)
}
