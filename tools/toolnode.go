package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"golang.org/x/sync/errgroup"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// ErrNoMessages is returned by [ToolNode.Run] and by the routers of
// [Condition] when there are no messages to look at.
var ErrNoMessages = errors.New("tools: no messages found in the input state")

// ErrNoAIMessage is returned by [ToolNode.Run] when the last message is not
// an AI message, so there are no tool calls to run.
var ErrNoAIMessage = errors.New("tools: the last message is not an AI message")

// CallError is returned by a [ToolNode] configured with [WithFailOnError]
// when a tool call fails. errors.Is and errors.As see the tool's error
// through it.
type CallError struct {
	// Tool is the name of the tool.
	Tool string
	// CallID is the ID of the tool call.
	CallID string
	// Err is the tool's error: what it returned, a [*PanicError] or a
	// [*TimeoutError].
	Err error
}

// Error implements error.
func (e *CallError) Error() string {
	return fmt.Sprintf("tools: call %s of tool %s: %v", e.CallID, e.Tool, e.Err)
}

// Unwrap returns the tool's error.
func (e *CallError) Unwrap() error { return e.Err }

// PanicError reports a tool whose Call panicked; a [ToolNode] recovers the
// panic and reports it this way instead of crashing the program.
type PanicError struct {
	// Tool is the name of the tool.
	Tool string
	// Value is the value the tool panicked with.
	Value any
	// Stack is the stack trace of the panicking goroutine.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value)
}

// TimeoutError reports a tool call that did not finish within the time
// given with [WithCallTimeout].
type TimeoutError struct {
	// Tool is the name of the tool.
	Tool string
	// Limit is the time limit it exceeded.
	Limit time.Duration
}

// Error implements error.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("tool %s did not finish within %v", e.Tool, e.Limit)
}

// Timeout reports true, like the timeout errors of package net.
func (e *TimeoutError) Timeout() bool { return true }

// ToolNode runs the tool calls of an AI message, as LangGraph's prebuilt
// ToolNode does: every call runs concurrently, and the result is one tool
// message per call, in the order of the calls.
//
// In a graph, run each call as a task of its own, as LangGraph's ReAct
// agent does: route to the node with [SendCondition] (or [SendCalls]),
// which sends every call to it in a [graph.Send] of its own, instead of
// [Condition], which runs the node once for all of them. The graph then
// saves each call's tool message as soon as the call has finished, so a
// run resumed after a crash or a failure re-runs only the calls that had
// not finished, rather than the whole message's; and the tool messages are
// merged in the order of the calls (the Sends'), as [ToolNode.Run] returns
// them.
//
// Calls that cannot be carried out become error tool messages the model can
// react to, rather than errors of the node:
//
//   - an unknown tool: "Error: X is not a valid tool, try one of [a, b]."
//   - arguments the tool cannot decode ([*ArgumentError]):
//     "Error invoking tool 'X' with arguments {...}: <problem>\n Please fix the error and try again."
//   - a tool returning an error, panicking ([*PanicError]) or running out of
//     the time given with [WithCallTimeout] ([*TimeoutError]):
//     "Error: <error>\n Please fix your mistakes." — unless [WithFailOnError]
//     is set, in which case the node fails with a [*CallError].
//
// When the context is done, the node fails with the context's error.
//
// A ToolNode is safe for concurrent use.
type ToolNode struct {
	set            *Set
	callTimeout    time.Duration
	maxConcurrency int
	maxCalls       int
	failOnError    bool
	logger         *slog.Logger
	limits         callLimits // WithMaxConcurrency across the tasks of one message
}

// ToolNodeOption configures a [ToolNode].
type ToolNodeOption func(*ToolNode)

// WithCallTimeout bounds each tool call: the tool's context is cancelled
// after d, and the call is reported as a [*TimeoutError]. The node does not
// wait for a tool that ignores its context beyond d. Zero (the default)
// means no bound beyond the node's context.
func WithCallTimeout(d time.Duration) ToolNodeOption {
	return func(n *ToolNode) { n.callTimeout = max(d, 0) }
}

// WithMaxConcurrency bounds how many tool calls of one message run at once.
// Zero or less (the default) runs them all at once.
//
// The bound holds across the tasks of [SendCondition] too: [ToolNode.Run]
// recognises the calls of one AI message by the message's ID, which every
// task's copy of the message keeps, and runs at most limit of them at once
// over all the tasks of a node (in no particular order when they are
// separate tasks). [ToolNode.RunCalls] bounds only the calls it is given.
func WithMaxConcurrency(limit int) ToolNodeOption {
	return func(n *ToolNode) { n.maxConcurrency = max(limit, 0) }
}

// WithMaxCalls bounds how many tool calls of one message run: the calls
// past the first limit are not run and get the tool message "Error: not
// run: at most <limit> tool calls are run per message; call <tool> again
// if you still need it.", so that a model asking for a thousand reads at
// once does not get them (and every call still has its answer, as
// providers require). Zero or less (the default) runs them all.
//
// The bound is on the calls of one model message however they are
// scheduled: all together ([Condition], [ToolNode.RunCalls]) or one per task
// ([SendCondition], [SendCalls]), where each copy [SplitCalls] makes says
// which call of the message it holds, and [ToolNode.Run] answers a copy
// holding a call past the limit "not run" without running it. In both
// cases the calls run are the first limit in the message's order.
func WithMaxCalls(limit int) ToolNodeOption {
	return func(n *ToolNode) { n.maxCalls = max(limit, 0) }
}

// WithFailOnError makes a tool that returns an error, panics or times out
// fail the node with a [*CallError] instead of producing an error tool
// message. Unknown tools and invalid arguments still produce tool messages,
// since the model can correct them.
func WithFailOnError() ToolNodeOption {
	return func(n *ToolNode) { n.failOnError = true }
}

// WithLogger sets the logger that panicking tools are reported to (at Error
// level, with the stack). The default is [slog.Default].
func WithLogger(l *slog.Logger) ToolNodeOption {
	return func(n *ToolNode) { n.logger = l }
}

// NewToolNode returns a ToolNode running the given tools. It fails if two
// tools have the same name or a tool is invalid (see [Set.Add]).
func NewToolNode(ts []Tool, opts ...ToolNodeOption) (*ToolNode, error) {
	s, err := NewSet(ts...)
	if err != nil {
		return nil, err
	}
	return s.ToolNode(opts...), nil
}

// ToolNode returns a [ToolNode] that runs the tools of s. Tools added to s
// later are available to it too.
func (s *Set) ToolNode(opts ...ToolNodeOption) *ToolNode {
	n := &ToolNode{set: s}
	for _, o := range opts {
		if o != nil {
			o(n)
		}
	}
	if n.logger == nil {
		n.logger = slog.Default()
	}
	return n
}

// Tools returns the tools the node runs, in the order they were added.
func (n *ToolNode) Tools() []Tool { return n.set.Tools() }

// Definitions returns the function definitions of the node's tools, for
// llm.WithTools.
func (n *ToolNode) Definitions() []llms.Tool { return Definitions(n.set.Tools()...) }

// Run runs the tool calls of the last message of msgs, which must be an AI
// message, and returns their tool messages in the order of the calls (none
// when the message has no tool calls). It returns [ErrNoMessages] when msgs
// is empty and an error wrapping [ErrNoAIMessage] when the last message is
// not an AI message.
//
// The last message may be one of the copies [SplitCalls] makes, holding
// one call of the model's message: Run then runs that call and returns its
// tool message.
func (n *ToolNode) Run(ctx context.Context, msgs []state.Message) ([]state.Message, error) {
	if len(msgs) == 0 {
		return nil, ErrNoMessages
	}
	last := msgs[len(msgs)-1]
	if last.Role != llms.ChatMessageTypeAI {
		return nil, fmt.Errorf("%w (it is a %q message)", ErrNoAIMessage, last.Role)
	}
	calls := last.ToolCalls()
	if n.maxCalls > 0 && len(calls) == 1 && n.pastMaxCalls(last) {
		// One call of a message past the first maxCalls, in a task of its
		// own: it is not run, as it would not be if the calls ran together.
		return []state.Message{n.notRun(calls[0])}, nil
	}
	if n.maxConcurrency > 0 && last.ID != "" {
		return n.runCalls(ctx, calls, last.ID)
	}
	return n.RunCalls(ctx, calls)
}

// notRun is the tool message of a call past the WithMaxCalls limit.
func (n *ToolNode) notRun(c llms.ToolCall) state.Message {
	var name string
	if c.FunctionCall != nil {
		name = c.FunctionCall.Name
	}
	return state.Tool(c.ID, name, fmt.Sprintf(
		"Error: not run: at most %d tool calls are run per message; call %s again if you still need it.", n.maxCalls, name))
}

// RunCalls runs calls concurrently and returns one tool message per call,
// in the order of calls.
func (n *ToolNode) RunCalls(ctx context.Context, calls []llms.ToolCall) ([]state.Message, error) {
	return n.runCalls(ctx, calls, "")
}

// runCalls runs calls concurrently. With WithMaxConcurrency, a non-empty
// msgID bounds them together with the other calls of that message running
// in other tasks; an empty one bounds only these calls.
func (n *ToolNode) runCalls(ctx context.Context, calls []llms.ToolCall, msgID string) ([]state.Message, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	out := make([]state.Message, len(calls))
	if n.maxCalls > 0 && len(calls) > n.maxCalls {
		for i, c := range calls[n.maxCalls:] {
			out[n.maxCalls+i] = n.notRun(c)
		}
		calls = calls[:n.maxCalls]
	}
	g, gctx := errgroup.WithContext(ctx)
	if n.maxConcurrency > 0 {
		g.SetLimit(n.maxConcurrency) // starts them in call order
	}
	for i, c := range calls {
		g.Go(func() error {
			if msgID != "" {
				release, err := n.limits.acquire(gctx, msgID, n.maxConcurrency)
				if err != nil {
					return err
				}
				defer release()
			}
			m, err := n.call(gctx, c)
			out[i] = m
			return err
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return out, nil
}

// call runs one tool call and turns its outcome into a tool message, or an
// error that fails the node.
func (n *ToolNode) call(ctx context.Context, c llms.ToolCall) (state.Message, error) {
	var name, args string
	if c.FunctionCall != nil {
		name, args = c.FunctionCall.Name, c.FunctionCall.Arguments
	}
	if err := ctx.Err(); err != nil {
		return state.Message{}, err
	}
	t, ok := n.set.Get(name)
	if !ok {
		return state.Tool(c.ID, name, n.unknownTool(name)), nil
	}
	out, err := n.invoke(ctx, t, c.ID, args)
	if err == nil {
		return state.Tool(c.ID, name, out), nil
	}
	if ctx.Err() != nil {
		return state.Message{}, ctx.Err()
	}
	if graph.IsInterrupt(err) || errors.Is(err, graph.ErrNoCheckpointer) {
		// The tool asked a human (graph.Interrupt): the node pauses, as
		// LangGraph's ToolNode lets GraphInterrupt through, and runs the
		// call again when the run is resumed. In a graph without a
		// checkpointer, which cannot pause, the node fails: that is the
		// program's mistake, not one the model can correct.
		return state.Message{}, err
	}
	if argErr, ok := errors.AsType[*ArgumentError](err); ok {
		return state.Tool(c.ID, name, fmt.Sprintf(
			"Error invoking tool '%s' with arguments %s: %v\n Please fix the error and try again.",
			name, args, argErr.Err)), nil
	}
	if n.failOnError {
		return state.Message{}, &CallError{Tool: name, CallID: c.ID, Err: err}
	}
	return state.Tool(c.ID, name, fmt.Sprintf("Error: %v\n Please fix your mistakes.", err)), nil
}

func (n *ToolNode) unknownTool(name string) string {
	ts := n.set.Tools()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	slices.Sort(names)
	return fmt.Sprintf("Error: %s is not a valid tool, try one of [%s].", name, strings.Join(names, ", "))
}

type callResult struct {
	out string
	err error
}

// invoke calls t in its own goroutine, recovering a panic, and stops
// waiting when the call's context is done. The hooks of
// ContextWithCallHooks see the call and its outcome.
func (n *ToolNode) invoke(ctx context.Context, t Tool, callID, args string) (out string, err error) {
	var cancel context.CancelFunc
	if n.callTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, n.callTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	ctx = context.WithValue(ctx, callIDKey{}, callID)
	ctx, observed := ObserveCall(ctx, CallInfo{Tool: t, CallID: callID, Args: json.RawMessage(args)})
	defer func() { observed(out, err) }()

	done := make(chan callResult, 1) // buffered: an abandoned call does not leak forever
	go func() {
		defer func() {
			if v := recover(); v != nil {
				stack := debug.Stack()
				n.logger.ErrorContext(ctx, "tool panicked", "tool", t.Name(), "call_id", callID,
					"panic", fmt.Sprint(v), "stack", string(stack))
				done <- callResult{err: &PanicError{Tool: t.Name(), Value: v, Stack: stack}}
			}
		}()
		out, err := t.Call(ctx, json.RawMessage(args))
		done <- callResult{out: out, err: err}
	}()

	var r callResult
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // it returned at the same time
		default:
			r.err = ctx.Err()
		}
	}
	// When the node's own context is done too, the caller reports that
	// instead.
	if r.err != nil && n.callTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && !isPanic(r.err) {
		return "", &TimeoutError{Tool: t.Name(), Limit: n.callTimeout}
	}
	return r.out, r.err
}

func isPanic(err error) bool {
	_, ok := errors.AsType[*PanicError](err)
	return ok
}

type callIDKey struct{}

// CallID returns the ID of the tool call being run, inside a tool called by
// a [ToolNode], or "" elsewhere.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Definitions returns the function definitions of ts in langchaingo's form,
// for llm.WithTools: each tool's name, description and JSON-schema
// parameters.
func Definitions(ts ...Tool) []llms.Tool {
	if len(ts) == 0 {
		return nil
	}
	defs := make([]llms.Tool, len(ts))
	for i, t := range ts {
		defs[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        t.Name(),
			Description: t.Description(),
			Parameters:  t.Parameters(),
		}}
	}
	return defs
}

// Node adapts n to a graph node over any state S holding messages: get
// reads the conversation from the state, and set returns the state write
// appending the tool messages, for example
//
//	tools.Node(n,
//		func(s State) state.Messages { return s.Messages },
//		func(m []state.Message) State { return State{Messages: state.Msgs(m...)} })
//
// The node runs the tool calls of the last message it gets (see
// [ToolNode.Run]): all the calls of the model's message when the graph
// routes to it with [Condition], or one call per task when it routes with
// [SendCondition], whose Sends give each task a copy of the message with
// one call as its conversation.
func Node[S any](n *ToolNode, get func(S) state.Messages, set func([]state.Message) S) graph.NodeFunc[S] {
	return func(ctx context.Context, s S) (S, error) {
		out, err := n.Run(ctx, get(s).List())
		if err != nil {
			var zero S
			return zero, err
		}
		return set(out), nil
	}
}

// Condition returns a router for the node that calls the model, like
// LangGraph's tools_condition: it goes to toolsNode when the last message
// has tool calls and to [graph.End] otherwise. It fails with
// [ErrNoMessages] when there are no messages.
//
// The tools node then runs all the calls in one task, whose writes are
// saved only once every call has finished: after a crash, a resumed run
// runs them all again. [SendCondition] runs each call as a task of its
// own instead.
func Condition[S any](get func(S) state.Messages, toolsNode string) graph.RouterFunc[S] {
	return func(ctx context.Context, s S) (string, error) {
		last, ok := get(s).Last()
		if !ok {
			return "", ErrNoMessages
		}
		if len(last.ToolCalls()) > 0 {
			return toolsNode, nil
		}
		return graph.End, nil
	}
}

// SplitCalls returns, for each tool call of m in order, a copy of m that
// holds only that call: m's role, ID and name, a text saying which call of
// how many it is ("tools.SplitCalls: call 3 of 12"; m's own text is left
// out), and the call. Each is the message a task running one call needs;
// [ToolNode.Run] runs the one call of such a copy, recognises the copies of
// one message by its ID (see [WithMaxConcurrency]), and by their position
// answers those past [WithMaxCalls]' limit without running them.
func SplitCalls(m state.Message) []state.Message {
	calls := m.ToolCalls()
	if len(calls) == 0 {
		return nil
	}
	out := make([]state.Message, len(calls))
	for i, c := range calls {
		out[i] = state.Message{
			MessageContent: llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{
				llms.TextContent{Text: fmt.Sprintf(splitFormat, i+1, len(calls))}, c,
			}},
			ID:   m.ID,
			Name: m.Name,
		}
	}
	return out
}

// pastMaxCalls reports whether m is a SplitCalls copy holding a call past
// the first maxCalls of its message.
func (n *ToolNode) pastMaxCalls(m state.Message) bool {
	pos, total, ok := splitPosition(m)
	return ok && pos >= n.maxCalls && total > n.maxCalls
}

// splitFormat is the text of a SplitCalls copy: its call's 1-based position
// in the message, and the message's number of calls.
const splitFormat = "tools.SplitCalls: call %d of %d"

// splitPosition returns the 0-based position of the call a SplitCalls copy
// holds and the number of calls of the message it was split from; ok is
// false when m is not such a copy.
func splitPosition(m state.Message) (pos, total int, ok bool) {
	if len(m.Parts) != 2 {
		return 0, 0, false
	}
	t, isText := m.Parts[0].(llms.TextContent)
	if !isText {
		return 0, 0, false
	}
	var one int
	if k, err := fmt.Sscanf(t.Text, splitFormat, &one, &total); err != nil || k != 2 ||
		t.Text != fmt.Sprintf(splitFormat, one, total) || one < 1 || one > total {
		return 0, 0, false
	}
	return one - 1, total, true
}

// SendCalls returns one [graph.Send] to node per tool call of m, in the
// order of the calls: the argument of each is set applied to the copy of m
// that [SplitCalls] makes for that call, alone — for a [Node], the state
// write of a conversation of that one message. Each task so runs one call
// and appends one tool message, and the graph merges them in the order of
// the Sends, which is the order of the calls. It returns nil when m has no
// tool calls.
//
// A task's input is its Send's argument, not the graph's state: a node
// that needs more than the call (a working directory, say) must get it in
// the argument set builds.
func SendCalls[S any](m state.Message, node string, set func([]state.Message) S) []graph.Send[S] {
	msgs := SplitCalls(m)
	if len(msgs) == 0 {
		return nil
	}
	sends := make([]graph.Send[S], len(msgs))
	for i, one := range msgs {
		sends[i] = graph.Send[S]{Node: node, Arg: set([]state.Message{one})}
	}
	return sends
}

// SendCondition returns a branch for the node that calls the model: like
// [Condition] it ends the run ([graph.End]) when the last message has no
// tool calls, but otherwise it runs each tool call as a task of toolsNode
// of its own, with [SendCalls]: a graph.Send per call, whose argument set
// builds from the message with only that call. It fails with
// [ErrNoMessages] when there are no messages. Declare its destinations:
//
//	b.AddNode("tools", tools.Node(n, get, set))
//	b.AddBranch("model", tools.SendCondition(get, set, "tools"),
//		graph.WithDestinations("tools", graph.End))
//	b.AddEdge("tools", "model")
//
// The graph saves the tool message of each call as soon as the call has
// finished, so a run resumed after a crash, or after a failed call (see
// [WithFailOnError]), runs only the calls that had not finished. The calls
// run concurrently, as the tasks of one superstep; the next node runs once,
// after all of them.
func SendCondition[S any](get func(S) state.Messages, set func([]state.Message) S, toolsNode string) graph.BranchFunc[S] {
	return func(ctx context.Context, s S) (graph.Route[S], error) {
		last, ok := get(s).Last()
		if !ok {
			return graph.Route[S]{}, ErrNoMessages
		}
		if sends := SendCalls(last, toolsNode, set); len(sends) > 0 {
			return graph.Route[S]{Sends: sends}, nil
		}
		return graph.To[S](graph.End), nil
	}
}

// callLimits bounds the calls of each AI message, by its ID, across the
// tasks running them.
type callLimits struct {
	mu   sync.Mutex
	sems map[string]*callSem
}

type callSem struct {
	slots chan struct{}
	users int // calls holding or waiting for a slot
}

// acquire waits for one of the limit slots of the message msgID, and
// returns the function giving it back.
func (l *callLimits) acquire(ctx context.Context, msgID string, limit int) (release func(), err error) {
	l.mu.Lock()
	if l.sems == nil {
		l.sems = map[string]*callSem{}
	}
	sem := l.sems[msgID]
	if sem == nil {
		sem = &callSem{slots: make(chan struct{}, limit)}
		l.sems[msgID] = sem
	}
	sem.users++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		if sem.users--; sem.users == 0 {
			delete(l.sems, msgID)
		}
		l.mu.Unlock()
	}
	select {
	case sem.slots <- struct{}{}:
		return func() { <-sem.slots; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
