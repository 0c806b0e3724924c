package graph

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"unsafe"
)

// The superstep algorithm: pure step functions over a run's state —
// which tasks a step runs (prepare), where a finished task goes next
// (resolve), and how a step's writes merge into the state (apply, merge).
// They do no I/O: no saving (durability.go), no streaming (emit.go), no
// scheduling (scheduler.go, run.go).

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
// fired, by position in the join's source list: the first 64 inline (a
// join's progress then costs no allocation), the others 64 to a word.
type seenSources struct {
	low  uint64
	high []uint64
}

// with returns s with source i added.
func (s seenSources) with(i int) seenSources {
	if i < 64 {
		s.low |= 1 << i
		return s
	}
	i -= 64
	for len(s.high) <= i/64 {
		s.high = append(s.high, 0)
	}
	s.high[i/64] |= 1 << (i % 64)
	return s
}

func (s seenSources) has(i int) bool {
	if i < 64 {
		return s.low&(1<<i) != 0
	}
	i -= 64
	return i/64 < len(s.high) && s.high[i/64]&(1<<(i%64)) != 0
}

func (s seenSources) count() int {
	n := bits.OnesCount64(s.low)
	for _, w := range s.high {
		n += bits.OnesCount64(w)
	}
	return n
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

// pendingInterrupts lists the interrupts the restored step waits on, by
// ID.
func (l *loop[S]) pendingInterrupts() []Interruption {
	var pending []Interruption
	for _, r := range l.restored {
		if !r.done {
			pending = append(pending, r.interrupts...)
		}
	}
	slices.SortFunc(pending, func(a, b Interruption) int { return strings.Compare(a.ID, b.ID) })
	return pending
}

// pendingIDs lists the IDs of the interrupts the restored step waits on.
func (l *loop[S]) pendingIDs() []string {
	pending := l.pendingInterrupts()
	if len(pending) == 0 {
		return nil
	}
	ids := make([]string, len(pending))
	for i, in := range pending {
		ids[i] = in.ID
	}
	return ids
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
		t := l.newTask(name, l.g.node(name), false, 0)
		t.input = l.vals
		l.initTask(t)
		l.tasks = append(l.tasks, t)
	}
	for i := range l.fr.sends {
		s := &l.fr.sends[i]
		t := l.newTask(s.Node, l.g.node(s.Node), true, i)
		if s.hasInput() {
			t.in = s.payload()
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
	if name == Start && len(l.g.startBr) == 0 {
		// No user code sees the input task's context (hooks skip it, and
		// it has no router): its header may live in the pooled loop.
		t.env, t.hdr = nil, &l.startHdr
		*t.hdr = taskHeader{}
		return t
	}
	t.env = l.newEnv()
	t.hdr = &t.env.hdr
	return t
}

// startName is the name of every input task in a run's names (see
// Graph.hdrNames).
var startName = Start

// taskEnv returns what the contexts of the step's inline tasks share (see
// taskEnv): the run's context, settings and sink, and the checkpoint the
// step starts from. One is made per run and per checkpoint saved; it is
// never changed once made.
func (l *loop[S]) taskEnv() *taskEnv {
	// (An env's run is never nil: this is not the case of a loop outside
	// a run, which has no shared settings yet.)
	if e := l.env; e != nil && e.run == l.shared && e.cp == l.cpID {
		return e
	}
	return l.newTaskEnv()
}

// newTaskEnv makes the loop's next taskEnv (see taskEnv), out of line so
// that taskEnv inlines.
func (l *loop[S]) newTaskEnv() *taskEnv {
	if l.shared == nil { // outside a run: GetState, History, UpdateState
		l.shared = &runShared{ns: l.ns, names: l.g.hdrNames}
	}
	ctx, emit := l.ctx, l.emitFn
	if ctx == nil { // outside a run: no node runs with it
		ctx, emit = context.Background(), noEmit
	}
	l.env = &taskEnv{Context: ctx, run: l.shared, emit: emit, cp: l.cpID}
	return l.env
}

// envSlab is how many task contexts are allocated at once: 85 of 24
// bytes and the 8-byte header of an object with pointers over 512 bytes
// fill the 2,048-byte size class (one more would take the 2,304-byte one).
const envSlab = 85

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
	t.hdr.env = l.taskEnv()
	t.hdr.setPos(l.step, t.idx, t.push, t.name, l.g.nameIndex(t.name, t.node))
	if l.resume != nil {
		t.hdr.scratch().resume = l.resume // not handed out yet: no lock needed
	}
	if l.restored != nil {
		if r := l.restored[t.hdr.ID()]; r != nil {
			if r.answers != nil {
				t.hdr.scratch().answers = r.answers
			}
			t.hdr.setResuming()
			if r.done {
				t.done, t.restored, t.out, t.route = true, true, r.out, r.route
			}
		}
	}
}

// resolve computes where a finished task goes: its static edges, the
// command's goto and sends, and its branches, evaluated on the task's input
// with only its own writes applied.
func (l *loop[S]) resolve(ctx context.Context, t *task[S], gotos []string, cmdSends []Send[S]) error {
	var edges []string
	var brs []*branch[S]
	if t.name == Start {
		edges, brs = l.g.startNext, l.g.startBr
	} else {
		edges, brs = t.node.next, t.node.branches
	}
	if len(gotos) > 0 || len(cmdSends) > 0 {
		if err := l.validateRoute(gotos, cmdSends); err != nil {
			return err
		}
	}
	nodes := appendNames(t.route.Nodes[:0], edges)
	if len(gotos) > 0 { // (an empty append still costs a call)
		nodes = append(nodes, gotos...)
	}
	sends := cmdSends
	if len(brs) > 0 {
		t.local = t.input
		if err := l.applyOwn(t, &t.local); err != nil {
			return err
		}
		t.merged = !t.push // a pulled task's input is the state (see prepare)
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
	if len(gotos) > 0 || len(brs) > 0 {
		nodes = filterEnd(nodes) // (static edges never lead to End: see nextNodes)
	}
	t.route = Route[S]{Nodes: nodes, Sends: sends}
	return nil
}

// destination maps the answer k of a branch from node src through its
// path map and checks it: a branch with declared destinations (see
// [WithDestinations] and [WithPathMap]) may choose only among them.
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
	n := l.g.node(dest)
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
	if fi, err := l.g.sc.mergeWritten(unsafe.Pointer(dst), unsafe.Pointer(&t.out), &t.one); err != nil {
		return &InvalidUpdateError{Field: l.g.sc.fields[fi].name, Writers: []string{t.name}, Err: err}
	}
	return nil
}

func (l *loop[S]) validateRoute(gotos []string, sends []Send[S]) error {
	for _, n := range gotos {
		if n == End {
			continue
		}
		nd := l.g.node(n)
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
			return errors.New("send to END: a Send must name a node")
		}
		nd := l.g.node(s.Node)
		if nd == nil {
			return fmt.Errorf("send to unknown node %q", s.Node)
		}
		switch {
		case nd.inType == nil && s.hasInput():
			return fmt.Errorf("send to node %q carries a %T made with graph.SendInput, but the node takes the graph's state: send it a Send{Node, Arg}", s.Node, s.payload())
		case nd.inType != nil && !s.hasInput():
			return ownInput(nd)
		case nd.inType != nil && reflect.TypeOf(s.payload()) != nd.inType:
			return fmt.Errorf("send to node %q carries a %T, but the node takes a %s", s.Node, s.payload(), nd.inType)
		}
	}
	return nil
}

// appendNames appends src to dst. A route names a node or two: element by
// element, that costs less than the bulk copy an append of a slice of
// strings makes.
func appendNames(dst, src []string) []string {
	for _, n := range src {
		dst = append(dst, n)
	}
	return dst
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

// sortedUnique sorts s and drops repeats, in place. A step's frontier is
// often sorted already (one task's static edges, or many tasks' edges to
// one join): that is checked first, without moving a string.
func sortedUnique(s []string) []string {
	if len(s) < 2 {
		return s
	}
	if !slices.IsSorted(s) {
		slices.Sort(s)
	}
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
	if bump {
		v, err := l.stepVersion()
		if err != nil {
			return false, err
		}
		newVer = v
	}
	base := unsafe.Pointer(dst)
	if len(tasks) == 1 {
		// A lone task's writes need no gathering: each written field
		// merges its one write.
		t := tasks[0]
		out := unsafe.Pointer(&t.out)
		for fi := range sc.fields {
			c := sc.ch(out, fi)
			if !c.Written() {
				continue
			}
			ws := append(l.wbuf[:0], c)
			l.wbuf = ws
			if err := sc.ch(base, fi).MergeWrites(ws); err != nil {
				return false, &InvalidUpdateError{Field: sc.fields[fi].name, Writers: []string{t.name}, Err: err}
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

// stepVersion returns the version the fields a step changes get: the
// next after l.maxVer, drawn by nextVersion when the run checkpoints.
func (l *loop[S]) stepVersion() (int64, error) {
	if l.saver != nil {
		return nextVersion(l.maxVer)
	}
	return l.maxVer + 1, nil
}

// bumpWritten gives every field t wrote the step's new version, as
// mergeVersions does, without merging anything.
func (l *loop[S]) bumpWritten(t *task[S]) (bool, error) {
	sc := l.g.sc
	newVer, err := l.stepVersion()
	if err != nil {
		return false, err
	}
	changed := false
	out := unsafe.Pointer(&t.out)
	for fi := range sc.fields {
		if sc.ch(out, fi).Written() {
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
	var changed bool
	var err error
	if len(tasks) == 1 && tasks[0].merged {
		// The lone task's branches saw the state with its writes merged,
		// through the same reducers: that is the step's new state, and
		// merging them again would only repeat the work.
		if changed, err = l.bumpWritten(tasks[0]); err != nil {
			return false, err
		}
		l.vals = tasks[0].local
	} else {
		l.next = l.vals
		if changed, err = l.mergeVersions(tasks, &l.next, true); err != nil {
			return false, err
		}
		l.vals = l.next
	}
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
	// The next frontier is made in the buffers of the one before last,
	// in place: a frontier is 17 words, most of them pointers, and
	// copying it whole costs a write barrier check for every one.
	nf := &l.spare
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
		nodes = appendNames(nodes, t.route.Nodes)
		if len(t.route.Sends) > 0 { // (an empty append of Sends still costs a call)
			sends = append(sends, t.route.Sends...)
		}
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
				if !l.g.node(target).deferred && !slices.Contains(joined, target) {
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
			if l.g.node(n).deferred {
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
	// The current frontier's buffers are the spare ones now (a spare is
	// only read for its buffers: see release).
	fr := &l.fr
	nf.nodes, nf.sends, nf.last = fr.nodes, fr.sends, fr.last
	fr.input, fr.nodes, fr.sends, fr.joins, fr.deferred, fr.last, fr.joined = nil, pull, sends, joins, deferred, last, joined
	return changed, nil
}
