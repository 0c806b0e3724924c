package graph

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentgraph/agentgraph/checkpoint"
	"hash/fnv"
	"strconv"
	"sync"
)

type runtimeKey struct{}

// taskRuntime is what a running node can read from its context. It lives
// in the context (see taskCtx), so it is kept small: what the whole run
// shares is in runShared, and the task's name, step, ID, resume values and
// interrupt bookkeeping are in its (reused) header.
type taskRuntime struct {
	task   *taskHeader // the node's name and step are its header's
	emit   func(Event)
	shared *runShared
}

// runShared is what every task of a run shares.
type runShared struct {
	stop       int // the step past the recursion limit
	ns         string
	thread     string
	saver      checkpoint.Saver
	modes      Mode
	subgraphs  bool
	durability Durability
	parents    map[string]string
}

// nestedInfo is what a subgraph run inherits from the task that runs it.
type nestedInfo struct {
	ns         string
	threadID   string
	saver      checkpoint.Saver
	resuming   bool
	resume     *resumeInput
	emit       func(Event)
	modes      Mode
	subgraphs  bool
	durability Durability
	parents    map[string]string
}

// nested describes the task to a graph run inside it.
func (rt *taskRuntime) nested() *nestedInfo {
	sh := rt.shared
	parents := make(map[string]string, len(sh.parents)+1)
	for k, v := range sh.parents {
		parents[k] = v
	}
	parents[sh.ns] = rt.task.cp
	return &nestedInfo{
		ns: joinNS(sh.ns, rt.task.name+":"+rt.task.ID()), threadID: sh.thread, saver: sh.saver,
		resuming: rt.task.resuming, resume: rt.task.scratch.resume, emit: rt.emit, modes: sh.modes,
		subgraphs: sh.subgraphs, durability: sh.durability, parents: parents,
	}
}

// taskCtx is a task's context: the run's context plus the task's runtime,
// in one object handed out by the loop's slab (see loop.newEnv).
type taskCtx struct {
	context.Context
	rt taskRuntime
}

func (c *taskCtx) Value(key any) any {
	if _, ok := key.(runtimeKey); ok {
		return &c.rt
	}
	return c.Context.Value(key)
}

// taskHeader identifies a task; its ID is computed when first asked for.
type taskHeader struct {
	once sync.Once
	id   string
	cp   string
	ns   string
	step int
	name string
	kind string
	idx  int
	// scratch is the task's interrupt bookkeeping.
	scratch scratchpad
	// resuming is set when the task has pending writes: a subgraph in it
	// resumes.
	resuming bool
}

// ID returns the task's ID, a hash of the checkpoint it starts from, its
// namespace, step, node and position.
func (h *taskHeader) ID() string {
	h.once.Do(func() {
		h.id = hashID(h.cp + "|" + h.ns + "|" + strconv.Itoa(h.step) + "|" + h.name + "|" + h.kind + "|" + strconv.Itoa(h.idx))
	})
	return h.id
}

func hashID(s string) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	var b [16]byte
	return hex.EncodeToString(h.Sum(b[:0]))
}

func runtimeFrom(ctx context.Context) *taskRuntime {
	rt, _ := ctx.Value(runtimeKey{}).(*taskRuntime)
	return rt
}

// Step returns the superstep the calling node runs in (0 is the step that
// applies the input), or -1 outside a node.
func Step(ctx context.Context) int {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.task.step
	}
	return -1
}

// RemainingSteps returns how many supersteps the run may still take before
// its recursion limit, counting the current one; an agent can stop
// gracefully when it gets low. It returns -1 outside a node.
func RemainingSteps(ctx context.Context) int {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.shared.stop - rt.task.step
	}
	return -1
}

// TaskID returns the ID of the calling node's task, or "" outside a node.
// It is stable across re-runs of the same task against the same checkpoint.
func TaskID(ctx context.Context) string {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.task.ID()
	}
	return ""
}

// NodeName returns the name of the calling node, or "" outside a node.
func NodeName(ctx context.Context) string {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.task.name
	}
	return ""
}

// StreamWriter returns a function that emits its argument as a custom
// stream event from the calling node. It does nothing when the run does not
// stream [ModeCustom] or outside a node.
func StreamWriter(ctx context.Context) func(payload any) { return writer[any](ctx, ModeCustom) }

// MessageChunk is a piece of an LLM message streamed in [ModeMessages].
type MessageChunk struct {
	// MessageID identifies the message the chunk belongs to.
	MessageID string
	// Text is the token or text piece.
	Text string
	// Done marks the last chunk of a message.
	Done bool
}

// MessageWriter returns a function a model adapter calls for every token it
// receives; the chunks appear in [ModeMessages] events with the node and
// task that made the call. It does nothing when the run does not stream
// messages or outside a node.
func MessageWriter(ctx context.Context) func(MessageChunk) {
	return writer[MessageChunk](ctx, ModeMessages)
}

// writer returns a function emitting its argument as the payload of an
// event of mode from the calling node; the node, step and task are the
// ones of the call to writer.
func writer[T any](ctx context.Context, mode Mode) func(T) {
	rt := runtimeFrom(ctx)
	if rt == nil || rt.shared.modes&mode == 0 {
		return func(T) {}
	}
	emit, ev := rt.emit, Event{Mode: mode, Namespace: rt.shared.ns, Step: rt.task.step, Node: rt.task.name, TaskID: rt.task.ID()}
	return func(payload T) {
		ev := ev
		ev.Payload = payload
		emit(ev)
	}
}

// scratchpad holds a task's interrupt bookkeeping. In a run without a
// checkpointer, where Interrupt refuses to pause, paused is set with nothing
// raised: the task stops as if interrupted, and execute fails it (see
// interruptRefused) even if the node dropped Interrupt's error.
type scratchpad struct {
	mu       sync.Mutex
	taskID   func() string
	answers  []any
	counter  int
	resume   *resumeInput
	raised   []Interruption
	paused   bool
	consumed bool // answers grew this run
	// detached is set on the scratchpad of an attempt run on a goroutine
	// of its own once the runtime stopped waiting for it: a node still
	// running then can no longer interrupt or take resume values.
	detached bool
}

// resumeInput is the resume values of a Resume call, shared by the tasks of
// its first step.
type resumeInput struct {
	mu       sync.Mutex
	byID     map[string]any
	scalar   any
	hasValue bool
}

func (r *resumeInput) take() (any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.hasValue {
		return nil, false
	}
	r.hasValue = false
	return r.scalar, true
}

func (r *resumeInput) lookup(id string) (any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byID[id]
	return v, ok
}

func interruptID(taskID string, idx int) string {
	return hashID(taskID + ":interrupt:" + strconv.Itoa(idx))
}

// interruptRefused is the error of an Interrupt by node in a run without a
// checkpointer.
func interruptRefused(node string) error {
	return fmt.Errorf("graph: node %s called Interrupt in a run without a checkpointer, which could never be resumed: %w", node, ErrNoCheckpointer)
}

// errDetached is what Interrupt returns to a node the runtime stopped
// waiting for (it timed out, or its run was cancelled).
var errDetached = errors.New("graph: Interrupt called by a node that was abandoned (it timed out, or its run was cancelled)")

// interruptSignal is the error Interrupt returns to unwind the node.
type interruptSignal struct {
	in Interruption
}

func (s *interruptSignal) Error() string {
	return fmt.Sprintf("graph: node %s interrupted (id %s); return this error from the node", s.in.Node, s.in.ID)
}

// Interrupt pauses the run and hands payload to the caller, who continues
// it with [Graph.Resume]. On the first call it returns a non-nil error that
// the node must return as is; when the run is resumed, the node runs again
// from its top and this call returns the resume value instead. Several
// calls in one node are matched to resume values by position; each call has
// its own stable [Interruption] ID.
//
//	answer, err := graph.Interrupt(ctx, "approve the plan?")
//	if err != nil {
//		return s, err
//	}
//
// A run without a checkpointer could never be resumed: there Interrupt
// returns an error wrapping [ErrNoCheckpointer] and naming the node, and
// the node's task fails with it (even if the node drops it).
func Interrupt(ctx context.Context, payload any) (any, error) {
	rt := runtimeFrom(ctx)
	if rt == nil {
		return nil, errors.New("graph: Interrupt called outside a graph node")
	}
	sp := &rt.task.scratch
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.detached {
		return nil, errDetached
	}
	if rt.shared.saver == nil {
		sp.paused = true
		return nil, interruptRefused(rt.task.name)
	}
	idx := sp.counter
	sp.counter++
	if idx < len(sp.answers) {
		return sp.answers[idx], nil
	}
	id := interruptID(rt.task.ID(), idx)
	if v, ok := sp.resume.lookup(id); ok {
		sp.answers = append(sp.answers, v)
		sp.consumed = true
		return v, nil
	}
	if v, ok := sp.resume.take(); ok {
		sp.answers = append(sp.answers, v)
		sp.consumed = true
		return v, nil
	}
	in := Interruption{ID: id, Value: payload, Node: rt.task.name, Namespace: rt.shared.ns}
	sp.raised = append(sp.raised, in)
	sp.paused = true
	return nil, &interruptSignal{in: in}
}

// InterruptAs is [Interrupt] with the resume value converted to T (through
// JSON when it is not a T already, as after a checkpoint round trip).
func InterruptAs[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	v, err := Interrupt(ctx, payload)
	if err != nil {
		return zero, err
	}
	if t, ok := v.(T); ok {
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("graph: resume value %v: %w", v, err)
	}
	var t T
	if err := json.Unmarshal(b, &t); err != nil {
		return zero, fmt.Errorf("graph: resume value %s is not a %T: %w", b, zero, err)
	}
	return t, nil
}
