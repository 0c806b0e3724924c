package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/tools"
)

// ToolMiddleware wraps a tool in another: it may call the tool several
// times or not at all, or change its output or error. The tool's name,
// description and parameters pass through unchanged. It must return a
// tool that is safe for concurrent use when its argument is.
type ToolMiddleware func(tools.Tool) tools.Tool

// WrapTool returns t wrapped in mws: the first middleware is the
// outermost. Nil middlewares are skipped; with none it returns t. The
// tools this package returns have an Unwrap method returning the tool
// they wrap.
func WrapTool(t tools.Tool, mws ...ToolMiddleware) tools.Tool {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			t = mws[i](t)
		}
	}
	return t
}

// WrapTools returns a new slice holding each tool of ts wrapped in mws, as
// [WrapTool] does. A middleware that counts (such as [ToolCallLimit]) is
// shared by all of them.
func WrapTools(ts []tools.Tool, mws ...ToolMiddleware) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = WrapTool(t, mws...)
	}
	return out
}

type callFunc func(ctx context.Context, args []byte) (string, error)

// wrappedTool is a tool of this package: a Call function around an inner
// tool whose name, description and parameters it keeps.
type wrappedTool struct {
	inner tools.Tool
	call  callFunc
}

func wrapTool(inner tools.Tool, call callFunc) *wrappedTool {
	return &wrappedTool{inner: inner, call: call}
}

// Name returns the wrapped tool's name ("" for a nil tool).
func (w *wrappedTool) Name() string {
	if w.inner == nil {
		return ""
	}
	return w.inner.Name()
}

// Description returns the wrapped tool's description.
func (w *wrappedTool) Description() string {
	if w.inner == nil {
		return ""
	}
	return w.inner.Description()
}

// Parameters returns the wrapped tool's parameters.
func (w *wrappedTool) Parameters() json.RawMessage {
	if w.inner == nil {
		return nil
	}
	return w.inner.Parameters()
}

// Call implements [tools.Tool]; it fails with [ErrNilTool] for a nil tool.
func (w *wrappedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if w.inner == nil {
		return "", ErrNilTool
	}
	return w.call(ctx, args)
}

// ErrNilTool is returned by the calls of a tool this package wrapped
// around a nil tool.
var ErrNilTool = errors.New("middleware: nil tool")

// Unwrap returns the wrapped tool.
func (w *wrappedTool) Unwrap() tools.Tool { return w.inner }

// ToolErrorText turns a tool's errors into its output, so that the model
// reads them as the call's result instead of the call failing: what a
// [tools.ToolNode] does by default, for tools run elsewhere or by a node
// with tools.WithFailOnError. format makes the text; nil gives
// "Error: <error>". The context's errors are not turned into text: a
// call whose context is done still fails with the context's error, and
// the pause of a tool that called graph.Interrupt goes through as it is.
func ToolErrorText(format func(tool string, err error) string) ToolMiddleware {
	if format == nil {
		format = func(_ string, err error) string { return fmt.Sprintf("Error: %v", err) }
	}
	return func(t tools.Tool) tools.Tool {
		return wrapTool(t, func(ctx context.Context, args []byte) (string, error) {
			out, err := t.Call(ctx, args)
			if err == nil {
				return out, nil
			}
			if ctx.Err() != nil {
				return "", ctxError(ctx, err)
			}
			if graph.IsInterrupt(err) {
				return "", err // a pause, not a failure
			}
			return format(t.Name(), err), nil
		})
	}
}
