package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

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

// ErrNotInterrupted is returned by Resume when the Command carries an
// answer (Resume or ResumeMap) but the thread has nothing left to run, or
// its ResumeMap names an interrupt the thread is not waiting on: the answer
// would otherwise be dropped. Answer by ID (ResumeMap) when several
// processes may answer one thread: a scalar Resume answers whatever the
// thread waits on when it arrives.
var ErrNotInterrupted = errors.New("graph: no pending interrupt to answer")

// ErrNotCompiled is returned by the methods of a Graph that was not made by
// [Builder.Compile] (its zero value).
var ErrNotCompiled = errors.New("graph: the Graph was not made by Builder.Compile")

// compiled reports whether g was made by Compile.
func (g *Graph[S]) compiled() error {
	if g == nil || g.sc == nil {
		return ErrNotCompiled
	}
	return nil
}

// ErrNothingToResume is returned by Resume on a thread with no checkpoint.
var ErrNothingToResume = errors.New("graph: nothing to resume")

// ErrUnknownTask is wrapped by the error of a [WithTasks] run given an ID
// that is not a task of the thread's next step.
var ErrUnknownTask = errors.New("graph: no such task in the thread's next step")

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
	in       S            // Invoke's input (a field: a parameter would escape)
	lease    *threadLease // the thread's lease, held by a root run
	// saveCtx is the run's context carrying its lease, for the run's own
	// saver calls (see savingCtx); nil without a lease. The tasks'
	// contexts do not carry the lease: a graph a node runs with a saver of
	// its own must not see its writes fenced by another store's lease.
	saveCtx  context.Context
	restored map[string]*restoredTask[S]
	ev       *evolution // set by restore for a checkpoint of another shape
	resume   *resumeInput
	skipBrk  bool
	sink     func(Event) // nil when nothing is streamed
	modes    Mode

	nested *nestedInfo

	shared *runShared
	// lastShared is the shared settings of the loop's previous run, reused
	// when the next run's are the same (see share).
	lastShared *runShared
	// ctx is the run's context, from which its inline tasks' contexts
	// derive; env is what they share (see taskEnv).
	ctx    context.Context
	env    *taskEnv
	emitFn func(Event)
	// sched is the scheduler of the loop's last concurrent step, whose
	// Wait returned: the next concurrent step reuses it (see
	// scheduler.reuse).
	sched *scheduler
	// The step runConcurrent's jobs run (set during its Wait), and job,
	// the method value l.concurrentJob, made once per loop.
	ccTodo []*task[S]
	ccEnv  *taskEnv
	ccEmit func(Event)
	job    func(context.Context, int) error
	pool   []*task[S]
	npool  int
	tasks  []*task[S]
	wbuf   []stateChannel
	todo   []*task[S]
	next   S           // the state being merged at a barrier
	view   *S          // what the caller sees when the run paused
	spare  frontier[S] // the buffers (nodes, sends, last) of the frontier before last

	accumulate bool
	accum      S // every write of the run's nodes, in order (for subgraphs)

	envs     []taskCtx  // fresh task contexts (see newEnv)
	startHdr taskHeader // the input task's header (see newTask)
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
		if o != nil {
			o.applyRun(&l.cfg)
		}
	}
	for _, o := range opts {
		if o != nil {
			o.applyRun(&l.cfg)
		}
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
	clear(l.fr.sends[:cap(l.fr.sends)])
	clear(l.spare.sends[:cap(l.spare.sends)])
	clear(l.tasks[:cap(l.tasks)])
	clear(l.todo[:cap(l.todo)])
	// The loop is cleared in place and its buffers put back: a composite
	// literal of the whole loop would be built apart and then copied.
	versions, saved, pool, tasks, wbuf, todo, envs, frBuf, lastShared, sched, job := l.versions, l.saved, l.pool,
		l.tasks[:0], l.wbuf[:0], l.todo[:0], l.envs, l.frBuf[:0], l.lastShared, l.sched, l.job
	frNodes, frLast, frSends := l.fr.nodes[:0], l.fr.last[:0], l.fr.sends[:0]
	// The joins' progress map is emptied and kept: a run of a graph with
	// a join would otherwise allocate it anew.
	frJoins := l.fr.joins
	clear(frJoins)
	spNodes, spLast, spSends := l.spare.nodes[:0], l.spare.last[:0], l.spare.sends[:0]
	if sched != nil {
		sched.endRun()
	}
	*l = loop[S]{}
	l.versions, l.saved, l.pool, l.tasks, l.wbuf, l.todo, l.envs, l.frBuf, l.lastShared, l.sched, l.job = versions, saved, pool,
		tasks, wbuf, todo, envs, frBuf, lastShared, sched, job
	l.fr.nodes, l.fr.last, l.fr.sends, l.fr.joins = frNodes, frLast, frSends, frJoins
	l.spare.nodes, l.spare.last, l.spare.sends = spNodes, spLast, spSends
	g.loops.Put(l)
}

// Invoke runs the graph on input — the fields written on it (with Set,
// Append, …) are merged through their reducers, like a node's writes — and
// returns the final state. A paused run returns its state so far and an
// [*Interrupted] error.
func (g *Graph[S]) Invoke(ctx context.Context, input S, opts ...RunOption) (S, error) {
	if err := g.compiled(); err != nil {
		return input, err
	}
	l := g.newLoop(opts)
	l.in = input
	err := l.run(ctx, &l.in, nil)
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
	if err := g.compiled(); err != nil {
		var zero S
		return zero, err
	}
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
		if err := g.compiled(); err != nil {
			yield(Event{}, err)
			return
		}
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
	if rt := runtimeFrom(ctx); rt != nil && rt.hdr.env != nil {
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
		if !l.cfg.limitSet && n.limit > 0 {
			// As in LangGraph, the parent run's recursion limit bounds
			// its subgraphs' runs, unless they were compiled with their own.
			l.cfg.limit = n.limit
		}
		if l.cfg.abandoned == nil {
			l.cfg.abandoned = n.abandoned
		}
		if n.subgraphs {
			l.sink, l.modes = n.emit, n.modes
		}
	}
	if l.sink != nil {
		l.emitFn = l.emit
	} else {
		l.emitFn = noEmit // (a func literal here allocates: generic code)
	}
	if l.saver != nil && l.cfg.thread == "" {
		return ErrNoThread
	}
	if l.cfg.only != nil {
		if err := l.checkOnly(cmd); err != nil {
			return err
		}
	}
	if l.nested == nil && l.saver != nil && l.cfg.only == nil {
		// One live run per thread: the lease is held until the last
		// checkpoint is saved (the async saver closes first).
		lease, lerr := l.g.acquireLease(ctx, l.saver, &l.cfg)
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
	if l.lease != nil {
		// Every write of the run, its subgraphs' included, is fenced by
		// the lease (load shares the saver with the tasks, see share).
		l.saveCtx, l.saver = l.lease.fenced(ctx, l.saver)
	}
	l.ctx, l.env = ctx, nil
	if l.saver != nil {
		// Closed before RunEnd sees the run's error: what could not be
		// saved is part of it.
		l.dur = newDurability[S](l.savingCtx(ctx), l.cfg.thread, l.saver, l.cfg.durability)
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

// savingCtx returns the context of a saver call of the run made in ctx:
// the run's context carrying its lease when it holds one, so that the
// fenced saver finds its lease there and need not make a context for
// every write.
func (l *loop[S]) savingCtx(ctx context.Context) context.Context {
	if l.saveCtx != nil {
		return l.saveCtx
	}
	return ctx
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
			return &SaverError{Op: opLoad, Thread: l.cfg.thread, Err: err}
		default:
			tuple = t
		}
	}
	if tuple != nil {
		metaStep = tuple.Metadata.Step
	}
	l.step = metaStep + 1
	l.stop = l.step + l.cfg.limit + 1
	l.share(l.stop)
	// Time travel: the first checkpoint follows the one asked for, which
	// need not be the thread's latest.
	l.fork = l.cfg.checkpointID != ""
	if tuple != nil {
		resuming := l.nested != nil && l.nested.resuming || cmd != nil
		var sm *ShapeMismatchError
		if err := l.restore(tuple); err != nil && (resuming || !errors.As(err, &sm) || !l.ev.pendingOnly()) {
			// New input drops the thread's pending tasks: work pending
			// for nodes a changed graph lacks does not keep it from
			// starting again on the stored state.
			return err
		}
		if resuming {
			if err := l.restorePending(tuple); err != nil {
				return err
			}
		}
	}
	if cmd == nil && l.nested != nil && l.nested.resuming && tuple != nil {
		// A subgraph whose parent task is re-run resumes instead of
		// restarting.
		cmd = &Command[S]{}
		input = nil
	}
	if cmd != nil {
		return l.applyCommand(ctx, tuple, cmd)
	}
	if err := l.refusePausedInput(tuple); err != nil {
		return err
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

// share sets the run's shared settings, stop being its last step: those
// of the loop's previous run when they are the same (they never change
// once made, so the contexts that run's nodes kept read the same values),
// or new ones.
func (l *loop[S]) share(stop int) {
	sh := runShared{stop: stop, ns: l.ns, thread: l.cfg.thread, saver: l.saver, modes: l.modes, limit: l.cfg.limit,
		subgraphs: l.cfg.subgraphs, durability: l.cfg.durability, parents: l.parents, abandoned: l.cfg.abandoned,
		names: l.g.hdrNames}
	// Settings with a saver or parents (not comparable) are always new.
	if p := l.lastShared; p != nil && sh.saver == nil && p.saver == nil && sh.parents == nil && p.parents == nil &&
		sh.stop == p.stop && sh.limit == p.limit && sh.ns == p.ns && sh.thread == p.thread && sh.modes == p.modes &&
		sh.subgraphs == p.subgraphs && sh.durability == p.durability && sh.abandoned == p.abandoned {
		l.shared = p
		return
	}
	p := new(runShared) // sh stays on the stack when reused
	*p = sh
	l.shared, l.lastShared = p, p
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
	if cmd.Resume != nil && cmd.ResumeMap != nil {
		return errors.New("graph: a Command answers with Resume or with ResumeMap, not both")
	}
	hasResume := cmd.ResumeMap != nil || cmd.Resume != nil
	if hasResume && l.nested == nil {
		// An answer must reach a question: one given to a thread that has
		// nothing left to run (answered and finished, by another process
		// maybe) is refused, not dropped, and so is one naming an
		// interrupt that is not pending. (A scalar answer at a static
		// breakpoint is accepted and unused, as in LangGraph.)
		pending := l.pendingIDs()
		if len(pending) == 0 && len(l.fr.nodes) == 0 && len(l.fr.sends) == 0 && l.fr.input == nil {
			return fmt.Errorf("%w: thread %q has nothing left to run", ErrNotInterrupted, l.cfg.thread)
		}
		for id := range cmd.ResumeMap {
			if !slices.Contains(pending, id) {
				return fmt.Errorf("%w: the resume map answers interrupt %q, which thread %q is not waiting on (pending: %s)",
					ErrNotInterrupted, id, l.cfg.thread, strings.Join(pending, ", "))
			}
		}
		if cmd.ResumeMap == nil && len(pending) > 1 {
			return fmt.Errorf("%w (%d pending)", ErrAmbiguousResume, len(pending))
		}
		if err := l.checkAnswers(cmd); err != nil {
			return err
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
			// The fork is the step after the checkpoint it copies, and the
			// replayed tasks run in the step after the fork, as LangGraph
			// numbers them (fork@s+1, then loop@s+2, …).
			if err := l.save(ctx, "fork"); err != nil {
				return err
			}
			l.step++
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
	l.emitValues(l.step, &l.vals, nil)
	return nil
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
		if l.cfg.only != nil {
			return l.runOnly(ctx, tasks)
		}
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
		if intr := interruptsOf(tasks); intr != nil {
			return l.pause(ctx, tasks, intr)
		}
		changed, err := l.apply(tasks)
		if err != nil {
			return err
		}
		if changed {
			l.emitValues(l.step, &l.vals, nil)
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

// interruptsOf returns the Interrupted that the interrupts raised by
// tasks make, or nil when none of them interrupted.
func interruptsOf[S any](tasks []*task[S]) *Interrupted {
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
	return intr
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
	out := l.output()
	l.emitValues(l.step, &out, intr.Interrupts)
	return intr
}

// runTasks runs the step's tasks that have no result yet, concurrently when
// there are several. The first error cancels the others; an interrupt
// does not.
func (l *loop[S]) runTasks(ctx context.Context, tasks []*task[S]) error {
	todo := l.todo[:0]
	for _, t := range tasks {
		if t.done {
			l.emitUpdate(t, l.writes(t), l.emitFn)
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
		l.execute(ctx, t, nil)
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

// drainUntil drops the events a step's tasks send until done is closed.
func drainUntil(events <-chan Event, done <-chan error) {
	for {
		select {
		case <-events:
		case <-done:
			return
		}
	}
}

// runConcurrent runs several tasks at once, on a scheduler (see
// scheduler): the calling goroutine works among them, or, when the run
// streams, relays their events while goroutines work.
func (l *loop[S]) runConcurrent(ctx context.Context, todo []*task[S]) error {
	s := l.sched
	if s == nil {
		s = newScheduler(ctx)
	} else {
		l.sched = nil // until its Wait returned
		s.reuse(ctx)
	}
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
	// The step's tasks share one env (see taskEnv): the scheduler's
	// context and the step's sink.
	var env *taskEnv
	if len(todo) > 0 && todo[0].hdr.env != nil {
		e := todo[0].hdr.env
		env = &taskEnv{Context: s.ctx, run: e.run, emit: emit, cp: e.cp}
	}
	// The jobs read the step from the loop (a closure over it would be
	// allocated every step); Wait runs them all before it returns.
	l.ccTodo, l.ccEnv, l.ccEmit = todo, env, emit
	if l.job == nil {
		l.job = l.concurrentJob
	}
	s.Each(len(todo), l.job)
	var werr error
	waited := false // Wait returned (not unwound): s may be reused
	if streaming {
		// The result comes back on done, closed without one when Wait
		// was unwound: neither variable escapes to the goroutine.
		done := make(chan error, 1)
		go func() {
			defer close(done)
			done <- s.Wait()
		}()
		relayed := false
		defer func() {
			if !relayed {
				// The sink panicked: the stream's consumer did, and its
				// panic unwinds the run, whose context the stream cancels.
				// The step's tasks may still emit until they see that;
				// their events are dropped, so none blocks for ever on a
				// relay nobody reads, and Wait's goroutine ends with them.
				go drainUntil(events, done)
			}
		}()
	relay:
		for {
			select {
			case ev := <-events:
				l.sink(ev)
			case err, ok := <-done:
				werr, waited = err, ok
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
		relayed = true
	} else {
		werr = s.Wait()
		waited = true
	}
	l.ccTodo, l.ccEnv, l.ccEmit = nil, nil, nil
	if waited {
		s.park()
		l.sched = s
	}
	var firstErr *task[S]
	for _, t := range todo {
		if t.err != nil && (firstErr == nil || isCancel(firstErr.err) && !isCancel(t.err)) {
			firstErr = t
		}
	}
	if firstErr != nil {
		if l.saver != nil {
			// A sibling that interrupted before the failure keeps its
			// question pending beside the error, as in LangGraph: the
			// snapshot shows both, and a resume answers it.
			for _, t := range todo {
				if t != firstErr && t.interrupted() {
					_ = l.putWrites(context.WithoutCancel(ctx), t.hdr.ID(), t)
				}
			}
		}
		return l.fail(ctx, firstErr)
	}
	if werr != nil {
		return werr // cancelled before every task ran
	}
	return nil
}

// concurrentJob runs the i-th task of the step runConcurrent runs (see
// ccTodo) under sctx, the scheduler's context.
func (l *loop[S]) concurrentJob(sctx context.Context, i int) error {
	t := l.ccTodo[i]
	returned := false
	defer func() {
		if !returned {
			// Unwound by runtime.Goexit, from its node or branch.
			t.goexited()
		}
	}()
	l.execute(sctx, t, l.ccEnv)
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
	l.finished(t, l.ccEmit)
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
	l.emitTaskResult(t, nil, l.emitFn)
	return t.err
}
