// Package callhook carries observers of calls in a context: the mechanism
// behind llm.ContextWithCallHooks and tools.ContextWithCallHooks, which
// differ only in what a call is (I) and what it returns (O).
//
// Hooks accumulate: those attached by an outer caller keep being called.
// The Start hooks run outermost first, the End hooks in the reverse order,
// each End with the context its own Start returned.
package callhook

import (
	"context"
	"slices"
)

// Hooks observe one kind of call; either field may be nil.
type Hooks[I, O any] struct {
	Start func(ctx context.Context, call I) context.Context
	End   func(ctx context.Context, call I, out O, err error)
}

// With returns ctx with h attached under key, after the hooks already
// attached there.
func With[I, O any](ctx context.Context, key any, h Hooks[I, O]) context.Context {
	if h.Start == nil && h.End == nil {
		return ctx
	}
	prev, _ := ctx.Value(key).([]Hooks[I, O])
	return context.WithValue(ctx, key, append(slices.Clip(prev), h))
}

// Observe runs the Start hooks attached to ctx under key for call, and
// returns the context to make the call with and the function to call with
// its outcome, which runs the End hooks. Without hooks it returns ctx and
// a function that does nothing.
func Observe[I, O any](ctx context.Context, key any, call I) (context.Context, func(out O, err error)) {
	hs, _ := ctx.Value(key).([]Hooks[I, O])
	if len(hs) == 0 {
		return ctx, func(O, error) {}
	}
	ctxs := make([]context.Context, len(hs))
	for i, h := range hs {
		if h.Start != nil {
			ctx = h.Start(ctx, call)
		}
		ctxs[i] = ctx
	}
	return ctx, func(out O, err error) {
		for i, h := range slices.Backward(hs) {
			if h.End != nil {
				h.End(ctxs[i], call, out, err)
			}
		}
	}
}
