package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Middleware wraps the function of a node, the way net/http middleware
// wraps a handler: it gets the function it wraps (next) and returns the
// one the runtime calls. It may look at or change the state next is
// given, call next any number of times (or not at all), and look at or
// change what next returned, its error included. The node's name is
// [NodeName](ctx).
//
// Every node is wrapped as a command node: a plain node's next returns
// Command[S]{Update: …}, and a middleware may return a [Command] with Goto
// or Sends to route elsewhere (declare those destinations with
// [WithDestinations] so that Compile knows the node can reach them).
//
// Where it runs:
//   - outside the node's [RetryPolicy] and [WithNodeTimeout]: each call of
//     next runs the node under its whole retry policy, so a middleware
//     sees the node's error after its retries (as a [*NodeError]), and a
//     middleware that calls next again gets all the retries again;
//   - inside the task hooks of [WithHooks], which see what the middleware
//     returned;
//   - not at all on a cache hit ([WithCachePolicy]), where the node does
//     not run either; what the cache keeps is what the middleware returned
//     (unless it is a fallback, see below).
//
// When the node pauses ([Interrupt]), next returns an error for which
// [IsInterrupt] reports true. A middleware that catches errors must return
// that one as it is; if it does not, the task pauses all the same and what
// the middleware returned is dropped. A middleware must not call next
// again after such an error. A panic in a middleware fails the task with a
// [*PanicError], like a panic in a node.
//
// Calls of next run one at a time. A middleware may stop waiting for one
// (run it on a goroutine and return on a deadline), but the task ends
// only when that call returns, and a call of next that has not begun when
// the middleware returns fails: to bound a node's time, use
// [WithNodeTimeout], which abandons a node that ignores its context. When the last call of next failed and
// the middleware returned a result all the same (a fallback, an error
// message for the user), that result is not cached.
//
// Nodes added with [AddNodeWithInput] take their own input, not S, and
// are not wrapped: [WithMiddleware] on one fails Compile, and
// [Builder.Use] leaves them out.
//
// A graph without middleware pays nothing for the feature.
type Middleware[S any] func(next CommandFunc[S]) CommandFunc[S]

// Use wraps every node of the graph — those added before the call and
// those added after — in mw. Middleware wraps in the order given: the
// first middleware of the first Use is the outermost, and a node's own
// [WithMiddleware] sits inside all of them. A nil middleware fails
// Compile.
func (b *Builder[S]) Use(mw ...Middleware[S]) *Builder[S] {
	for _, m := range mw {
		if m == nil {
			b.problem("Use: nil middleware")
			return b
		}
	}
	b.mw = append(b.mw, mw...)
	return b
}

// WithMiddleware wraps one node in mw, inside the middleware of
// [Builder.Use]; the first is the outermost. The state type S must be
// the graph's (Compile fails otherwise, naming the node), and the node
// must take the state (not its own input).
func WithMiddleware[S any](mw ...Middleware[S]) NodeOption {
	return middlewareOption[S](mw)
}

type middlewareOption[S any] []Middleware[S]

func (o middlewareOption[S]) applyNode(c *nodeConfig) {
	for _, m := range o {
		if m == nil {
			c.mwProblem = "WithMiddleware: nil middleware"
			return
		}
		c.mw = append(c.mw, m)
	}
}

// nodeMiddleware converts the middleware of a node's options to the
// graph's state type, or says why it cannot.
func nodeMiddleware[S any](c *nodeConfig) ([]Middleware[S], string) {
	if c.mwProblem != "" {
		return nil, c.mwProblem
	}
	out := make([]Middleware[S], 0, len(c.mw))
	for _, m := range c.mw {
		mw, ok := m.(Middleware[S])
		if !ok {
			return nil, fmt.Sprintf("WithMiddleware is for state %s, the graph's state is %s", reflect.TypeOf(m).In(0).In(1), reflect.TypeFor[S]())
		}
		out = append(out, mw)
	}
	return out, ""
}

// errPaused is what next returns to a middleware when the node paused.
var errPaused = errors.New("graph: the node paused (it called Interrupt); a middleware must return this error as it is")

// IsInterrupt reports whether err is, or wraps, the pause of a node: the
// error [Interrupt] returns, a paused subgraph's, or the one a
// [Middleware]'s next returns when the node it wraps paused. Code that
// catches a node's errors must let these through.
func IsInterrupt(err error) bool {
	return errors.Is(err, errPaused) || isPause(err)
}

// errNextAfterReturn is what a middleware's next returns when called after
// the middleware returned (from a goroutine it left behind).
var errNextAfterReturn = errors.New("graph: a middleware's next was called after the middleware returned")

// wrapped runs a task whose node has middleware: the node's attempts
// (with its retry policy) are the innermost function of the chain. Calls
// of next run one at a time, and wrapped waits for one still running when
// the middleware returns, so that a call the middleware abandoned (it
// stopped waiting for it) never writes into the task while the runtime
// uses it; later calls fail. fallback reports that the last call of next
// failed, so that what the middleware returned instead is not cached.
func (l *loop[S]) wrapped(ctx context.Context, t *task[S]) (fallback bool, err error) {
	var mu sync.Mutex
	var returned atomic.Bool // the middleware returned
	lastFailed := false
	var fn CommandFunc[S] = func(ctx context.Context, s S) (Command[S], error) {
		mu.Lock()
		defer mu.Unlock()
		if returned.Load() {
			return Command[S]{}, errNextAfterReturn
		}
		// The node sees what the middleware passed; the task's branches
		// still see its real input (see resolve).
		orig := t.input
		t.input = s
		err := l.attempts(ctx, t)
		t.input = orig
		lastFailed = err != nil
		switch {
		case err != nil:
			return Command[S]{}, err
		case t.interrupted():
			return Command[S]{}, errPaused
		case t.cmd != nil:
			return *t.cmd, nil
		}
		return Command[S]{Update: t.out}, nil
	}
	mw := t.node.mw
	for i := len(mw) - 1; i >= 0; i-- {
		fn = mw[i](fn)
	}
	cmd, err := callChain(ctx, fn, t.input)
	returned.Store(true) // a call of next that has not begun now fails
	mu.Lock()            // and one still running is waited for
	fallback = lastFailed
	mu.Unlock()
	if pe, ok := err.(*PanicError); ok {
		return true, &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: pe}
	}
	// A pause is the task's whatever the middleware made of it: execute
	// checks for it first.
	if err != nil {
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		var pc interface{ isParentCommand() }
		var ne *NodeError
		if errors.As(err, &pc) || (errors.As(err, &ne) && ne.TaskID == t.hdr.ID()) {
			return true, err
		}
		return true, &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: err}
	}
	t.out, t.cmd = cmd.Update, nil
	if cmd.Parent || len(cmd.Goto) > 0 || len(cmd.Sends) > 0 {
		t.cmd = &cmd
	}
	return fallback, nil
}

// callChain calls the middleware chain fn, turning a panic into a
// *PanicError.
func callChain[S any](ctx context.Context, fn CommandFunc[S], s S) (cmd Command[S], err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return fn(ctx, s)
}
