package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// ErrNoCheckpointer is returned by operations that need a checkpointer
// (resume, GetState, History, UpdateState) on a graph compiled without one.
var ErrNoCheckpointer = errors.New("graph: no checkpointer set (compile with graph.WithCheckpointer)")

// ErrNoThread is returned when a graph with a checkpointer runs without
// [WithThread].
var ErrNoThread = errors.New("graph: the graph has a checkpointer, so the run needs a thread: pass graph.WithThread(id)")

// ErrAmbiguousResume is returned when a single resume value is given while
// several interrupts are pending.
var ErrAmbiguousResume = errors.New("graph: when there are multiple pending interrupts, you must specify the interrupt id when resuming (use Command.ResumeMap)")

// ErrNothingToResume is returned by Resume on a thread with no checkpoint.
var ErrNothingToResume = errors.New("graph: nothing to resume")

// task is one node execution in a superstep.
type task[S any] struct {
	hdr   *taskHeader // in env: a new one for every task (see newEnv)
	name  string
	node  *node[S] // nil for Start
	push  bool
	idx   int
	input S
	in    any // the input of a node with its own input type (see AddNodeWithInput)

	done     bool // has a successful result
	restored bool // result came from pending writes or the cache
	cached   bool
	out      S
	route    Route[S]
	err      error
	attempts int
	one      [1]stateChannel
	local    S           // the input with the task's own writes, for its branches
	cmd      *Command[S] // the routing a command node returned, if any
	env      *taskCtx    // the context of this execution, never reused (see newEnv)
}

func (t *task[S]) interrupted() bool {
	paused, _ := t.hdr.interrupts()
	return paused
}

// nodeInput is what the task's node takes: its own input (see
// AddNodeWithInput), or the state.
func (t *task[S]) nodeInput() any {
	if t.node != nil && t.node.inFn != nil {
		return t.in
	}
	return t.input
}

// goexited is called as execute unwinds: a task that has no result, error
// or interrupt then was unwound by runtime.Goexit (from its node or a
// branch) and failed with ErrGoexit. (During a panic the runtime does not
// recover, marking it changes nothing.)
func (t *task[S]) goexited() {
	if t.err == nil && !t.done && !t.interrupted() {
		var zero S
		t.out, t.cmd = zero, nil
		t.err = &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: ErrGoexit}
	}
}

// frontier is what runs next.
type frontier[S any] struct {
	input    *S
	nodes    []string
	sends    []Send[S]
	joins    map[int]seenSources
	deferred []string
	last     []string // the nodes of the step that made this frontier
	// joined lists join targets whose join fired and that have not run
	// yet: like LangGraph's barrier channel, a fired join keeps its target
	// triggered until it runs (an UpdateState in between keeps it).
	joined []string
}

// seenSources is the set of a join's sources that ran since the join last
// fired, by position in the join's source list.
type seenSources []uint64

// with returns s with source i added.
func (s seenSources) with(i int) seenSources {
	for len(s) <= i/64 {
		s = append(s, 0)
	}
	s[i/64] |= 1 << (i % 64)
	return s
}

func (s seenSources) has(i int) bool { return i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

func (s seenSources) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

func (f *frontier[S]) empty() bool {
	return f.input == nil && len(f.nodes) == 0 && len(f.sends) == 0
}

// loop runs one invocation of a graph.
type loop[S any] struct {
	g        *Graph[S]
	cfg      runConfig
	ns       string
	saver    checkpoint.Saver
	parents  map[string]string
	vals     S
	versions []int64
	saved    []int64 // versions as of the last saved checkpoint
	maxVer   int64
	fr       frontier[S]
	step     int
	stop     int
	cpID     string
	cpTime   time.Time // when checkpoint cpID was made
	frBuf    []byte    // scratch for encoding the frontier
	frLast   []byte    // the frontier of the last checkpoint made
	cpStep   int
	fork     bool         // the next checkpoint saved branches off an older one
	lease    *threadLease // the thread's lease, held by a root run
	restored map[string]*restoredTask[S]
	resume   *resumeInput
	skipBrk  bool
	sink     func(Event) // nil when nothing is streamed
	modes    Mode

	nested *nestedInfo

	shared *runShared
	emitFn func(Event)
	pool   []*task[S]
	npool  int
	tasks  []*task[S]
	wbuf   []stateChannel
	todo   []*task[S]
	next   S           // the state being merged at a barrier
	view   *S          // what the caller sees when the run paused
	spare  frontier[S] // the buffers of the frontier before last

	accumulate bool
	accum      S // every write of the run's nodes, in order (for subgraphs)

	envs []taskCtx // fresh task contexts (see newEnv)
	// watch is the run's context when it can be cancelled (see watched):
	// the nodes then run apart from the loop (see attemptApart).
	watch context.Context

	// dur writes what the run saves, as its Durability says (nil without
	// a saver).
	dur durabilityMode[S]
}

func (g *Graph[S]) newLoop(opts []RunOption) *loop[S] {
	l, _ := g.loops.Get().(*loop[S])
	if l == nil {
		n := len(g.sc.fields)
		vs := make([]int64, 2*n)
		l = &loop[S]{versions: vs[:n:n], saved: vs[n:]}
	}
	l.g, l.saver, l.cfg = g, g.saver, runConfig{limit: DefaultRecursionLimit}
	for _, o := range g.runDefaults {
		o(&l.cfg)
	}
	for _, o := range opts {
		o(&l.cfg)
	}
	return l
}

// release returns a finished loop to the graph's pool, keeping its buffers.
func (g *Graph[S]) release(l *loop[S]) {
	clear(l.versions)
	clear(l.saved)
	// The pooled tasks keep their last contents until newTask reuses them
	// (or the pool drops the loop at a GC): clearing them here would
	// zero every task twice a run.
	buf := func(f frontier[S]) frontier[S] {
		clear(f.sends[:cap(f.sends)])
		return frontier[S]{nodes: f.nodes[:0], last: f.last[:0], sends: f.sends[:0]}
	}
	clear(l.tasks[:cap(l.tasks)])
	clear(l.todo[:cap(l.todo)])
	*l = loop[S]{
		versions: l.versions, saved: l.saved, pool: l.pool,
		tasks: l.tasks[:0], wbuf: l.wbuf[:0], todo: l.todo[:0], envs: l.envs, frBuf: l.frBuf[:0],
		spare: buf(l.spare), fr: buf(l.fr),
	}
	g.loops.Put(l)
}

// Invoke runs the graph on input — the fields written on it (with Set,
// Append, …) are merged through their reducers, like a node's writes — and
// returns the final state. A paused run returns its state so far and an
// [*Interrupted] error.
func (g *Graph[S]) Invoke(ctx context.Context, input S, opts ...RunOption) (S, error) {
	l := g.newLoop(opts)
	err := l.run(ctx, &input, nil)
	out := l.output()
	g.release(l)
	return out, err
}

// output is the state a caller sees: the run's state, or, when the run
// paused, that state with the writes of the step's finished tasks.
func (l *loop[S]) output() S {
	if l.view != nil {
		return *l.view
	}
	return l.vals
}

// Resume continues the thread's run from its latest checkpoint (or the one
// of [WithCheckpointID]): it answers pending interrupts with cmd.Resume or
// cmd.ResumeMap, applies cmd.Update, adds cmd.Goto, and re-runs the tasks
// of the interrupted or failed step that did not finish. An empty Command
// just continues.
func (g *Graph[S]) Resume(ctx context.Context, cmd Command[S], opts ...RunOption) (S, error) {
	l := g.newLoop(opts)
	err := l.run(ctx, nil, &cmd)
	out := l.output()
	g.release(l)
	return out, err
}

// Stream runs the graph like [Graph.Invoke] and yields events of the modes
// chosen with [WithStreamModes] (default [ModeUpdates]) as they happen. The
// run's error, if any (an [*Interrupted] when it pauses), is yielded last.
// Stopping the iteration cancels the run.
func (g *Graph[S]) Stream(ctx context.Context, input S, opts ...RunOption) iter.Seq2[Event, error] {
	return g.stream(ctx, &input, nil, opts)
}

// StreamResume is [Graph.Resume] as a stream.
func (g *Graph[S]) StreamResume(ctx context.Context, cmd Command[S], opts ...RunOption) iter.Seq2[Event, error] {
	return g.stream(ctx, nil, &cmd, opts)
}

func (g *Graph[S]) stream(ctx context.Context, input *S, cmd *Command[S], opts []RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		l := g.newLoop(opts)
		if l.cfg.modes == 0 {
			l.cfg.modes = ModeUpdates
		}
		stopped := false
		l.sink = func(ev Event) {
			if stopped {
				return
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}
		err := l.run(ctx, input, cmd)
		if err != nil && !stopped {
			yield(Event{}, err)
		}
	}
}

func (l *loop[S]) run(ctx context.Context, input *S, cmd *Command[S]) (err error) {
	l.modes = streamModes(l.cfg.modes)
	if l.sink == nil {
		l.modes = 0
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.cfg.limit < 1 {
		return fmt.Errorf("graph: recursion limit must be at least 1, got %d", l.cfg.limit)
	}
	if rt := runtimeFrom(ctx); rt != nil && rt.shared != nil {
		n := rt.nested()
		l.nested = n
		l.parents = n.parents
		l.ns = n.ns
		if l.saver == nil {
			l.saver = n.saver
		}
		if l.cfg.thread == "" {
			l.cfg.thread = n.threadID
		}
		l.cfg.durability = n.durability
		if n.subgraphs {
			l.sink, l.modes = n.emit, n.modes
		}
	}
	l.shared = &runShared{ns: l.ns, thread: l.cfg.thread, saver: l.saver, modes: l.modes,
		subgraphs: l.cfg.subgraphs, durability: l.cfg.durability, parents: l.parents}
	if l.sink != nil {
		l.emitFn = l.emit
	} else {
		l.emitFn = func(Event) {}
	}
	if l.saver != nil && l.cfg.thread == "" {
		return ErrNoThread
	}
	if l.nested == nil && l.saver != nil {
		// One live run per thread: the lease is held until the last
		// checkpoint is saved (the async saver closes first).
		lease, lerr := l.g.acquireLease(ctx, l.saver, l.cfg.thread, l.cfg.runID)
		if lerr != nil {
			return lerr
		}
		if lease != nil {
			l.lease = lease
			defer func() {
				if lost := lease.release(ctx); lost != nil && !errors.Is(err, checkpoint.ErrLeaseLost) {
					err = saverFailed(lost, err)
				}
			}()
		}
	}
	if h := l.g.hooks; h != nil && h.RunStart != nil {
		info := RunInfo{Graph: l.g.name, ThreadID: l.cfg.thread, Namespace: l.ns}
		ctx = h.RunStart(ctx, info)
		if h.RunEnd != nil {
			defer func() { h.RunEnd(ctx, info, err) }()
		}
	}
	if l.saver != nil {
		// Closed before RunEnd sees the run's error: what could not be
		// saved is part of it.
		l.dur = newDurability[S](l.cfg.durability)
		defer func() {
			if werr := l.dur.close(ctx, l); werr != nil {
				if errors.Is(err, errAsyncSaveFailed) {
					err = nil
				}
				err = saverFailed(werr, err)
			}
		}()
	}
	if err := l.load(ctx, input, cmd); err != nil {
		return l.ctxErr(ctx, err)
	}
	err = l.loop(ctx)
	return l.ctxErr(ctx, err)
}

// errAsyncSaveFailed stops a run whose background checkpointing failed;
// run replaces it with the saver's error.
var errAsyncSaveFailed = errors.New("graph: background checkpointing failed")

// saverFailed reports a checkpoint that could not be saved at the end of a
// run; it wins over how the run ended (even a pause: without its
// checkpoint the run cannot be resumed).
func saverFailed(werr, runErr error) error {
	if runErr == nil {
		return werr
	}
	return fmt.Errorf("%w (the run itself ended with: %v)", werr, runErr)
}

// ctxErr makes cancellation of the caller's context surface as the
// context's error.
func (l *loop[S]) ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		var intr *Interrupted
		if !errors.As(err, &intr) {
			return ctx.Err()
		}
	}
	return err
}

// load restores the thread's checkpoint and applies input or cmd.
func (l *loop[S]) load(ctx context.Context, input *S, cmd *Command[S]) error {
	metaStep := -2
	var tuple *checkpoint.Tuple
	if l.saver != nil {
		t, err := l.saver.Get(ctx, checkpoint.Ref{ThreadID: l.cfg.thread, Namespace: l.ns, ID: l.cfg.checkpointID})
		switch {
		case errors.Is(err, checkpoint.ErrNotFound) && l.cfg.checkpointID == "":
		case err != nil:
			return fmt.Errorf("graph: loading checkpoint of thread %q: %w", l.cfg.thread, err)
		default:
			tuple = t
		}
	}
	// Time travel: the first checkpoint follows the one asked for, which
	// need not be the thread's latest.
	l.fork = l.cfg.checkpointID != ""
	if tuple != nil {
		if err := l.restore(tuple); err != nil {
			return err
		}
		metaStep = tuple.Metadata.Step
		if l.nested != nil && l.nested.resuming || cmd != nil {
			if err := l.restorePending(tuple); err != nil {
				return err
			}
		}
	}
	l.step = metaStep + 1
	l.stop = l.step + l.cfg.limit + 1
	l.shared.stop = l.stop
	if cmd == nil && l.nested != nil && l.nested.resuming && tuple != nil {
		// A subgraph whose parent task is re-run resumes instead of
		// restarting.
		cmd = &Command[S]{}
		input = nil
	}
	if cmd != nil {
		return l.applyCommand(ctx, tuple, cmd)
	}
	// Fresh input: pending tasks of the thread are dropped.
	l.restored = nil
	var zero S
	l.accum = zero
	l.fr = frontier[S]{input: input, joins: l.fr.joins, nodes: l.fr.nodes[:0], sends: l.fr.sends[:0], last: l.fr.last[:0]}
	if l.saver != nil {
		if err := l.save(ctx, "input"); err != nil {
			return err
		}
	}
	l.step++
	return nil
}

func (l *loop[S]) applyCommand(ctx context.Context, tuple *checkpoint.Tuple, cmd *Command[S]) error {
	if l.saver == nil {
		return fmt.Errorf("%w: cannot resume a run", ErrNoCheckpointer)
	}
	if tuple == nil {
		return fmt.Errorf("%w: thread %q has no checkpoint: %w", ErrNothingToResume, l.cfg.thread, checkpoint.ErrNotFound)
	}
	if cmd.Parent {
		return errors.New("graph: there is no parent graph to send the command to")
	}
	hasResume := cmd.ResumeMap != nil || cmd.Resume != nil
	if cmd.Resume != nil && cmd.ResumeMap == nil {
		if n := l.pendingInterrupts(); n > 1 {
			return fmt.Errorf("%w (%d pending)", ErrAmbiguousResume, n)
		}
	}
	if l.nested != nil && l.nested.resume != nil {
		l.resume = l.nested.resume
	} else if hasResume {
		l.resume = &resumeInput{byID: cmd.ResumeMap, scalar: cmd.Resume, hasValue: cmd.Resume != nil}
	}
	if l.cfg.checkpointID != "" && !hasResume && l.nested == nil {
		// Replay: the tasks of that checkpoint run again, interrupts fire
		// again, and the history forks.
		l.restored = nil
		if src := tuple.Metadata.Source; src != "update" && src != "fork" {
			if err := l.saveAt(ctx, "fork", tuple.Metadata.Step); err != nil {
				return err
			}
		}
	}
	if l.g.writesAny(&cmd.Update) || len(cmd.Goto) > 0 || len(cmd.Sends) > 0 {
		if err := l.validateRoute(cmd.Goto, cmd.Sends); err != nil {
			return err
		}
		t := &task[S]{hdr: new(taskHeader), name: "command", out: cmd.Update, route: Route[S]{Nodes: cmd.Goto, Sends: cmd.Sends}}
		if err := l.putWrites(ctx, cmdTaskPrefix+checkpoint.NewID(), t); err != nil {
			return err
		}
		if err := l.applyStandalone(t); err != nil {
			return err
		}
	}
	l.skipBrk = true
	l.emitValues(l.step, l.vals, nil)
	return nil
}

// applyStandalone merges a write set outside a superstep (a command's
// update and goto).
func (l *loop[S]) applyStandalone(t *task[S]) error {
	if _, err := l.mergeVersions([]*task[S]{t}, &l.vals, true); err != nil {
		return err
	}
	l.fr.nodes = sortedUnique(append(l.fr.nodes, filterEnd(t.route.Nodes)...))
	l.fr.sends = append(l.fr.sends, t.route.Sends...)
	return nil
}

func (l *loop[S]) pendingInterrupts() int {
	n := 0
	for _, r := range l.restored {
		if len(r.interrupts) > 0 && !r.done {
			n += len(r.interrupts)
		}
	}
	return n
}

// loop runs supersteps until nothing is triggered.
func (l *loop[S]) loop(ctx context.Context) error {
	before, after, err := l.breakpoints()
	if err != nil {
		return err
	}
	l.watch = watched(ctx)
	for {
		if l.step > l.stop {
			return &RecursionError{Limit: l.cfg.limit, LastNodes: sortedUnique(append([]string(nil), l.fr.last...))}
		}
		tasks := l.prepare()
		if len(tasks) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !l.skipBrk && before != nil {
			var hit []string
			for _, t := range tasks {
				if before[t.name] {
					hit = append(hit, t.name)
				}
			}
			if len(hit) > 0 {
				hit = sortedUnique(hit)
				l.emitBreakpoint(l.step, Breakpoint{Nodes: hit})
				return &Interrupted{Before: hit}
			}
		}
		if err := l.runTasks(ctx, tasks); err != nil {
			return err
		}
		var intr *Interrupted
		for _, t := range tasks {
			if t.interrupted() {
				if intr == nil {
					intr = &Interrupted{}
				}
				_, raised := t.hdr.interrupts()
				intr.Interrupts = append(intr.Interrupts, raised...)
			}
		}
		if intr != nil {
			return l.pause(ctx, tasks, intr)
		}
		changed, err := l.apply(tasks)
		if err != nil {
			return err
		}
		if changed {
			l.emitValues(l.step, l.vals, nil)
		}
		if err := l.save(ctx, "loop"); err != nil {
			return err
		}
		if l.dur != nil && l.dur.failed() {
			return errAsyncSaveFailed // the saver's error is reported by run
		}
		l.step++
		l.skipBrk = false
		l.restored = nil
		l.resume = nil
		if after != nil {
			var hit []string
			for _, t := range tasks {
				if after[t.name] {
					hit = append(hit, t.name)
				}
			}
			if len(hit) > 0 {
				hit = sortedUnique(hit)
				l.emitBreakpoint(l.step-1, Breakpoint{Nodes: hit, After: true})
				return &Interrupted{After: hit}
			}
		}
	}
}

// breakpoints returns the run's breakpoints: those of its options, or the
// graph's. A run without a checkpointer cannot have any.
func (l *loop[S]) breakpoints() (before, after map[string]bool, err error) {
	before, after = l.g.interruptBefore, l.g.interruptAfter
	if !l.cfg.hasBefore && !l.cfg.hasAfter {
		if l.saver == nil && l.g.breakNoSaver != nil {
			return nil, nil, l.g.breakNoSaver
		}
		return before, after, nil
	}
	for _, list := range [][]string{l.cfg.before, l.cfg.after} {
		for _, n := range list {
			if n != "*" && l.g.nodes[n] == nil {
				return nil, nil, fmt.Errorf("graph: interrupt node %q not found", n)
			}
		}
	}
	if l.cfg.hasBefore {
		before = expandInterrupts(l.cfg.before, l.g.names)
	}
	if l.cfg.hasAfter {
		after = expandInterrupts(l.cfg.after, l.g.names)
	}
	if l.saver == nil {
		if err := breakpointsNeedSaver(before, after); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

// pause ends a step in which some task interrupted: the finished tasks'
// writes are kept as pending writes, and the caller sees the state with
// them applied.
func (l *loop[S]) pause(ctx context.Context, tasks []*task[S], intr *Interrupted) error {
	if l.saver != nil {
		for _, t := range tasks {
			if t.interrupted() {
				if err := l.putWrites(ctx, t.hdr.ID(), t); err != nil {
					return err
				}
			}
		}
	}
	var done []*task[S]
	for _, t := range tasks {
		if t.done {
			done = append(done, t)
		}
	}
	// The caller sees the state with the finished tasks' writes applied;
	// the run's own state (what a checkpoint would hold) stays as it was.
	view := l.vals
	if err := l.merge(done, &view); err == nil {
		l.view = &view
	}
	l.emitValues(l.step, l.output(), intr.Interrupts)
	return intr
}

// prepare lists the next step's tasks: triggered nodes by name, then Send
// tasks in order.
func (l *loop[S]) prepare() []*task[S] {
	l.npool = 0
	l.tasks = l.tasks[:0]
	if l.fr.input != nil {
		t := l.newTask(Start, nil, false, 0)
		t.input = l.vals
		l.initTask(t)
		return append(l.tasks, t)
	}
	for _, name := range l.fr.nodes {
		t := l.newTask(name, l.g.nodes[name], false, 0)
		t.input = l.vals
		l.initTask(t)
		l.tasks = append(l.tasks, t)
	}
	for i := range l.fr.sends {
		s := &l.fr.sends[i]
		t := l.newTask(s.Node, l.g.nodes[s.Node], true, i)
		if s.input != nil {
			t.in = s.input
		} else {
			l.g.materialize(&s.Arg, &t.input, &t.one)
		}
		l.initTask(t)
		l.tasks = append(l.tasks, t)
	}
	return l.tasks
}

// newTask takes a task from the run's pool (tasks of a finished step are
// reused) and resets it, keeping its route buffer.
func (l *loop[S]) newTask(name string, n *node[S], push bool, idx int) *task[S] {
	var t *task[S]
	if l.npool < len(l.pool) {
		t = l.pool[l.npool]
		nodes := t.route.Nodes[:0]
		*t = task[S]{}
		t.route.Nodes = nodes
	} else {
		t = &task[S]{}
		l.pool = append(l.pool, t)
	}
	l.npool++
	t.name, t.node, t.push, t.idx = name, n, push, idx
	t.env = l.newEnv()
	t.hdr = &t.env.hdr
	return t
}

// envSlab is how many task contexts are allocated at once.
const envSlab = 32

// newEnv hands out a fresh task context, with the task's header. They are
// allocated envSlab at a time and never handed out twice: a context may
// outlive its node, and must then go on reading the same values.
func (l *loop[S]) newEnv() *taskCtx {
	if len(l.envs) == 0 {
		l.envs = make([]taskCtx, envSlab)
	}
	e := &l.envs[0]
	l.envs = l.envs[1:]
	return e
}

func (l *loop[S]) initTask(t *task[S]) {
	t.hdr.cp, t.hdr.ns, t.hdr.step, t.hdr.name, t.hdr.push, t.hdr.idx = l.cpID, l.ns, l.step, t.name, t.push, int32(t.idx)
	if l.resume != nil {
		t.hdr.scratch().resume = l.resume // not handed out yet: no lock needed
	}
	if l.restored != nil {
		if r := l.restored[t.hdr.ID()]; r != nil {
			if r.answers != nil {
				t.hdr.scratch().answers = r.answers
			}
			t.hdr.resuming = true
			if r.done {
				t.done, t.restored, t.out, t.route = true, true, r.out, r.route
			}
		}
	}
}

// runTasks runs the step's tasks that have no result yet, concurrently when
// there are several. The first error cancels the others; an interrupt
// does not.
func (l *loop[S]) runTasks(ctx context.Context, tasks []*task[S]) error {
	todo := l.todo[:0]
	for _, t := range tasks {
		if t.done {
			l.emitUpdate(t, l.emitFn)
			continue
		}
		todo = append(todo, t)
	}
	l.todo = todo
	if l.modes&ModeTasks != 0 {
		for _, t := range todo {
			l.emitTaskStart(t)
		}
	}
	switch len(todo) {
	case 0:
		return nil
	case 1:
		t := todo[0]
		l.execute(ctx, t, l.emitFn)
		if t.err != nil {
			return l.fail(ctx, t)
		}
		l.finished(t, l.emitFn)
		return nil
	}
	return l.runConcurrent(ctx, todo)
}

// watched returns ctx when it can be cancelled, and nil otherwise: the
// context whose cancellation abandons the run's nodes (see attemptApart).
// It is the run's context, not a step's: a sibling's failure cancels a
// step's other tasks, and waits for them.
func watched(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return nil
	}
	return ctx
}

// runConcurrent runs several tasks at once, on a scheduler (see
// scheduler): the calling goroutine works among them, or, when the run
// streams, relays their events while goroutines work.
func (l *loop[S]) runConcurrent(ctx context.Context, todo []*task[S]) error {
	s := newScheduler(ctx)
	s.SetLimit(l.cfg.maxConc)
	streaming := l.modes != 0
	emit := l.emitFn
	var events chan Event
	if streaming {
		events = make(chan Event, 16)
		emit = func(ev Event) {
			if l.modes&ev.Mode != 0 {
				events <- ev
			}
		}
	}
	for _, t := range todo {
		s.Go(func(sctx context.Context) error {
			returned := false
			defer func() {
				if !returned {
					// Unwound by runtime.Goexit, from its node or branch.
					t.goexited()
				}
			}()
			l.execute(sctx, t, emit)
			returned = true
			if t.err == nil && t.done && l.saver != nil {
				// Saved even if a sibling fails meanwhile: that is what
				// spares this task a re-run.
				if err := l.putWrites(context.WithoutCancel(sctx), t.hdr.ID(), t); err != nil {
					t.err = err
				}
			}
			if t.err != nil {
				return t.err
			}
			l.finished(t, emit)
			return nil
		})
	}
	var werr error
	if streaming {
		done := make(chan struct{})
		go func() {
			defer close(done)
			werr = s.Wait()
		}()
	relay:
		for {
			select {
			case ev := <-events:
				l.sink(ev)
			case <-done:
				break relay
			}
		}
		for {
			select {
			case ev := <-events:
				l.sink(ev)
				continue
			default:
			}
			break
		}
	} else {
		werr = s.Wait()
	}
	var firstErr *task[S]
	for _, t := range todo {
		if t.err != nil && (firstErr == nil || isCancel(firstErr.err) && !isCancel(t.err)) {
			firstErr = t
		}
	}
	if firstErr != nil {
		return l.fail(ctx, firstErr)
	}
	if werr != nil {
		return werr // cancelled before every task ran
	}
	return nil
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fail records a failed task and returns its error.
func (l *loop[S]) fail(ctx context.Context, t *task[S]) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if l.saver != nil {
		_ = l.putWrites(context.WithoutCancel(ctx), t.hdr.ID(), t)
	}
	l.emitTaskResult(t, l.emitFn)
	return t.err
}

// taskContext returns the context t's node runs with: t's own, never
// written again once handed out.
func (l *loop[S]) taskContext(ctx context.Context, t *task[S], emit func(Event)) context.Context {
	e := t.env
	e.Context = ctx
	e.emit, e.shared = emit, l.shared
	return e
}

// execute runs one task with its retry policy, timeout and cache, and
// resolves where it goes next. A node (or a branch) that calls
// runtime.Goexit on the calling goroutine ends it; the task is marked
// failed on the way out (see goexited) for the hooks and runConcurrent.
func (l *loop[S]) execute(ctx context.Context, t *task[S], emit func(Event)) {
	// Once the task ended, a goroutine of its node that kept the context
	// can no longer interrupt it.
	defer t.hdr.detach()
	if h := l.g.hooks; h != nil && h.TaskStart != nil && t.name != Start {
		info := TaskRun{Node: t.name, TaskID: t.hdr.ID(), Step: l.step, Namespace: l.ns}
		ctx = h.TaskStart(ctx, info)
		if h.TaskEnd != nil {
			defer func() {
				t.goexited()
				info.Attempts, info.Interrupted = t.attempts, t.interrupted()
				h.TaskEnd(ctx, info, t.err)
			}()
		}
	}
	ctx = l.taskContext(ctx, t, emit)
	if t.name == Start {
		t.out = *l.fr.input
		t.done = true
		t.err = l.resolve(ctx, t, nil, nil)
		return
	}
	n := t.node
	var key string
	if n.cache != nil && l.g.cache != nil {
		var err error
		key, err = l.g.cacheKey(n, t.nodeInput())
		if err == nil {
			if b, ok, _ := l.g.cache.Get(ctx, key); ok {
				if err := l.g.decodeResult(b, t); err == nil {
					t.done, t.cached, t.restored = true, true, true
					return
				}
			}
		}
	}
	err := l.attempts(ctx, t)
	if err != nil || t.interrupted() {
		var zero S
		t.out, t.err = zero, err
		if t.interrupted() {
			t.err = nil
			if l.saver == nil {
				// Interrupt refused to pause (see errInterruptRefused): the
				// task fails, whatever the node returned.
				t.err = &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: errInterruptRefused}
				t.hdr.clearPause()
			}
		}
		return
	}
	var gotos []string
	var sends []Send[S]
	if c := t.cmd; c != nil {
		if c.Parent {
			t.err = &parentCommand[S]{cmd: *c}
			return
		}
		gotos, sends = c.Goto, c.Sends
	}
	if err := l.resolve(ctx, t, gotos, sends); err != nil {
		t.err = &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: err}
		return
	}
	t.done = true
	if key != "" {
		if b, err := l.g.encodeResult(t); err == nil {
			_ = l.g.cache.Set(ctx, key, b, n.cache.TTL)
		}
	}
}

// parentCommand carries a Command{Parent: true} out of a subgraph.
type parentCommand[S any] struct{ cmd Command[S] }

func (p *parentCommand[S]) isParentCommand() {}

func (p *parentCommand[S]) Error() string {
	return "graph: a node returned Command{Parent: true} outside a subgraph"
}

// sleep waits between retries; tests replace it.
var sleep = func(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempts runs the node with its retry policy; the result is in t.out
// (and t.cmd).
func (l *loop[S]) attempts(ctx context.Context, t *task[S]) error {
	p := t.node.retry
	interval := time.Duration(0)
	if p != nil {
		interval = p.InitialInterval
	}
	for {
		t.attempts++
		if sp := t.hdr.sp.Load(); sp != nil {
			sp.mu.Lock()
			sp.counter = 0
			sp.mu.Unlock()
		}
		err := l.attempt(ctx, t)
		if t.interrupted() {
			if err == nil && l.saver != nil {
				// The node went on after its pause: whatever it did
				// with Interrupt's zero answer must not pass silently.
				t.hdr.clearPause()
				return &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: ErrInterruptIgnored}
			}
			return nil
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pc interface{ isParentCommand() }
		if errors.As(err, &pc) {
			return err
		}
		if p == nil || t.attempts >= p.MaxAttempts || !retryable(p, err) {
			return &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: err}
		}
		wait := interval
		if p.MaxInterval > 0 && wait > p.MaxInterval {
			wait = p.MaxInterval
		}
		if p.Jitter && wait > 0 {
			wait += time.Duration(rand.Int64N(int64(wait)))
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		f := p.BackoffFactor
		if f == 0 {
			f = 1
		}
		interval = time.Duration(float64(interval) * f)
	}
}

func retryable(p *RetryPolicy, err error) bool {
	var iu *InvalidUpdateError
	if errors.As(err, &iu) || errors.Is(err, ErrGoexit) || errors.Is(err, ErrNoCheckpointer) || errors.Is(err, ErrInterruptIgnored) {
		return false
	}
	if p.RetryOn != nil {
		return p.RetryOn(err)
	}
	return !isCancel(err) || errors.Is(err, ErrNodeTimeout)
}

// attempt runs the node once, turning a panic into an error. A plain
// node's result goes to t.out, a command node's to t.cmd and t.out. When
// the run's context can be cancelled, the node has a timeout, or the run
// streams (a goroutine the node starts may then emit events, which only
// the run's goroutines may hand to the stream), the node runs apart from
// the calling goroutine (see attemptApart); otherwise on it (and a
// runtime.Goexit goes on: see execute).
func (l *loop[S]) attempt(ctx context.Context, t *task[S]) (err error) {
	n := t.node
	if l.watch != nil || n.timeout > 0 || l.modes != 0 {
		return l.attemptApart(ctx, t)
	}
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	switch {
	case n.inFn != nil:
		t.out, err = n.inFn(ctx, t.in)
	case n.plain != nil:
		t.out, err = n.plain(ctx, t.input)
	default:
		var cmd Command[S]
		cmd, err = n.fn(ctx, t.input)
		t.out, t.cmd = cmd.Update, nil
		if cmd.Parent || len(cmd.Goto) > 0 || len(cmd.Sends) > 0 {
			t.cmd = &cmd
		}
	}
	return err
}

// apart is one attempt of a node run on a goroutine of its own, so that the
// runtime can stop waiting for it — at its timeout, or when the run is
// cancelled — whether or not it honours its context. That goroutine works
// on this record alone: its own copy of the input and of the task's
// header, its own context (whose runtime is the copy's), its own result.
// It never touches the task or the loop, which the runtime reuses, so a
// node still running when it is abandoned races with nothing; what it
// returns then is dropped.
type apart[S any] struct {
	env   taskCtx // with the attempt's own copy of the task's header
	input S
	in    any
	out   S
	cmd   Command[S]
	err   error
	// events carries the node's stream events to the waiting goroutine,
	// which emits them, until quit is closed, when the runtime stopped
	// waiting; both are nil when the run streams nothing.
	events chan Event
	quit   chan struct{}
	done   chan struct{} // closed when the node returned (or exited)
}

// run runs the node; it is the attempt's goroutine.
func (a *apart[S]) run(n *node[S]) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				a.err = &PanicError{Value: r, Stack: string(debug.Stack())}
			} else {
				a.err = ErrGoexit // it ends this goroutine only
			}
		}
		close(a.done)
	}()
	switch {
	case n.inFn != nil:
		a.out, a.err = n.inFn(&a.env, a.in)
	case n.plain != nil:
		a.out, a.err = n.plain(&a.env, a.input)
	default:
		a.cmd, a.err = n.fn(&a.env, a.input)
		a.out = a.cmd.Update
	}
	returned = true
}

// emit is the node's event sink when the run streams: it hands ev to the
// waiting goroutine, or drops it once nobody waits.
func (a *apart[S]) emit(ev Event) {
	select {
	case a.events <- ev:
	case <-a.quit:
	}
}

// noEmit drops an event: the sink of a node when the run streams nothing.
func noEmit(Event) {}

// detach ends the runtime's interest in the attempt: from then on the node
// (or any goroutine it started) can no longer interrupt, take resume values
// or emit events. The resume values the attempt took go back to the task
// (a retry gets them again), and, when the node returned, its interrupts.
func (a *apart[S]) detach(t *task[S], returned bool) {
	if a.quit != nil {
		close(a.quit)
	}
	a.env.hdr.detach()
	sp := a.env.hdr.sp.Load()
	if sp == detachedPad {
		return // it needed no scratchpad
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	ts := t.hdr.scratch()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.answers = sp.answers
	if returned {
		ts.counter, ts.raised, ts.paused = sp.counter, sp.raised, sp.paused
	}
}

// attemptApart runs the node once on a goroutine of its own (see apart)
// and waits for it, relaying its events to the task's emit, until it
// returns, its timeout passes or the run's context (l.watch) is cancelled.
// In the last two cases the node is abandoned: the attempt fails at once
// with a *NodeTimeoutError or the context's error, and the node's
// goroutine runs on until the node returns, unobserved. (A sibling's
// failure cancels ctx, not l.watch: the node is then waited for.)
func (l *loop[S]) attemptApart(ctx context.Context, t *task[S]) error {
	emit, watch := noEmit, l.watch
	if e, ok := ctx.(*taskCtx); ok {
		emit = e.emit
	}
	n := t.node
	parent := ctx
	var stop <-chan struct{}
	if watch != nil {
		stop = watch.Done()
	}
	var expired <-chan time.Time
	if n.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.timeout)
		defer cancel()
		tm := time.NewTimer(n.timeout) // ctx's deadline, but not its cancellation by a sibling
		defer tm.Stop()
		expired = tm.C
	}
	a := &apart[S]{input: t.input, in: t.in, done: make(chan struct{})}
	nodeEmit := noEmit
	if l.modes != 0 {
		a.events, a.quit = make(chan Event), make(chan struct{})
		nodeEmit = a.emit
	}
	h, th := &a.env.hdr, t.hdr // h computes the same ID as th, if asked
	h.cp, h.ns, h.step, h.name, h.push, h.idx, h.resuming = th.cp, th.ns, th.step, th.name, th.push, th.idx, th.resuming
	// Clipped: an Interrupt of the node appends to a copy, never to the
	// task's array.
	if tsp := th.sp.Load(); tsp != nil {
		tsp.mu.Lock()
		hsp := h.scratch()
		hsp.answers, hsp.resume = slices.Clip(tsp.answers), tsp.resume
		tsp.mu.Unlock()
	}
	a.env.Context, a.env.emit, a.env.shared = ctx, nodeEmit, l.shared
	go a.run(n)
	for waiting := true; waiting; {
		var abandon error
		select {
		case ev := <-a.events:
			emit(ev)
			continue
		case <-a.done:
			waiting = false
			continue
		case <-stop:
			abandon = watch.Err()
		case <-expired:
			abandon = &NodeTimeoutError{Node: n.name, Timeout: n.timeout}
		}
		select {
		case <-a.done: // it returned meanwhile: its result counts
			waiting = false
		default:
			a.detach(t, false)
			return abandon
		}
	}
	a.detach(t, true)
	t.out, t.cmd = a.out, nil
	if a.cmd.Parent || len(a.cmd.Goto) > 0 || len(a.cmd.Sends) > 0 {
		t.cmd = &a.cmd
	}
	err := a.err
	if err != nil && ctx != parent && errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
		err = &NodeTimeoutError{Node: n.name, Timeout: n.timeout, Err: err}
	}
	return err
}

// resolve computes where a finished task goes: its static edges, the
// command's goto and sends, and its branches, evaluated on the task's input
// with only its own writes applied.
func (l *loop[S]) resolve(ctx context.Context, t *task[S], gotos []string, cmdSends []Send[S]) error {
	var edges []string
	var brs []*branch[S]
	if t.name == Start {
		edges, brs = l.g.startEdges, l.g.startBr
	} else {
		edges, brs = t.node.edges, t.node.branches
	}
	if err := l.validateRoute(gotos, cmdSends); err != nil {
		return err
	}
	nodes := t.route.Nodes[:0]
	nodes = append(nodes, edges...)
	nodes = append(nodes, gotos...)
	sends := cmdSends
	if len(brs) > 0 {
		t.local = t.input
		if err := l.applyOwn(t, &t.local); err != nil {
			return err
		}
		local := t.local
		for _, br := range brs {
			var r Route[S]
			if br.router != nil {
				to, err := callRouter(ctx, br.router, local)
				if err != nil {
					return err
				}
				dest, err := l.destination(t.name, br, to)
				if err != nil {
					return err
				}
				nodes = append(nodes, dest)
				continue
			}
			r, err := callBranch(ctx, br.fn, local)
			if err != nil {
				return err
			}
			for _, k := range r.Nodes {
				dest, err := l.destination(t.name, br, k)
				if err != nil {
					return err
				}
				nodes = append(nodes, dest)
			}
			if len(r.Sends) > 0 {
				if err := l.validateRoute(nil, r.Sends); err != nil {
					return err
				}
				if len(br.dests) > 0 {
					for i := range r.Sends {
						if d := r.Sends[i].Node; !slices.Contains(br.dests, d) {
							return undeclared(t.name, br, d)
						}
					}
				}
				if len(sends) == 0 {
					sends = r.Sends // the route is the runtime's once returned
				} else {
					sends = append(sends, r.Sends...)
				}
			}
		}
	}
	t.route = Route[S]{Nodes: filterEnd(nodes), Sends: sends}
	return nil
}

// destination maps the answer k of a branch from node src through its
// path map and checks it: a branch with declared destinations (see
// [Destinations] and [PathMap]) may choose only among them.
func (l *loop[S]) destination(src string, br *branch[S], k string) (string, error) {
	dest := k
	if br.pathMap != nil {
		d, ok := br.pathMap[k]
		if !ok {
			return "", fmt.Errorf("the branch from %s returned %q, which is not a key of its path map", src, k)
		}
		dest = d
	}
	if dest == "" || dest == Start {
		return "", fmt.Errorf("branch did not return a valid destination (got %q)", dest)
	}
	if len(br.dests) > 0 {
		if !slices.Contains(br.dests, dest) {
			return "", undeclared(src, br, dest)
		}
		return dest, nil // declared destinations were checked by Compile
	}
	if dest == End {
		return dest, nil
	}
	n := l.g.nodes[dest]
	if n == nil {
		return "", fmt.Errorf("branch returned unknown node %q", dest)
	}
	if n.inType != nil {
		return "", ownInput(n)
	}
	return dest, nil
}

// ownInput is the error of a route that reaches a node with its own input
// type other than by a Send made with SendInput.
func ownInput[S any](n *node[S]) error {
	return fmt.Errorf("node %q takes its own input (%s), not the graph's state: only a Send made with graph.SendInput reaches it", n.name, n.inType)
}

func undeclared[S any](src string, br *branch[S], dest string) error {
	return &UndeclaredDestinationError{Source: src, Destination: dest, Declared: sortedUnique(slices.Clone(br.dests))}
}

func callBranch[S any](ctx context.Context, fn BranchFunc[S], s S) (r Route[S], err error) {
	defer recoverTo(&err)
	return fn(ctx, s)
}

func callRouter[S any](ctx context.Context, fn RouterFunc[S], s S) (to string, err error) {
	defer recoverTo(&err)
	return fn(ctx, s)
}

func recoverTo(err *error) {
	if x := recover(); x != nil {
		*err = &PanicError{Value: x, Stack: string(debug.Stack())}
	}
}

// applyOwn merges t's own writes onto *dst (a branch's view).
func (l *loop[S]) applyOwn(t *task[S], dst *S) error {
	sc := l.g.sc
	p, q := unsafe.Pointer(dst), unsafe.Pointer(&t.out)
	for fi := range sc.fields {
		c := sc.ch(q, fi)
		if !c.Written() {
			continue
		}
		t.one[0] = c
		err := sc.ch(p, fi).MergeWrites(t.one[:])
		t.one[0] = nil
		if err != nil {
			return &InvalidUpdateError{Field: sc.fields[fi].name, Writers: []string{t.name}, Err: err}
		}
	}
	return nil
}

func (l *loop[S]) validateRoute(gotos []string, sends []Send[S]) error {
	for _, n := range gotos {
		if n == End {
			continue
		}
		nd := l.g.nodes[n]
		if nd == nil {
			return fmt.Errorf("goto unknown node %q", n)
		}
		if nd.inType != nil {
			return ownInput(nd)
		}
	}
	for i := range sends {
		s := &sends[i]
		if s.Node == End {
			return errors.New("cannot send a packet to the END node")
		}
		nd := l.g.nodes[s.Node]
		if nd == nil {
			return fmt.Errorf("send to unknown node %q", s.Node)
		}
		switch {
		case nd.inType == nil && s.input != nil:
			return fmt.Errorf("send to node %q carries a %T made with graph.SendInput, but the node takes the graph's state: send it a Send{Node, Arg}", s.Node, s.input)
		case nd.inType != nil && s.input == nil:
			return ownInput(nd)
		case nd.inType != nil && reflect.TypeOf(s.input) != nd.inType:
			return fmt.Errorf("send to node %q carries a %T, but the node takes a %s", s.Node, s.input, nd.inType)
		}
	}
	return nil
}

func filterEnd(nodes []string) []string {
	out := nodes[:0]
	for _, n := range nodes {
		if n != End {
			out = append(out, n)
		}
	}
	return out
}

func sortedUnique(s []string) []string {
	if len(s) < 2 {
		return s
	}
	slices.Sort(s)
	return slices.Compact(s)
}

func joinNS(parent, seg string) string {
	if parent == "" {
		return seg
	}
	return parent + "|" + seg
}

// merge applies the writes of tasks, in order, onto *dst.
func (l *loop[S]) merge(tasks []*task[S], dst *S) error {
	_, err := l.mergeVersions(tasks, dst, false)
	return err
}

// mergeVersions merges and, when bump is set, gives every changed field the
// step's new version.
func (l *loop[S]) mergeVersions(tasks []*task[S], dst *S, bump bool) (bool, error) {
	sc := l.g.sc
	changed := false
	newVer := l.maxVer + 1
	if bump && l.saver != nil {
		v, err := nextVersion(l.maxVer)
		if err != nil {
			return false, err
		}
		newVer = v
	}
	base := unsafe.Pointer(dst)
	for fi := range sc.fields {
		ws := l.wbuf[:0]
		for _, t := range tasks {
			if c := sc.ch(unsafe.Pointer(&t.out), fi); c.Written() {
				ws = append(ws, c)
			}
		}
		l.wbuf = ws
		if len(ws) == 0 {
			continue
		}
		// ws keeps its pointers until the next merge overwrites them: they
		// point into this loop's tasks (or a command's write), which live
		// as long as the loop does.
		err := sc.ch(base, fi).MergeWrites(ws)
		if err != nil {
			var writers []string
			for _, t := range tasks {
				if sc.ch(unsafe.Pointer(&t.out), fi).Written() {
					writers = append(writers, t.name)
				}
			}
			return false, &InvalidUpdateError{Field: sc.fields[fi].name, Writers: writers, Err: err}
		}
		if bump {
			l.versions[fi] = newVer
			changed = true
		}
	}
	if changed {
		l.maxVer = newVer
	}
	return changed, nil
}

// apply ends a step: merges the writes into the state and computes the
// next frontier.
func (l *loop[S]) apply(tasks []*task[S]) (bool, error) {
	l.next = l.vals
	changed, err := l.mergeVersions(tasks, &l.next, true)
	if err != nil {
		return false, err
	}
	l.vals = l.next
	if l.accumulate {
		p := unsafe.Pointer(&l.accum)
		for _, t := range tasks {
			if t.name == Start {
				continue
			}
			q := unsafe.Pointer(&t.out)
			for fi := range l.g.sc.fields {
				if c := l.g.sc.ch(q, fi); c.Written() {
					l.g.sc.ch(p, fi).ComposeWrite(c)
				}
			}
		}
	}
	nf := l.spare
	if cap(l.fr.sends) > cap(nf.sends) {
		// The current frontier's sends were copied into its tasks' inputs:
		// its larger buffer can hold the next step's.
		nf.sends, l.fr.sends = l.fr.sends, nf.sends
	}
	nodes := nf.nodes[:0]
	sends := nf.sends[:0]
	clear(nf.sends[:cap(nf.sends)])
	joins := l.fr.joins
	last := nf.last[:0]
	for _, t := range tasks {
		if len(last) == 0 || last[len(last)-1] != t.name {
			last = append(last, t.name) // Sends to one node are adjacent
		}
		nodes = append(nodes, t.route.Nodes...)
		sends = append(sends, t.route.Sends...)
		if t.node == nil {
			continue
		}
		for _, r := range t.node.joinOf {
			if joins == nil {
				joins = make(map[int]seenSources)
			}
			joins[r.join] = joins[r.join].with(r.pos)
		}
	}
	var joined []string
	for _, n := range l.fr.joined {
		ran := false
		for _, t := range tasks {
			ran = ran || t.name == n
		}
		if !ran {
			joined = append(joined, n)
			nodes = append(nodes, n)
		}
	}
	if len(joins) > 0 {
		for ji, seen := range joins {
			if seen.count() == len(l.g.joins[ji].sources) {
				target := l.g.joins[ji].target
				nodes = append(nodes, target)
				if !l.g.nodes[target].deferred && !slices.Contains(joined, target) {
					joined = append(joined, target)
				}
				delete(joins, ji)
			}
		}
	}
	deferred := l.fr.deferred
	pull := nodes
	if l.g.hasDeferred {
		pull = nodes[:0]
		for _, n := range nodes {
			if l.g.nodes[n].deferred {
				if !slices.Contains(deferred, n) {
					deferred = append(deferred, n)
				}
			} else {
				pull = append(pull, n)
			}
		}
	}
	pull = sortedUnique(pull)
	if len(pull) == 0 && len(sends) == 0 && len(deferred) > 0 {
		pull, deferred = sortedUnique(deferred), nil
	}
	l.spare = l.fr
	l.fr = frontier[S]{nodes: pull, sends: sends, joins: joins, deferred: deferred, last: last, joined: joined}
	return changed, nil
}
