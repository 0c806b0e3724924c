package middleware

import (
	"context"
	"strings"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// FallbackError is returned by a [Fallback] chain when every model
// failed. errors.Is and errors.As see each model's error through it.
type FallbackError struct {
	// Models names the models tried, in order.
	Models []string
	// Errs are their errors, in the same order.
	Errs []error
}

// Error lists the models and their errors.
func (e *FallbackError) Error() string {
	var b strings.Builder
	b.WriteString("middleware: every model failed")
	for i, err := range e.Errs {
		b.WriteString("; ")
		b.WriteString(e.Models[i])
		b.WriteString(": ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the models' errors.
func (e *FallbackError) Unwrap() []error { return e.Errs }

// Fallback calls the models of a chain in turn until one answers: first
// the wrapped model, then each of fallbacks, in order, each with the same
// conversation and options. A model is tried when the one before failed
// with any error but the context's: when the call's context is done, its
// error is returned at once. A failed call whose answer had started
// streaming to the caller's token sink ends the chain too (the tokens
// cannot be taken back). When the models tried all failed, the error is a
// [*FallbackError] holding their errors (the error itself when only one
// was tried).
//
// Nil fallbacks are skipped. Wrap a fallback in [ModelRetry] (or anything
// else) with [WrapModel] before passing it.
func Fallback(fallbacks ...llm.Model) ModelMiddleware {
	var chain []llm.Model
	for _, f := range fallbacks {
		if f != nil {
			chain = append(chain, f)
		}
	}
	return func(m llm.Model) llm.Model {
		models := chain
		if m != nil {
			models = append([]llm.Model{m}, chain...)
		}
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			opts, watch := watchSink(opts)
			fe := &FallbackError{}
			for _, model := range models {
				resp, err := model.Generate(ctx, msgs, opts...)
				if err == nil {
					return resp, nil
				}
				if ctx.Err() != nil {
					return nil, ctxError(ctx, err)
				}
				fe.Models = append(fe.Models, modelName(model))
				fe.Errs = append(fe.Errs, err)
				if watch.didStream() {
					break
				}
			}
			if len(fe.Errs) == 1 {
				return nil, fe.Errs[0]
			}
			return nil, fe
		})
	}
}
