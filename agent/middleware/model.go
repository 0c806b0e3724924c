package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// ModelMiddleware wraps a model in another: it may change the conversation
// before the call, call the model several times or not at all, or change
// the answer. It must return a model that is safe for concurrent use when
// its argument is.
type ModelMiddleware func(llm.Model) llm.Model

// WrapModel returns m wrapped in mws: the first middleware is the
// outermost (it sees a call first and its answer last), as with nested
// calls mws[0](mws[1](…(m))). Nil middlewares are skipped; with none it
// returns m.
//
// The models this package returns keep m's name: when m has a String
// method (the models of llm.New and llm.FromLangchain do), so do they, and
// an Unwrap method returns the model they wrap.
func WrapModel(m llm.Model, mws ...ModelMiddleware) llm.Model {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			m = mws[i](m)
		}
	}
	return m
}

// ErrNilModel is returned by the calls of a model this package wrapped
// around a nil model.
var ErrNilModel = errors.New("middleware: nil model")

// generateFunc is the signature of [llm.Model.Generate].
type generateFunc func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error)

// wrappedModel is a model of this package: a Generate function around an
// inner model whose name it keeps.
type wrappedModel struct {
	inner llm.Model
	gen   generateFunc
}

func wrap(inner llm.Model, gen generateFunc) *wrappedModel {
	return &wrappedModel{inner: inner, gen: gen}
}

// Generate implements [llm.Model].
func (w *wrappedModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	if w.inner == nil {
		return nil, ErrNilModel
	}
	return w.gen(ctx, msgs, opts...)
}

// String returns the name of the wrapped model.
func (w *wrappedModel) String() string { return modelName(w.inner) }

// Unwrap returns the wrapped model.
func (w *wrappedModel) Unwrap() llm.Model { return w.inner }

// modelName names m as telemetry and errors do.
func modelName(m llm.Model) string {
	switch m := m.(type) {
	case *llm.Scripted:
		return "scripted"
	case fmt.Stringer:
		return m.String()
	case nil:
		return "<nil>"
	default:
		return fmt.Sprintf("%T", m)
	}
}

// sinkWatch replaces the token sink of a call's options (if any) by one
// that records whether a token went through, so that a failed call whose
// text has reached the caller is not made again. It returns the options
// to call with and the watch (nil when the call has no sink).
type sinkWatch struct {
	user     func(context.Context, string)
	streamed atomic.Bool
}

func watchSink(opts []llm.CallOption) ([]llm.CallOption, *sinkWatch) {
	cfg := llm.NewCallOptions(opts...)
	if cfg.TokenSink == nil {
		return opts, nil
	}
	w := &sinkWatch{user: cfg.TokenSink}
	sink := func(ctx context.Context, tok string) {
		w.streamed.Store(true)
		w.user(ctx, tok)
	}
	return append(opts[:len(opts):len(opts)], llm.WithTokenSink(sink)), w
}

// didStream reports whether a token reached the caller's sink.
func (w *sinkWatch) didStream() bool { return w != nil && w.streamed.Load() }
