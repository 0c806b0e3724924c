package middleware

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/agentgraph/agentgraph/graph"
)

// MaxFeedback is how many [Feedback] entries a [WorkingMemory] keeps: the
// most recent ones.
const MaxFeedback = 20

// DefaultNodeAttempts is how many times [HandleErrors] runs a failing node
// before it answers the user instead.
const DefaultNodeAttempts = 3

// FeedbackError is the Kind of the feedback entries [HandleErrors] records
// for a node's errors.
const FeedbackError = "error"

// WorkingMemory is what an agent remembers about its recent work and
// failures, kept in the graph's state so that it is checkpointed with it
// and nodes (and the prompts they write) can read it. [HandleErrors]
// records node errors in it; nodes add feedback of their own (a command's
// exit code, an edit that did not apply) with an update of the field.
//
// Declare it in the state as a field merged by [MemoryReducer]:
//
//	Memory state.Reduced[middleware.WorkingMemory, middleware.MemoryReducer]
//
// and write it with Update(delta): each write holds only what changed
// (see [MemoryReducer]), so that parallel nodes, and a node and the
// middleware around it, write it in the same step without conflict.
type WorkingMemory struct {
	// CurrentNode and CurrentStep are the node and superstep of the last
	// recorded failure, or of the task reading the memory from
	// [WorkingMemoryFrom].
	CurrentNode string `json:"current_node,omitempty"`
	CurrentStep int    `json:"current_step,omitempty"`
	// CurrentFile is the file the agent works on; nodes set it,
	// HandleErrors does not.
	CurrentFile string `json:"current_file,omitempty"`
	// RetryCount is, per node, how many attempts of its last run failed
	// (absent when none did).
	RetryCount map[string]int `json:"retry_count,omitempty"`
	// LastError is the text of the last error recorded.
	LastError string `json:"last_error,omitempty"`
	// Feedback is the recent history, oldest first, at most [MaxFeedback]
	// entries.
	Feedback []Feedback `json:"feedback,omitempty"`
}

// Feedback is one entry of a [WorkingMemory]'s history.
type Feedback struct {
	// Node is the node it is about.
	Node string `json:"node,omitempty"`
	// Step is the superstep it happened in.
	Step int `json:"step,omitempty"`
	// Kind classifies it: [FeedbackError] for a node's error, or the kinds
	// of your nodes ("command", "edit", …).
	Kind string `json:"kind,omitempty"`
	// Text describes it: the error's text for FeedbackError.
	Text string `json:"text,omitempty"`
	// Attempt is the node's attempt it is about (from 1), 0 if none.
	Attempt int `json:"attempt,omitempty"`
}

// MemoryReducer merges writes of a [WorkingMemory] field: each write is a
// delta. Its non-empty CurrentNode, CurrentFile and LastError, and its
// non-zero CurrentStep, replace the memory's; its RetryCount entries
// replace the memory's for their nodes (a 0 removes the node's); its
// Feedback is appended, and only the last [MaxFeedback] entries are kept.
type MemoryReducer struct{}

// Reduce applies the delta update to old; old is not modified.
func (MemoryReducer) Reduce(old, update WorkingMemory) WorkingMemory {
	out := old
	if update.CurrentNode != "" {
		out.CurrentNode = update.CurrentNode
	}
	if update.CurrentStep != 0 {
		out.CurrentStep = update.CurrentStep
	}
	if update.CurrentFile != "" {
		out.CurrentFile = update.CurrentFile
	}
	if update.LastError != "" {
		out.LastError = update.LastError
	}
	if len(update.RetryCount) > 0 {
		out.RetryCount = maps.Clone(old.RetryCount)
		if out.RetryCount == nil {
			out.RetryCount = make(map[string]int, len(update.RetryCount))
		}
		for node, n := range update.RetryCount {
			if n == 0 {
				delete(out.RetryCount, node)
			} else {
				out.RetryCount[node] = n
			}
		}
		if len(out.RetryCount) == 0 {
			out.RetryCount = nil
		}
	}
	if len(update.Feedback) > 0 {
		all := make([]Feedback, 0, len(old.Feedback)+len(update.Feedback))
		all = append(append(all, old.Feedback...), update.Feedback...)
		out.Feedback = all[max(len(all)-MaxFeedback, 0):]
	}
	return out
}

// NodeFailure describes a node that failed every attempt [HandleErrors]
// gave it; it is given to the function that answers the user.
type NodeFailure struct {
	// Node is the node's name.
	Node string
	// Attempts is how many times HandleErrors ran it (each run may have
	// made several attempts of the node's graph.RetryPolicy).
	Attempts int
	// Err is the last error, as the node's middleware got it (usually a
	// *graph.NodeError).
	Err error
}

// Message is a message for the user saying what failed.
func (f NodeFailure) Message() string {
	return fmt.Sprintf("Sorry, I could not complete the step %q: it failed %d times. The last error was: %s",
		f.Node, f.Attempts, errorText(f.Err))
}

// ErrorOption configures [HandleErrors].
type ErrorOption func(*errorConfig)

type errorConfig struct {
	attempts int
	handle   func(error) bool
	rerun    func(error) bool
}

// WithNodeAttempts sets how many times a failing node runs before the
// user is answered (default [DefaultNodeAttempts], at least 1).
func WithNodeAttempts(n int) ErrorOption {
	return func(c *errorConfig) { c.attempts = max(n, 1) }
}

// WithHandleIf restricts the errors HandleErrors catches to those for
// which handle returns true; the others fail the node as they would
// without it. It never catches the errors listed at [HandleErrors],
// whatever handle says.
func WithHandleIf(handle func(err error) bool) ErrorOption {
	return func(c *errorConfig) { c.handle = handle }
}

// WithRerunIf restricts the errors after which HandleErrors runs the node
// again to those for which rerun returns true; after the others it
// answers the user at once. Use it for errors another run cannot heal,
// such as a model provider refusing the request (an llm.Error that is
// not Retryable: a bad request, a bad key).
func WithRerunIf(rerun func(err error) bool) ErrorOption {
	return func(c *errorConfig) { c.rerun = rerun }
}

type memoryKey struct{}

// WorkingMemoryFrom returns, inside a node wrapped by [HandleErrors], the
// node's working memory as it stands for this attempt: the memory of the
// node's input with CurrentNode and CurrentStep set to this task's and
// the errors of its earlier attempts recorded. A retried node cannot see
// them in its input (its input is the state it was first given), so a
// node that adapts to its errors reads them here. The result is a copy.
// It reports false outside such a node.
func WorkingMemoryFrom(ctx context.Context) (WorkingMemory, bool) {
	wm, ok := ctx.Value(memoryKey{}).(*WorkingMemory)
	if !ok {
		return WorkingMemory{}, false
	}
	out := *wm
	out.RetryCount = maps.Clone(wm.RetryCount)
	out.Feedback = append([]Feedback(nil), wm.Feedback...)
	return out, true
}

// HandleErrors is the error handling of the intent-routed coder's
// @with_error_handling, as a graph middleware for any graph: when a node
// fails, it records the error in the state's [WorkingMemory] (LastError,
// RetryCount, a [Feedback] entry) and runs the node again, up to
// [WithNodeAttempts] times in all (default 3); when the last attempt
// fails, it answers the user instead of failing the run: answer returns
// the update to write (an AI message saying what failed, say; see
// [NodeFailure.Message]), the memory's delta is added to it, and the run
// goes on from the node as after a success.
//
// memory reads the working memory from the node's input; record adds a
// write of a delta of it to an update, for a field declared as
// [WorkingMemory] describes (nil for either: no working memory; with a
// nil answer, the node fails with its last error after the attempts):
//
//	b.Use(middleware.HandleErrors(
//		func(s State) middleware.WorkingMemory { return s.Memory.Get() },
//		func(u *State, d middleware.WorkingMemory) { u.Memory.Update(d) },
//		func(ctx context.Context, s State, f middleware.NodeFailure) State {
//			return State{Messages: state.Msgs(state.AI(f.Message()))}
//		}))
//
// The memory is written only when the node failed, or when it succeeded
// while the memory still counted failures of its previous run (the count
// is then cleared). The node's own writes of a successful attempt are
// kept, with the delta added.
//
// It never catches: a pause ([graph.IsInterrupt]: the error is returned
// as it is and the node is not run again), an error after the run's
// context ended (the run fails with the context's error), or the errors
// of a graph used wrongly, which another attempt cannot mend
// (graph.ErrNoCheckpointer, graph.ErrInterruptIgnored, graph.ErrGoexit,
// *graph.InvalidUpdateError). It runs outside the node's
// graph.RetryPolicy: each of its attempts is a full run of the policy's
// attempts, and it sees the error the policy gave up on.
func HandleErrors[S any](memory func(S) WorkingMemory, record func(update *S, delta WorkingMemory),
	answer func(ctx context.Context, s S, f NodeFailure) S, opts ...ErrorOption) graph.Middleware[S] {
	cfg := errorConfig{attempts: DefaultNodeAttempts}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if memory == nil {
		memory = func(S) WorkingMemory { return WorkingMemory{} }
	}
	if record == nil {
		record = func(*S, WorkingMemory) {}
	}
	return func(next graph.CommandFunc[S]) graph.CommandFunc[S] {
		return func(ctx context.Context, s S) (graph.Command[S], error) {
			node, step := graph.NodeName(ctx), graph.Step(ctx)
			view := memory(s)
			view.CurrentNode, view.CurrentStep = node, step
			var delta WorkingMemory
			for attempt := 1; ; attempt++ {
				current := view
				cmd, err := next(context.WithValue(ctx, memoryKey{}, &current), s)
				if err == nil {
					switch {
					case attempt > 1:
						record(&cmd.Update, delta)
					case view.RetryCount[node] != 0:
						record(&cmd.Update, WorkingMemory{RetryCount: map[string]int{node: 0}})
					}
					return cmd, nil
				}
				if !cfg.catches(ctx, err) {
					return cmd, err
				}
				text := errorText(err)
				fb := Feedback{Node: node, Step: step, Kind: FeedbackError, Text: text, Attempt: attempt}
				d := WorkingMemory{CurrentNode: node, CurrentStep: step, LastError: text,
					RetryCount: map[string]int{node: attempt}, Feedback: []Feedback{fb}}
				delta = MemoryReducer{}.Reduce(delta, d)
				view = MemoryReducer{}.Reduce(view, d)
				if attempt >= cfg.attempts || (cfg.rerun != nil && !cfg.rerun(err)) {
					if answer == nil {
						return cmd, err
					}
					u := answer(ctx, s, NodeFailure{Node: node, Attempts: attempt, Err: err})
					record(&u, delta)
					return graph.Command[S]{Update: u}, nil
				}
			}
		}
	}
}

// catches reports whether HandleErrors handles err.
func (c *errorConfig) catches(ctx context.Context, err error) bool {
	if graph.IsInterrupt(err) || ctx.Err() != nil {
		return false
	}
	if _, ok := errors.AsType[*graph.InvalidUpdateError](err); ok {
		return false
	}
	if errors.Is(err, graph.ErrNoCheckpointer) || errors.Is(err, graph.ErrInterruptIgnored) || errors.Is(err, graph.ErrGoexit) {
		return false
	}
	return c.handle == nil || c.handle(err)
}

// errorText is err's text without the graph's "node X:" prefix.
func errorText(err error) string {
	if ne, ok := errors.AsType[*graph.NodeError](err); ok && ne.Err != nil {
		return ne.Err.Error()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
