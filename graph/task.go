package graph

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"
)

// Running one task: its context, its attempts under its retry policy and
// timeout, on the calling goroutine or apart from it.

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
	local    S // the input with the task's own writes, for its branches
	// merged is set when local is the state the task's step started
	// from with the task's writes merged (a pulled task whose branches
	// ran): for a step's lone task, that is the step's new state.
	merged bool
	cmd    *Command[S] // the routing a command node returned, if any
	env    *taskCtx    // the context of this execution, never reused (see newEnv)
}

// interrupted reports whether the task paused. A task that never needed a
// scratchpad (most: only Interrupt and resume values make one) has nothing
// in its header's more, or, once it ended, detachedMore: that is read
// inline without a call.
func (t *task[S]) interrupted() bool {
	if m := t.hdr.more.Load(); m == nil || m == detachedMore {
		return false
	}
	return t.paused()
}

// paused is interrupted for a task with a scratchpad (out of line, so
// that interrupted inlines).
func (t *task[S]) paused() bool {
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

// taskContext returns the context t's node runs with: t's own, never
// written again once handed out. Its env is the one t was prepared with,
// unless the task runs under another context or sink than that env's:
// env, the one of a concurrent step, or ctx, when a hook derived it
// (derived).
func (l *loop[S]) taskContext(ctx context.Context, t *task[S], env *taskEnv, derived bool) context.Context {
	e := t.env
	if e == nil {
		return ctx // the input task's, which no user code sees
	}
	if derived {
		from := t.hdr.env
		if env != nil {
			from = env
		}
		env = &taskEnv{Context: ctx, run: from.run, emit: from.emit, cp: from.cp}
	}
	if env != nil {
		e.hdr.env = env
	}
	return e
}

// execute runs one task with its retry policy, timeout and cache, and
// resolves where it goes next. Its context derives from env's, or, when
// env is nil, from the one t was prepared with (the run's, which is ctx).
// A node (or a branch) that calls runtime.Goexit on the calling goroutine
// ends it; the task is marked failed on the way out (see goexited) for the
// hooks and runConcurrent.
func (l *loop[S]) execute(ctx context.Context, t *task[S], env *taskEnv) {
	// Once the task ended, a goroutine of its node that kept the context
	// can no longer interrupt it.
	defer t.hdr.detach()
	derived := false
	if h := l.g.hooks; h != nil && h.TaskStart != nil && t.name != Start {
		info := TaskRun{Node: t.name, TaskID: t.hdr.ID(), Step: l.step, Namespace: l.ns}
		ctx, derived = h.TaskStart(ctx, info), true
		if h.TaskEnd != nil {
			defer func() {
				t.goexited()
				info.Attempts, info.Interrupted = t.attempts, t.interrupted()
				h.TaskEnd(ctx, info, t.err)
			}()
		}
	}
	ctx = l.taskContext(ctx, t, env, derived)
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
	var err error
	fallback := false
	if len(n.mw) > 0 {
		fallback, err = l.wrapped(ctx, t)
	} else {
		err = l.attempts(ctx, t)
	}
	if err != nil || t.interrupted() {
		var zero S
		t.out, t.err = zero, err
		if t.interrupted() {
			t.err = nil
			if l.saver == nil {
				// Interrupt refused to pause (see errInterruptRefused): the
				// task fails, whatever the node returned — with the node's
				// error when it wraps the refusal (a prebuilt agent naming
				// its own option, say).
				refused := error(errInterruptRefused)
				if errors.Is(err, errInterruptRefused) {
					refused = err
				}
				t.err = &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: refused}
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
	if key != "" && !fallback {
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
	// n counts this call's attempts: a middleware that calls its next
	// again gets the whole retry policy again. t.attempts counts them all.
	n := 0
	for {
		t.attempts++
		n++
		if sp := t.hdr.pad(); sp != nil {
			sp.mu.Lock()
			sp.counter = 0
			sp.mu.Unlock()
		}
		err := l.attempt(ctx, t)
		if t.interrupted() {
			switch {
			case l.saver == nil:
				// Refused to pause: execute fails the task, with the
				// node's error if it wraps the refusal.
				if errors.Is(err, errInterruptRefused) {
					return err
				}
				return nil
			case err == nil:
				// The node went on after its pause: whatever it did
				// with Interrupt's zero answer must not pass silently.
				t.hdr.clearPause()
				return &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: t.attempts, Err: ErrInterruptIgnored}
			case isPause(err):
				return nil
			}
			// The node failed with an error of its own after its pause:
			// that error is the task's, as an exception raised past
			// LangGraph's interrupt() is.
			t.hdr.clearPause()
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
		if p == nil || n >= p.MaxAttempts || !retryable(p, err) {
			return &NodeError{Node: t.name, TaskID: t.hdr.ID(), Attempts: n, Err: err}
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

// isPause reports whether err is (or wraps) the error of a pause: the one
// Interrupt returned, or a paused subgraph's.
func isPause(err error) bool {
	var sig *interruptSignal
	var intr *Interrupted
	return errors.As(err, &sig) || errors.As(err, &intr)
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
	share taskEnv // env's env: the attempt's context and sink
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

// relay hands one of the node's events to emit. When emit panics (the
// stream's consumer did, and its panic unwinds the run) the node's later
// events are dropped, as after detach: without that it would block for
// ever on a relay nobody reads.
func (a *apart[S]) relay(emit func(Event), ev Event) {
	relayed := false
	defer func() {
		if !relayed {
			close(a.quit)
		}
	}()
	emit(ev)
	relayed = true
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
	sp := a.env.hdr.pad()
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
	// The task's context, or one a middleware derived from it.
	if e := runtimeFrom(ctx); e != nil && e == t.env {
		emit = e.hdr.env.emit
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
	h.env = &a.share
	h.copyIdentity(th)
	a.share.run, a.share.cp = th.env.run, th.env.cp
	// Clipped: an Interrupt of the node appends to a copy, never to the
	// task's array.
	if tsp := th.pad(); tsp != nil {
		tsp.mu.Lock()
		hsp := h.scratch()
		hsp.answers, hsp.resume = slices.Clip(tsp.answers), tsp.resume
		tsp.mu.Unlock()
	}
	a.share.Context, a.share.emit = ctx, nodeEmit
	go a.run(n)
	for waiting := true; waiting; {
		var abandon error
		select {
		case ev := <-a.events:
			a.relay(emit, ev)
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
			if wg := t.hdr.env.run.abandoned; wg != nil {
				wg.Add(1)
				go func() {
					<-a.done
					wg.Done()
				}()
			}
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
