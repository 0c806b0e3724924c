package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Scope is what a call limit counts over.
type Scope string

// The scopes of call limits.
const (
	// ScopeRun counts the calls of one run: one Invoke, Stream or Resume of
	// a graph compiled with [RunScope], or the calls made with one context
	// from [ContextWithRun].
	ScopeRun Scope = "run"
	// ScopeThread counts the calls of every run of one thread (the
	// graph.WithThread of the run). A run without a thread is its own
	// thread.
	ScopeThread Scope = "thread"
)

// CallLimitError is returned for a call refused by [ModelCallLimit] or
// [ToolCallLimit]: the call was not made.
type CallLimitError struct {
	// Tool is the tool whose call was refused, "" for a model call.
	Tool string
	// Scope is the scope whose limit was reached.
	Scope Scope
	// Limit is that limit: the calls already made in the scope.
	Limit int
}

// Error says which limit was reached.
func (e *CallLimitError) Error() string {
	return "middleware: " + e.text()
}

func (e *CallLimitError) text() string {
	if e.Tool == "" {
		return fmt.Sprintf("model call limit reached: at most %d calls per %s", e.Limit, e.Scope)
	}
	return fmt.Sprintf("tool call limit reached: at most %d calls per %s (calling %s)", e.Limit, e.Scope, e.Tool)
}

// ErrNoRun is returned by a call limit with a run or thread limit for a
// call made outside a run: with a context neither made by [ContextWithRun]
// nor inside a graph compiled with [RunScope].
var ErrNoRun = errors.New("middleware: call limit outside a run: compile the graph with middleware.RunScope() or make the context with middleware.ContextWithRun")

// run holds the counts of one run, for every limit that counts in it.
type run struct {
	thread string
	mu     sync.Mutex
	counts map[countKey]int
}

// countKey identifies a counter of a run: a limit, the tool it counts (""
// for all) and whether it is the run's own thread count (for a run
// without a thread).
type countKey struct {
	l      *limiter
	tool   string
	thread bool
}

type runKey struct{}

// ContextWithRun returns a context in which the calls of models and tools
// wrapped by [ModelCallLimit] and [ToolCallLimit] count as one run: their
// run limits count from zero for it. thread names the conversation the
// run belongs to, whose thread limits count across its runs; with "" the
// run is its own thread. Use it to scope limits outside a graph, or in a
// graph compiled without [RunScope].
//
// The run's counts live as long as the context; derive a new one for each
// run.
func ContextWithRun(ctx context.Context, thread string) context.Context {
	return context.WithValue(ctx, runKey{}, &run{thread: thread, counts: make(map[countKey]int)})
}

func runFrom(ctx context.Context) *run {
	r, _ := ctx.Value(runKey{}).(*run)
	return r
}

// RunScope makes every run of the graph (each Invoke, Stream or Resume
// call) a run for call limits, as [ContextWithRun] with the run's thread
// (graph.WithThread) does, through graph hooks that start each run. A
// subgraph's run, or a graph run from a node, counts in the run of the
// graph around it; a run whose context already has a run (from
// ContextWithRun) keeps it.
func RunScope() graph.CompileOption {
	return graph.WithHooks(graph.Hooks{RunStart: func(ctx context.Context, info graph.RunInfo) context.Context {
		if runFrom(ctx) != nil {
			return ctx
		}
		return ContextWithRun(ctx, info.ThreadID)
	}})
}

// LimitOption configures [ModelCallLimit] and [ToolCallLimit].
type LimitOption func(*limitConfig)

type limitConfig struct {
	run, thread int // < 0: none
	perTool     bool
	message     bool
}

// WithRunLimit allows at most n calls per run ([ScopeRun]); 0 allows none.
// A negative n removes the limit (the default).
func WithRunLimit(n int) LimitOption {
	return func(c *limitConfig) { c.run = n }
}

// WithThreadLimit allows at most n calls per thread ([ScopeThread]), over
// all its runs in this process; 0 allows none. A negative n removes the
// limit (the default).
func WithThreadLimit(n int) LimitOption {
	return func(c *limitConfig) { c.thread = n }
}

// WithPerTool makes [ToolCallLimit] count the calls of each tool
// separately, each against the same limits, instead of the calls of all
// the tools it wraps together. [ModelCallLimit] ignores it.
func WithPerTool() LimitOption {
	return func(c *limitConfig) { c.perTool = true }
}

// WithMessageOnLimit answers a call over the limit with a message saying
// so instead of failing it with a [*CallLimitError]: for a model, an AI
// message without tool calls (so that an agent loop such as
// agent.NewReAct ends, as LangChain's exit_behavior="end"); for a tool,
// the tool's output (the model reads it, and other calls go on, as
// LangChain's "continue"). Without it, a [tools.ToolNode] turns the error
// into an error message the model reads too, unless it was made with
// tools.WithFailOnError, which fails the run.
func WithMessageOnLimit() LimitOption {
	return func(c *limitConfig) { c.message = true }
}

// limiter counts the calls of one call-limit middleware.
type limiter struct {
	cfg     limitConfig
	mu      sync.Mutex
	threads map[threadKey]int
}

type threadKey struct{ thread, tool string }

func newLimiter(opts []LimitOption) *limiter {
	l := &limiter{cfg: limitConfig{run: -1, thread: -1}, threads: make(map[threadKey]int)}
	for _, o := range opts {
		if o != nil {
			o(&l.cfg)
		}
	}
	return l
}

// take counts a call of tool ("" for a model call, or for all tools) in
// the run of ctx, or returns why it may not be made: a [*CallLimitError]
// or [ErrNoRun]. Calls are counted when they are let through, whether
// they then succeed or fail.
func (l *limiter) take(ctx context.Context, tool string) error {
	if l.cfg.run < 0 && l.cfg.thread < 0 {
		return nil
	}
	r := runFrom(ctx)
	if r == nil {
		return ErrNoRun
	}
	key := tool
	if !l.cfg.perTool {
		key = ""
	}
	// Lock order: the limiter, then the run.
	l.mu.Lock()
	defer l.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	runCount := countKey{l: l, tool: key}
	if l.cfg.run >= 0 && r.counts[runCount] >= l.cfg.run {
		return &CallLimitError{Tool: tool, Scope: ScopeRun, Limit: l.cfg.run}
	}
	if l.cfg.thread < 0 {
		r.counts[runCount]++
		return nil
	}
	// A run without a thread is its own thread: its thread count is kept
	// on the run, not in the limiter (which would mix all such runs).
	threadCount, inLimiter := l.threads[threadKey{thread: r.thread, tool: key}], true
	if r.thread == "" {
		threadCount, inLimiter = r.counts[countKey{l: l, tool: key, thread: true}], false
	}
	if threadCount >= l.cfg.thread {
		return &CallLimitError{Tool: tool, Scope: ScopeThread, Limit: l.cfg.thread}
	}
	r.counts[runCount]++
	if inLimiter {
		l.threads[threadKey{thread: r.thread, tool: key}]++
	} else {
		r.counts[countKey{l: l, tool: key, thread: true}]++
	}
	return nil
}

// ModelCallLimit limits the calls of the models it wraps, per run
// ([WithRunLimit]) and/or per thread ([WithThreadLimit]); with neither it
// limits nothing. A call over a limit is not made: it fails with a
// [*CallLimitError], or with [WithMessageOnLimit] answers with an AI
// message saying the limit was reached (streamed to the call's token sink
// if it has one, with the call's [llm.WithMessageID]). Calls count when
// they are let through, failed ones included: placed outside a
// [ModelRetry], the limit counts each retry.
//
// Runs are identified by the context (see [Scope]): compile the graph with
// [RunScope], or make the context with [ContextWithRun]; a call outside a
// run fails with [ErrNoRun]. Thread counts are kept in memory by the
// middleware (one counter per thread) and start again from zero in a new
// process; run counts are kept by the run's context.
//
// One ModelCallLimit counts the calls of every model it wraps together.
func ModelCallLimit(opts ...LimitOption) ModelMiddleware {
	l := newLimiter(opts)
	return func(m llm.Model) llm.Model {
		return wrap(m, func(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
			err := l.take(ctx, "")
			if err == nil {
				return m.Generate(ctx, msgs, opts...)
			}
			var lim *CallLimitError
			if !l.cfg.message || !errors.As(err, &lim) {
				return nil, err
			}
			cfg := llm.NewCallOptions(opts...)
			text := limitMessage(lim)
			if cfg.TokenSink != nil {
				cfg.TokenSink(ctx, text)
			}
			msg := state.AI(text)
			msg.ID = cfg.MessageID
			return &llm.Response{Message: msg, StopReason: llm.StopEnd}, nil
		})
	}
}

// ToolCallLimit limits the calls of the tools it wraps, per run
// ([WithRunLimit]) and/or per thread ([WithThreadLimit]): all of them
// together, or each separately with [WithPerTool]; with no limit it
// limits nothing. Wrap several tools in one ToolCallLimit with
// [WrapTools]; to limit one tool only, wrap only that tool. A call over a
// limit is not made: it fails with a [*CallLimitError], or with
// [WithMessageOnLimit] returns a text saying so as the tool's output.
// Runs are identified as for [ModelCallLimit].
func ToolCallLimit(opts ...LimitOption) ToolMiddleware {
	l := newLimiter(opts)
	return func(t tools.Tool) tools.Tool {
		return wrapTool(t, func(ctx context.Context, args []byte) (string, error) {
			err := l.take(ctx, t.Name())
			if err == nil {
				return t.Call(ctx, args)
			}
			var lim *CallLimitError
			if !l.cfg.message || !errors.As(err, &lim) {
				return "", err
			}
			return limitMessage(lim), nil
		})
	}
}

// limitMessage is the text of a call refused by [WithMessageOnLimit].
func limitMessage(e *CallLimitError) string {
	if e.Tool == "" {
		return fmt.Sprintf("I stopped: the limit of %d model calls per %s was reached.", e.Limit, e.Scope)
	}
	return fmt.Sprintf("Error: the limit of %d tool calls per %s was reached; %s was not run.", e.Limit, e.Scope, e.Tool)
}
