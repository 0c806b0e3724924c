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
	"sync/atomic"
	"time"
)

type runtimeKey struct{}

// runShared is what every task of a run shares.
type runShared struct {
	stop       int // the step past the recursion limit
	limit      int // the run's recursion limit, which its subgraphs inherit
	ns         string
	thread     string
	saver      checkpoint.Saver
	modes      Mode
	subgraphs  bool
	durability Durability
	parents    map[string]string
	abandoned  *sync.WaitGroup // see WithAbandonedNodes
	// names are the graph's node names, Start's first (see
	// Graph.hdrNames), which task headers index (see taskPos).
	names []*string
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
	abandoned  *sync.WaitGroup
	limit      int
}

// nested describes the task to a graph run inside it.
func (rt *taskCtx) nested() *nestedInfo {
	sh := rt.hdr.env.run
	parents := make(map[string]string, len(sh.parents)+1)
	for k, v := range sh.parents {
		parents[k] = v
	}
	parents[sh.ns] = rt.hdr.env.cp
	return &nestedInfo{
		ns: joinNS(sh.ns, rt.hdr.nodeName()+":"+rt.hdr.ID()), threadID: sh.thread, saver: sh.saver,
		resuming: rt.hdr.resuming(), resume: rt.hdr.resumeInput(), emit: rt.hdr.env.emit, modes: sh.modes,
		subgraphs: sh.subgraphs, durability: sh.durability, parents: parents, abandoned: sh.abandoned, limit: sh.limit,
	}
}

// taskEnv is what the contexts of tasks share: the context they derive
// from, the run's shared settings, the sink of their stream events and the
// checkpoint their step starts from. Nothing in it changes once it is
// made: a run's inline tasks share one until the next checkpoint (see
// loop.taskEnv), a concurrent step's tasks one of their own (see
// runConcurrent), and a task whose hook derived a context gets one alone.
type taskEnv struct {
	context.Context
	run  *runShared
	emit func(Event)
	cp   string
}

// taskCtx is a task's context: its header, which reaches what it shares
// with other tasks (the run's context among it) through its env. Every
// task gets a new one, handed out by the loop's slab (see loop.newEnv) and
// never handed out twice. Nothing it holds changes once handed out (the
// scratchpad is guarded by its own mutex), and what it points to is not
// reused: a context kept by the node's goroutines after the node returned
// reads the same values for ever, without a data race. It is kept small
// (24 bytes, three words), as every task gets one: in a process whose
// garbage collector has not cycled yet every byte of it is memory touched
// for the first time, and afterwards every byte brings the next cycle
// nearer (on a small heap a cycle keeps the write barrier on for
// milliseconds of wall time).
type taskCtx struct {
	hdr taskHeader
}

func (c *taskCtx) Deadline() (time.Time, bool) { return c.hdr.env.Deadline() }
func (c *taskCtx) Done() <-chan struct{}       { return c.hdr.env.Done() }
func (c *taskCtx) Err() error                  { return c.hdr.env.Err() }

func (c *taskCtx) Value(key any) any {
	if _, ok := key.(runtimeKey); ok {
		return c
	}
	return c.hdr.env.Value(key)
}

// taskHeader identifies a task; its ID is computed when first asked for.
// Its identity is written before the task runs and only read after. A
// header is made for every task (see loop.newEnv), so it is kept to three
// words: what the tasks of a step share is in env, the node's name is an
// index into the run's table of the graph's names (see runShared.names),
// packed in pos with the step, position and flags, and the ID and the
// interrupt bookkeeping, which many tasks never need, are in more, made on
// first use.
type taskHeader struct {
	env  *taskEnv // nil for a command's task, which no node sees
	more atomic.Pointer[taskMore]
	pos  taskPos
}

// taskMore is the part of a task's header made when first needed: its ID
// and its scratchpad, each set once. detachedMore stands for it in a task
// whose node returned before it needed either.
type taskMore struct {
	id atomic.Pointer[string]
	sp atomic.Pointer[scratchpad]
	// big holds the name, step and position of a task whose pos could not
	// (see taskPos); it is set before the task is handed out.
	big *bigPos
}

// bigPos is the name, step and position of a task outside taskPos's
// range, or whose name is not in its run's table.
type bigPos struct {
	step, idx int
	name      string
}

// detachedMore is the more of every task whose node returned before it
// needed an ID or a scratchpad. It is never changed: ID replaces it.
var detachedMore = func() *taskMore {
	m := &taskMore{}
	m.sp.Store(detachedPad)
	return m
}()

// taskPos packs a task's step, its node's name, its position among the
// step's Sends (0 for a pulled node) and its flags into one word: the step
// plus one in the low 26 bits (steps start at -1, the input's), then the
// push and resuming flags, then a flag saying that the step, position and
// name are in more.big instead, then the name's index in the run's table
// of names (14 bits), and the position in the top 21 bits. No run reaches
// a step of 2^26, a graph of 2^14 nodes or 2^21 Sends in one step in
// practice; all are kept exactly all the same.
type taskPos uint64

const (
	posStepBits  = 26
	posPush      = taskPos(1) << posStepBits
	posResuming  = posPush << 1
	posBig       = posPush << 2
	posNameShift = posStepBits + 3
	posMaxName   = 1<<(posIdxShift-posNameShift) - 1
	posIdxShift  = 43
	posMaxIdx    = 1<<(64-posIdxShift) - 1
)

// setPos sets the header's step, position, push flag and node name (and
// clears the resuming flag); ni is name's index in the names of the run
// of h.env (see runShared.names), or -1 when it has none. It is called
// before the task is handed out, once h.env is set.
func (h *taskHeader) setPos(step, idx int, push bool, name string, ni int) {
	// (Unsigned, a negative step, position or index is out of range too.)
	if s := uint64(step + 1); s < 1<<posStepBits && uint64(idx) <= posMaxIdx && uint64(ni) <= posMaxName &&
		h.env != nil && uint64(ni) < uint64(len(h.env.run.names)) {
		h.pos = taskPos(s) | taskPos(ni)<<posNameShift | taskPos(idx)<<posIdxShift
		if push {
			h.pos |= posPush
		}
		return
	}
	h.setBig(step, idx, push, name)
}

// setBig keeps the task's step, position and name in more.big (see
// setPos).
func (h *taskHeader) setBig(step, idx int, push bool, name string) {
	h.pos = posBig
	if push {
		h.pos |= posPush
	}
	h.more.Store(&taskMore{big: &bigPos{step: step, idx: idx, name: name}})
}

// setResuming marks the task as one with pending writes, before it is
// handed out.
func (h *taskHeader) setResuming() { h.pos |= posResuming }

// step returns the task's step.
func (h *taskHeader) step() int {
	if h.pos&posBig != 0 {
		return h.more.Load().big.step
	}
	return int(h.pos&(1<<posStepBits-1)) - 1
}

// idx returns the task's position among its step's Sends.
func (h *taskHeader) idx() int {
	if h.pos&posBig != 0 {
		return h.more.Load().big.idx
	}
	return int(h.pos >> posIdxShift)
}

// push reports whether the task runs a Send.
func (h *taskHeader) push() bool { return h.pos&posPush != 0 }

// resuming reports whether the task has pending writes: a subgraph in it
// resumes.
func (h *taskHeader) resuming() bool { return h.pos&posResuming != 0 }

// copyIdentity makes h, not handed out yet, name the same task as th: the
// same name, step, position and flags, so that it computes the same ID.
// Its env must have th's run, as the name's index is into its names.
func (h *taskHeader) copyIdentity(th *taskHeader) {
	h.pos = th.pos
	if th.pos&posBig != 0 {
		h.more.Store(&taskMore{big: th.more.Load().big})
	}
}

// nodeName returns the name of the task's node.
func (h *taskHeader) nodeName() string {
	switch {
	case h.pos&posBig != 0:
		return h.more.Load().big.name
	case h.env == nil: // never given a name (see setPos)
		return ""
	}
	return *h.env.run.names[h.pos>>posNameShift&posMaxName]
}

// scratch returns the task's scratchpad, making it on first use (a
// goroutine of the node may race the runtime to it). A task detached
// before it needed one gets detachedPad.
func (h *taskHeader) scratch() *scratchpad {
	m := h.more.Load()
	if m == nil {
		h.more.CompareAndSwap(nil, new(taskMore))
		m = h.more.Load()
	}
	if sp := m.sp.Load(); sp != nil {
		return sp
	}
	m.sp.CompareAndSwap(nil, new(scratchpad))
	return m.sp.Load()
}

// pad returns the task's scratchpad, nil if it has none yet.
func (h *taskHeader) pad() *scratchpad {
	if m := h.more.Load(); m != nil {
		return m.sp.Load()
	}
	return nil
}

// detachedPad is the scratchpad of every task whose node returned before
// it needed one: an Interrupt through a context kept since is refused.
var detachedPad = &scratchpad{detached: true}

// detach ends the node's access to the task's scratchpad (see
// scratchpad.detached).
func (h *taskHeader) detach() {
	if h.more.Load() == nil && h.more.CompareAndSwap(nil, detachedMore) {
		return
	}
	m := h.more.Load()
	if m.sp.Load() == nil && m.sp.CompareAndSwap(nil, detachedPad) {
		return
	}
	m.sp.Load().detach()
}

// interrupts returns whether the task paused, and its interrupts.
func (h *taskHeader) interrupts() (paused bool, raised []Interruption) {
	sp := h.pad()
	if sp == nil || sp == detachedPad {
		return false, nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.paused, sp.raised
}

// resumeInput returns the resume values of the run's first step, if the
// task has them.
func (h *taskHeader) resumeInput() *resumeInput {
	sp := h.pad()
	if sp == nil {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.resume
}

// answers returns the resume values the task took.
func (h *taskHeader) answers() []any {
	sp := h.pad()
	if sp == nil || sp == detachedPad {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.answers
}

// clearPause forgets the task's pause (its interrupts were refused or
// ignored).
func (h *taskHeader) clearPause() {
	if sp := h.pad(); sp != nil {
		sp.mu.Lock()
		sp.paused, sp.raised = false, nil
		sp.mu.Unlock()
	}
}

// ID returns the task's ID, a hash of the checkpoint it starts from, its
// namespace, step, node and position.
func (h *taskHeader) ID() string {
	m := h.more.Load()
	if m != nil {
		if id := m.id.Load(); id != nil {
			return *id
		}
	}
	kind := "pull"
	if h.push() {
		kind = "push"
	}
	ns, cp := "", ""
	if h.env != nil {
		ns, cp = h.env.run.ns, h.env.cp
	}
	id := hashID(cp + "|" + ns + "|" + strconv.Itoa(h.step()) + "|" + h.nodeName() + "|" + kind + "|" + strconv.Itoa(h.idx()))
	for {
		switch m {
		case nil:
			nm := new(taskMore)
			nm.id.Store(&id)
			if h.more.CompareAndSwap(nil, nm) {
				return id
			}
		case detachedMore:
			// The shared stand-in is never written: a detached task that
			// is asked its ID gets a more of its own.
			nm := new(taskMore)
			nm.sp.Store(detachedPad)
			nm.id.Store(&id)
			if h.more.CompareAndSwap(detachedMore, nm) {
				return id
			}
		default:
			m.id.CompareAndSwap(nil, &id) // a racing caller computed the same
			return *m.id.Load()
		}
		m = h.more.Load()
	}
}

func hashID(s string) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	var b [16]byte
	return hex.EncodeToString(h.Sum(b[:0]))
}

func runtimeFrom(ctx context.Context) *taskCtx {
	rt, _ := ctx.Value(runtimeKey{}).(*taskCtx)
	return rt
}

// Step returns the superstep the calling node runs in (0 is the step that
// applies the input), or -1 outside a node.
func Step(ctx context.Context) int {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.hdr.step()
	}
	return -1
}

// RemainingSteps returns how many supersteps the run may still take before
// its recursion limit, counting the current one; an agent can stop
// gracefully when it gets low. It returns -1 outside a node.
func RemainingSteps(ctx context.Context) int {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.hdr.env.run.stop - rt.hdr.step()
	}
	return -1
}

// TaskID returns the ID of the calling node's task, or "" outside a node.
// It is stable across re-runs of the same task against the same checkpoint.
func TaskID(ctx context.Context) string {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.hdr.ID()
	}
	return ""
}

// ThreadID returns the thread the calling node's run is on (the id given
// with [WithThread]; a subgraph's nodes see their parent's), or "" outside
// a node or in a run without a thread. A node that calls another service
// keyed by conversation, such as a remote graph, maps its thread from it.
func ThreadID(ctx context.Context) string {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.hdr.env.run.thread
	}
	return ""
}

// NodeName returns the name of the calling node, or "" outside a node.
func NodeName(ctx context.Context) string {
	if rt := runtimeFrom(ctx); rt != nil {
		return rt.hdr.nodeName()
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
	if rt == nil || rt.hdr.env.run.modes&mode == 0 {
		return func(T) {}
	}
	emit, ev := rt.hdr.env.emit, Event{Mode: mode, Namespace: rt.hdr.env.run.ns, Step: rt.hdr.step(), Node: rt.hdr.nodeName(), TaskID: rt.hdr.ID()}
	return func(payload T) {
		ev := ev
		ev.Payload = payload
		emit(ev)
	}
}

// scratchpad holds a task's interrupt bookkeeping. In a run without a
// checkpointer, where Interrupt refuses to pause, paused is set with nothing
// raised: the task stops as if interrupted, and execute fails it (see
// errInterruptRefused) even if the node dropped Interrupt's error.
type scratchpad struct {
	mu      sync.Mutex
	answers []any
	counter int
	resume  *resumeInput
	raised  []Interruption
	paused  bool
	// detached is set once the runtime stopped waiting for the node (it
	// returned, timed out or was abandoned): a goroutine of the node that
	// still holds its context can then no longer interrupt or take resume
	// values.
	detached bool
}

// detach ends the node's access to the scratchpad (see detached).
func (sp *scratchpad) detach() {
	if sp == detachedPad {
		return
	}
	sp.mu.Lock()
	sp.detached = true
	sp.mu.Unlock()
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

// errInterruptRefused is the error of an Interrupt in a run without a
// checkpointer (a task failing with it is wrapped in a NodeError naming
// the node).
var errInterruptRefused = fmt.Errorf("called Interrupt in a run without a checkpointer, which could never be resumed: %w", ErrNoCheckpointer)

// errDetached is what Interrupt returns to a node the runtime stopped
// waiting for (it timed out, or its run was cancelled).
var errDetached = errors.New("graph: Interrupt called through the context of a node that has returned, or that the run abandoned (it timed out, or the run was cancelled)")

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
	return interrupt(ctx, payload, "")
}

// interrupt is Interrupt recording what the node waits for (see
// Interruption.Want).
func interrupt(ctx context.Context, payload any, want string) (any, error) {
	rt := runtimeFrom(ctx)
	if rt == nil {
		return nil, errors.New("graph: Interrupt called outside a graph node")
	}
	sp := rt.hdr.scratch()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.detached {
		return nil, errDetached
	}
	if rt.hdr.env.run.saver == nil {
		sp.paused = true
		// Named: the node may wrap or log it. (Its task then fails with
		// errInterruptRefused, in a NodeError naming the node.)
		return nil, fmt.Errorf("graph: node %s %w", rt.hdr.nodeName(), errInterruptRefused)
	}
	idx := sp.counter
	sp.counter++
	if idx < len(sp.answers) {
		return sp.answers[idx], nil
	}
	id := interruptID(rt.hdr.ID(), idx)
	if v, ok := sp.resume.lookup(id); ok {
		sp.answers = append(sp.answers, v)
		return v, nil
	}
	if v, ok := sp.resume.take(); ok {
		sp.answers = append(sp.answers, v)
		return v, nil
	}
	in := Interruption{ID: id, Value: payload, Node: rt.hdr.nodeName(), Namespace: rt.hdr.env.run.ns, Want: want}
	sp.raised = append(sp.raised, in)
	sp.paused = true
	return nil, &interruptSignal{in: in}
}

// InterruptAs is [Interrupt] with the resume value converted to T (through
// JSON when it is not a T already, as after a checkpoint round trip). The
// interrupt records what a T decodes from ([Interruption.Want]), so that
// [Graph.Resume] refuses an answer of another shape — "yes" for a bool —
// with a [*ResumeTypeError] before it is used, and the question stays
// pending.
func InterruptAs[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	v, err := interrupt(ctx, payload, wantOf[T]())
	if err != nil {
		return zero, err
	}
	if t, ok := v.(T); ok {
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("resume value %v cannot be encoded to be read as %T: %w", v, zero, err)
	}
	var t T
	if err := json.Unmarshal(b, &t); err != nil {
		return zero, fmt.Errorf("resume value %s cannot be read as %T: %w", b, zero, err)
	}
	return t, nil
}
