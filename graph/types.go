package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Reserved node names.
const (
	// Start is the virtual entry node: edges from Start choose the first
	// nodes to run.
	Start = "__start__"
	// End is the virtual exit node: an edge to End ends that branch.
	End = "__end__"
)

// DefaultRecursionLimit is the number of supersteps a run may take when no
// [WithRecursionLimit] is given. LangGraph's historical default of 25 was the
// most reported surprise of its users (long agent loops stopping early), and
// Python LangGraph raised its own to 10 007 in 2026. An agent that must stop
// gracefully reads [RemainingSteps] instead of relying on the limit; the
// limit is a guard against runaway loops, and runaway loops of trivial nodes
// reach 10 000 steps in milliseconds.
const DefaultRecursionLimit = 10000

// Send asks for one extra task of Node in the next superstep, with Arg as
// that task's input instead of the graph state (map-reduce). Writes a Send
// task returns are merged like any node's, after the triggered nodes', in
// Send order.
//
// A node with its own input type (added with [AddNodeWithInput]) takes a
// Send made with [SendInput] instead, which carries that type.
type Send[S any] struct {
	Node string
	Arg  S
	// input is the payload of a SendInput, for a node with its own input
	// type: nil for a Send carrying Arg, noPayload for a nil payload (one
	// word less than a flag beside it, in every Send a branch makes).
	input any
}

// noPayload stands in Send.input for a SendInput payload that is a nil
// interface, so that a nil input still means a Send carrying Arg.
type noPayload struct{}

// sendOf returns a Send of node with in as its input, even a nil one.
func sendOf[S any](node string, in any) Send[S] {
	if in == nil {
		in = noPayload{}
	}
	return Send[S]{Node: node, input: in}
}

// hasInput reports whether s was made by SendInput.
func (s *Send[S]) hasInput() bool { return s.input != nil }

// payload returns the input of a Send made by SendInput (nil otherwise).
func (s *Send[S]) payload() any {
	if _, ok := s.input.(noPayload); ok {
		return nil
	}
	return s.input
}

// SendInput returns a [Send] of one task of node with in as its input: the
// node must have been added with [AddNodeWithInput] for input type I (a run
// that sends it anything else fails, naming the node and both types). It
// is LangGraph's Send to a node with its own input schema:
//
//	graph.SendInput[State]("summarize", Page{URL: u, Index: i})
func SendInput[S, I any](node string, in I) Send[S] {
	return sendOf[S](node, in)
}

// Input returns the payload of a Send made with [SendInput], and whether
// it was made so (false for a Send carrying Arg).
func (s Send[S]) Input() (any, bool) { return s.payload(), s.hasInput() }

// Route is what a branch function chooses: nodes (or path-map keys) to run
// next, and Send tasks.
type Route[S any] struct {
	Nodes []string
	Sends []Send[S]
}

// To returns a Route to the given nodes.
func To[S any](nodes ...string) Route[S] { return Route[S]{Nodes: nodes} }

// Command is returned by a command node (see [Builder.AddCommandNode]) to
// write state and choose where to go, or passed to [Graph.Resume] to
// continue a paused or failed run.
type Command[S any] struct {
	// Update holds the writes: the fields written on it (with Set, Append,
	// …) are merged through their reducers.
	Update S
	// Goto adds nodes to run next; it does not replace static edges.
	Goto []string
	// Sends adds Send tasks for the next step.
	Sends []Send[S]
	// Parent, from a node of a subgraph, applies Update and Goto to the
	// parent graph instead, as if the subgraph node had returned them.
	Parent bool
	// Resume answers the one pending interrupt (only in [Graph.Resume]).
	Resume any
	// ResumeMap answers pending interrupts by [Interruption] ID (only in
	// [Graph.Resume]).
	ResumeMap map[string]any
}

// Interruption is a pause requested by a node with [Interrupt] (dynamic) or by
// a static breakpoint (then ID is empty and Value nil).
type Interruption struct {
	// ID is unique per Interrupt call and stable across re-runs of the task.
	ID string `json:"id"`
	// Value is the payload the node passed.
	Value any `json:"value"`
	// Node is the node that interrupted.
	Node string `json:"node"`
	// Namespace is the subgraph path of the node ("" for the root graph).
	Namespace string `json:"ns,omitempty"`
	// Want is what the node waits for, when it asked with [InterruptAs]:
	// the JSON Schema (type, properties, items, additionalProperties) of
	// the values its T decodes from. [Graph.Resume] refuses an answer that
	// does not fit with a [*ResumeTypeError], and the interrupt stays
	// pending.
	Want string `json:"want,omitempty"`
}

// Decode stores the interrupt's payload in the value v points to: as is
// when it has v's type, else through JSON — a payload read back from a
// checkpoint (in another process, say) is what encoding/json decodes into
// an any: a struct comes back as a map[string]any. A payload with fields
// v's type lacks is refused, not half-read.
func (in Interruption) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("graph: Interruption.Decode needs a non-nil pointer, got %T", v)
	}
	if in.Value != nil && reflect.TypeOf(in.Value).AssignableTo(rv.Elem().Type()) {
		rv.Elem().Set(reflect.ValueOf(in.Value))
		return nil
	}
	b, err := json.Marshal(in.Value)
	if err != nil {
		return fmt.Errorf("graph: interrupt %s payload: %w", in.ID, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a payload of another type is not silently half-read
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("graph: interrupt %s payload %s cannot be read as %T: %w", in.ID, b, v, err)
	}
	return nil
}

// Interrupted is returned by Invoke, Resume and the streams when the run
// paused: on a dynamic interrupt, or before/after a breakpoint node. It is
// not a failure: the run's state is checkpointed (when a checkpointer is
// set) and continues with [Graph.Resume].
type Interrupted struct {
	// Interrupts are the dynamic interrupts pending, in task order; empty
	// for a static breakpoint.
	Interrupts []Interruption
	// Before or After name the breakpoint nodes for static interrupts.
	Before, After []string
}

func (e *Interrupted) Error() string {
	switch {
	case len(e.Before) > 0:
		return fmt.Sprintf("graph: interrupted before %s", strings.Join(e.Before, ", "))
	case len(e.After) > 0:
		return fmt.Sprintf("graph: interrupted after %s", strings.Join(e.After, ", "))
	}
	ids := make([]string, len(e.Interrupts))
	for i, in := range e.Interrupts {
		ids[i] = in.Node + ":" + in.ID
	}
	return fmt.Sprintf("graph: interrupted (%d pending: %s)", len(e.Interrupts), strings.Join(ids, ", "))
}

// RecursionError reports that a run did not finish within its recursion
// limit. The last superstep allowed by the limit has run and been
// checkpointed.
type RecursionError struct {
	Limit int
	// LastNodes are the nodes of the last superstep that ran.
	LastNodes []string
}

func (e *RecursionError) Error() string {
	return fmt.Sprintf("graph: recursion limit of %d reached without hitting a stop condition (last nodes: %s); raise it with graph.WithRecursionLimit, or read graph.RemainingSteps in a node to stop gracefully",
		e.Limit, strings.Join(e.LastNodes, ", "))
}

// InvalidUpdateError reports writes a field cannot merge: several writes to
// a last-value field in one step, two overwrites, or a reducer error.
type InvalidUpdateError struct {
	Field   string
	Writers []string
	Err     error
}

func (e *InvalidUpdateError) Error() string {
	return fmt.Sprintf("graph: at field %s (written by %s): %v", e.Field, strings.Join(e.Writers, ", "), e.Err)
}

func (e *InvalidUpdateError) Unwrap() error { return e.Err }

// NodeError wraps an error returned (or a panic raised) by a node, a branch
// or a router; errors.Is and errors.As see the original error through it.
type NodeError struct {
	Node   string
	TaskID string
	// Attempts is how many times the node ran (retries included).
	Attempts int
	Err      error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %s: %v", e.Node, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// SaverError is the error of a run whose call to its checkpoint saver
// failed: Op says what the run was doing ("loading checkpoint", "saving
// checkpoint", "saving pending writes", "taking the lease"), Node the node whose writes were
// being saved, if any. errors.Is and errors.As see the saver's error
// through it.
//
// A node that runs a subgraph, or invokes another graph, fails with a
// [*NodeError] wrapping that graph's SaverError, so that a caller can tell
// a fault of the saver under a node (a lost database connection, say),
// which running again from the last checkpoint may get past, from the
// node's own.
type SaverError struct {
	Op     string
	Thread string
	Node   string
	Err    error
}

func (e *SaverError) Error() string {
	switch {
	case e.Node != "":
		return fmt.Sprintf("graph: %s of node %s: %v", e.Op, e.Node, e.Err)
	case e.Op == opLoad || e.Op == opLease:
		return fmt.Sprintf("graph: %s of thread %q: %v", e.Op, e.Thread, e.Err)
	}
	return fmt.Sprintf("graph: %s: %v", e.Op, e.Err)
}

func (e *SaverError) Unwrap() error { return e.Err }

// What a run was doing when its saver failed (see SaverError.Op).
const (
	opLoad   = "loading checkpoint"
	opSave   = "saving checkpoint"
	opWrites = "saving pending writes"
	opLease  = "taking the lease"
)

// PanicError is the error a panicking node is turned into.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrNodeTimeout is matched (with errors.Is) by the error of a node attempt
// that ran longer than its [WithNodeTimeout]: a [*NodeTimeoutError].
var ErrNodeTimeout = errors.New("graph: node timed out")

// NodeTimeoutError is the error of a node attempt that ran longer than its
// [WithNodeTimeout]. errors.Is(err, [ErrNodeTimeout]) reports true for it.
// The attempt fails at its deadline: a node that does not return by then
// is abandoned (see [WithNodeTimeout]).
type NodeTimeoutError struct {
	Node    string
	Timeout time.Duration
	// Err is what the node returned when it returned at its deadline (its
	// context's error, usually), or nil when it was abandoned.
	Err error
}

func (e *NodeTimeoutError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("graph: node %s timed out after %s (abandoned while still running)", e.Node, e.Timeout)
	}
	return fmt.Sprintf("graph: node %s timed out after %s: %v", e.Node, e.Timeout, e.Err)
}

// Is reports whether target is [ErrNodeTimeout].
func (e *NodeTimeoutError) Is(target error) bool { return target == ErrNodeTimeout }

func (e *NodeTimeoutError) Unwrap() error { return e.Err }

// ErrGoexit is the error of a node that called [runtime.Goexit] (as
// t.FailNow, or a failed testify require, does in a test) instead of
// returning; it is wrapped in the run's [*NodeError], which names the node,
// and never retried. A node running on the caller's own goroutine ends that
// goroutine: see the package documentation for when that happens.
var ErrGoexit = errors.New("called runtime.Goexit instead of returning")

// ErrInterruptIgnored is the error of a node that called [Interrupt] (or
// [InterruptAs]), which paused the run, and then returned a nil error: it
// went on past the pause with a zero answer, and what it did then is not
// what the human asked for. The task fails (wrapped in a [*NodeError]
// naming the node) instead of pausing; return the error Interrupt gave,
// as in `if err != nil { return s, err }`. It is never retried.
var ErrInterruptIgnored = errors.New("called graph.Interrupt, which paused the run, but returned a nil error instead of Interrupt's error (return s, err), so it ran on past the pause")

// UndeclaredDestinationError reports a conditional edge or branch that chose
// a node outside the destinations declared for it ([WithDestinations], or the
// values of its [WithPathMap]).
type UndeclaredDestinationError struct {
	// Source is the node the branch follows ([Start] for a conditional
	// entry point).
	Source string
	// Destination is the node the branch chose (after its path map).
	Destination string
	// Declared are the branch's declared destinations.
	Declared []string
}

func (e *UndeclaredDestinationError) Error() string {
	return fmt.Sprintf("graph: the branch from %s chose %q, which is not one of its declared destinations [%s]",
		e.Source, e.Destination, strings.Join(e.Declared, ", "))
}

// ShapeMismatchError reports a checkpoint written by a graph of another
// shape (other nodes, edges or fields) that this graph cannot continue: the
// checkpoint has work pending for nodes this graph lacks, or stored values
// it cannot decode. A checkpoint that the graph can continue is resumed
// (see "Changing a graph" in the package documentation); new input on the
// thread starts over on its state whatever work was pending.
type ShapeMismatchError struct {
	CheckpointID string
	// Want fingerprints this graph; Got the graph that wrote the
	// checkpoint.
	Want, Got string
	// Nodes lists, sorted, the nodes that the checkpoint has work pending
	// for — a task of the next step (a node paused by an interrupt or a
	// breakpoint among them), a Send, a deferred node, a join that fired,
	// a node chosen by a task that finished in the paused step — and that
	// this graph lacks, or has taking an input of its own where the
	// checkpoint gives it the state.
	Nodes []string
	// Fields lists, sorted, the state fields whose stored value (in the
	// state, a pending write, a command or a Send) this graph cannot
	// decode into the field's type.
	Fields []string
	// Err details every problem found, Nodes and Fields included.
	Err error
}

func (e *ShapeMismatchError) Error() string {
	var what []string
	if len(e.Nodes) > 0 {
		what = append(what, "it has work pending for nodes this graph lacks: "+strings.Join(e.Nodes, ", "))
	}
	if len(e.Fields) > 0 {
		what = append(what, "this graph cannot decode the stored value of fields "+strings.Join(e.Fields, ", "))
	}
	if len(what) == 0 && e.Err != nil {
		what = append(what, e.Err.Error())
	}
	msg := fmt.Sprintf("graph: checkpoint %s was written by a graph of another shape (fingerprint %s, this graph is %s)",
		e.CheckpointID, e.Got, e.Want)
	if len(what) > 0 {
		msg += " that this graph cannot continue: " + strings.Join(what, "; ")
	}
	if len(e.Fields) > 0 {
		return msg + "; resume it with the graph that wrote it, or start a new thread"
	}
	return msg + "; resume it with the graph that wrote it, or give the thread new input"
}

// Unwrap returns the details.
func (e *ShapeMismatchError) Unwrap() error { return e.Err }

// RetryPolicy retries a failed node. The zero value never retries; use
// [DefaultRetryPolicy] for LangGraph's defaults.
type RetryPolicy struct {
	// InitialInterval is the wait before the first retry.
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each retry (1 when zero).
	BackoffFactor float64
	// MaxInterval caps the wait (no cap when zero).
	MaxInterval time.Duration
	// MaxAttempts counts the first attempt too; below 2 means no retry.
	MaxAttempts int
	// Jitter adds a random extra wait of up to one interval.
	Jitter bool
	// RetryOn decides which errors retry; nil retries every error except
	// cancellation of the run, interrupts and invalid updates.
	RetryOn func(error) bool
}

// DefaultRetryPolicy returns LangGraph's defaults: 0.5 s initial interval,
// factor 2, at most 128 s, 3 attempts, jitter.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffFactor: 2, MaxInterval: 128 * time.Second, MaxAttempts: 3, Jitter: true}
}

// CachePolicy caches a node's results keyed by its input.
type CachePolicy struct {
	// Key derives the cache key from the node's input; nil uses the JSON
	// encoding of the input state.
	Key func(input any) (string, error)
	// TTL bounds how long an entry is used; zero keeps it forever.
	TTL time.Duration
}
