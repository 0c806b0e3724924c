package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/internal/fieldview"
	"github.com/agentgraph/agentgraph/state"
)

// CompileError lists every problem found in a graph.
type CompileError struct {
	Problems []string
}

func (e *CompileError) Error() string {
	if len(e.Problems) == 1 {
		return "graph: invalid graph: " + e.Problems[0]
	}
	return "graph: invalid graph:\n\t" + strings.Join(e.Problems, "\n\t")
}

// field is one channel of the state struct.
type field struct {
	name string
	off  uintptr
	typ  reflect.Type // the field's type (not a pointer)
	// view is the Channel of a field of this type, made once by newSchema;
	// view.At places a Channel of the same type at any field's address.
	view fieldview.Locator[state.Channel]
}

type schema struct {
	fields []field
	index  map[string]int
	byName []int // field indexes in the order of their names
}

// channeler is implemented by the pointer of every field type of package
// state: Channel returns the runtime's view of the field.
type channeler interface {
	Channel() state.Channel
}

var channelerType = reflect.TypeFor[channeler]()

func newSchema[S any]() (*schema, []string) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		return nil, []string{fmt.Sprintf("state type %s is not a struct", t)}
	}
	sc := &schema{index: make(map[string]int)}
	var problems []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			problems = append(problems, fmt.Sprintf("state field %s.%s is unexported; every field must be an exported state channel (state.Value, Append, Sum, Map, Reduced, Messages)", t.Name(), f.Name))
			continue
		}
		if !reflect.PointerTo(f.Type).Implements(channelerType) {
			problems = append(problems, fmt.Sprintf("state field %s.%s has type %s, which has no reducer; use state.Value[%s] for a last-value field, or another state channel type", t.Name(), f.Name, f.Type, f.Type))
			continue
		}
		view := viewOf(f.Type)
		if view == nil {
			problems = append(problems, fmt.Sprintf("state field %s.%s has type %s, whose Channel method does not view the whole field; use a channel type of package state (state.Value, Append, Sum, Map, Reduced, Messages), or a struct that only embeds one", t.Name(), f.Name, f.Type))
			continue
		}
		sc.index[f.Name] = len(sc.fields)
		sc.fields = append(sc.fields, field{name: f.Name, off: f.Offset, typ: f.Type, view: view})
	}
	sc.byName = make([]int, len(sc.fields))
	for i := range sc.byName {
		sc.byName[i] = i
	}
	slices.SortFunc(sc.byName, func(a, b int) int { return strings.Compare(sc.fields[a].name, sc.fields[b].name) })
	return sc, problems
}

// viewOf returns the Channel of a new value of the field type t, whose
// pointer implements channeler, or nil when ch could not place Channels of
// t by address: the Channel must be one of package state's, and view the
// whole field, not a field embedded in t beside others.
func viewOf(t reflect.Type) fieldview.Locator[state.Channel] {
	p := reflect.New(t)
	c := p.Interface().(channeler).Channel()
	view, ok := c.(fieldview.Locator[state.Channel])
	if !ok {
		return nil
	}
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Pointer() != p.Pointer() || v.Type().Elem().Size() != t.Size() {
		return nil
	}
	return view
}

// schemas holds the schema of each state type, made once (see schemaOf).
var schemas sync.Map // reflect.Type → schemaEntry

type schemaEntry struct {
	sc       *schema
	problems []string
}

// schemaOf is newSchema made once per state type: every graph of S, and
// UpdateAs, share it (a schema never changes once made).
func schemaOf[S any]() (*schema, []string) {
	t := reflect.TypeFor[S]()
	if e, ok := schemas.Load(t); ok {
		e := e.(schemaEntry)
		return e.sc, e.problems
	}
	sc, problems := newSchema[S]()
	e, _ := schemas.LoadOrStore(t, schemaEntry{sc: sc, problems: problems})
	return e.(schemaEntry).sc, e.(schemaEntry).problems
}

// mergeWritten merges each field written in *src onto the same field of
// *dst, through the field's reducer. On a failure it stops and returns
// the field's index and the error; else -1. one holds the one write
// merged at a time, so that merging allocates nothing.
func (sc *schema) mergeWritten(dst, src unsafe.Pointer, one *[1]stateChannel) (int, error) {
	for fi := range sc.fields {
		c := sc.ch(src, fi)
		if !c.Written() {
			continue
		}
		one[0] = c
		err := sc.ch(dst, fi).MergeWrites(one[:])
		one[0] = nil
		if err != nil {
			return fi, err
		}
	}
	return -1, nil
}

// ch returns field i of *s as a Channel: what calling Channel on the field
// would return, without reflection on every write of every step.
func (sc *schema) ch(s unsafe.Pointer, i int) state.Channel {
	f := &sc.fields[i]
	return f.view.At(unsafe.Add(s, f.off))
}

// Graph is a compiled, immutable graph, safe for concurrent runs.
type Graph[S any] struct {
	nodes  map[string]*node[S]
	byAddr nodeTable[S] // nodes by the address of their name (see node)
	names  []string     // sorted
	// hdrNames are Start's name and the nodes' own names, in the order of
	// names, which task headers index (see taskPos, node.hidx).
	hdrNames        []*string
	startEdges      []string
	startNext       []string // startEdges as node.next
	startBr         []*branch[S]
	joins           []*join
	hasDeferred     bool
	sc              *schema
	saver           checkpoint.Saver
	cache           Cache
	interruptBefore map[string]bool
	interruptAfter  map[string]bool
	breakNoSaver    error // refuses a run without a checkpointer (see breakpointsNeedSaver)
	shape           string
	name            string
	loops           sync.Pool // *loop[S], reused across runs
	hooks           *Hooks
	leaseTTL        time.Duration // 0: runs take no thread lease
	runDefaults     []RunOption
}

// CompileOption configures [Builder.Compile]. It is made by the With…
// functions of this package.
type CompileOption interface{ applyCompile(*compileConfig) }

// compileOption is a CompileOption that is a function.
type compileOption func(*compileConfig)

func (f compileOption) applyCompile(c *compileConfig) { f(c) }

type compileConfig struct {
	saver           checkpoint.Saver
	cache           Cache
	interruptBefore []string
	interruptAfter  []string
	name            string
	hooks           *Hooks
	leaseTTL        *time.Duration
	runDefaults     []RunOption
}

// WithCheckpointer saves a checkpoint after every superstep in s, which
// enables interrupts with resume, pending writes, GetState, History,
// UpdateState and time travel. Runs then need [WithThread].
func WithCheckpointer(s checkpoint.Saver) CompileOption {
	return compileOption(func(c *compileConfig) { c.saver = s })
}

// WithLeaseTTL sets how long a run's lease of its thread lasts without
// renewal (default [DefaultLeaseTTL]); d <= 0 turns leasing off. When the
// checkpointer implements [checkpoint.Leaser], every run with a thread, and
// every UpdateState, takes the thread's lease first and gives it up when it
// ends, so one thread never has two live runs, in this process or any
// other on the same database: a second run fails at once with a
// [*checkpoint.LeaseHeldError] naming the holder. A live run renews its
// lease every d/3; the lease of a holder that died expires after d, and the
// thread can then be resumed — at once, from the same machine, with savers
// that record the holder's process (the SQLite and PostgreSQL ones do). A
// holder that wakes up after its lease was taken over is fenced: its next
// write fails with a [*checkpoint.FencedError]. A run that loses its lease (it could not
// renew it in time) stops with an error wrapping [checkpoint.ErrLeaseLost].
//
// The option serves Compile, for every run of the graph, and a run (or
// UpdateState), for that one: a server that runs the graph under leases of
// its own gives each run its thread lease of the same time to live, so that
// a thread whose process died is free when its run is taken over.
func WithLeaseTTL(d time.Duration) LeaseTTLOption { return LeaseTTLOption{d} }

// LeaseTTLOption is the option [WithLeaseTTL] returns: both a
// [CompileOption] and a [RunOption].
type LeaseTTLOption struct{ ttl time.Duration }

func (o LeaseTTLOption) applyCompile(c *compileConfig) { c.leaseTTL = &o.ttl }
func (o LeaseTTLOption) applyRun(c *runConfig)         { c.leaseTTL = &o.ttl }

// WithRunDefaults gives every run of the graph opts first; a run's own
// options come after them and so override them. A prebuilt graph uses it
// for what its runs need, e.g. WithMaxConcurrency(1) when its tasks must
// run in order.
func WithRunDefaults(opts ...RunOption) CompileOption {
	return compileOption(func(c *compileConfig) { c.runDefaults = append(c.runDefaults, opts...) })
}

// WithCache stores the results of nodes that have a [CachePolicy].
func WithCache(cache Cache) CompileOption {
	return compileOption(func(c *compileConfig) { c.cache = cache })
}

// WithName names the graph (used in renderings).
func WithName(name string) CompileOption {
	return compileOption(func(c *compileConfig) { c.name = name })
}

// Compile validates the graph and returns it ready to run. All problems are
// reported at once in a [*CompileError], each naming the node or edge.
func (b *Builder[S]) Compile(opts ...CompileOption) (*Graph[S], error) {
	var cfg compileConfig
	for _, o := range opts {
		if o != nil {
			o.applyCompile(&cfg)
		}
	}
	problems := slices.Clone(b.problems)
	sc, sp := schemaOf[S]()
	problems = append(problems, sp...)

	known := func(n string) bool { return n == End || b.nodes[n] != nil }
	// ownInput reports an edge into a node with its own input type, which
	// only a Send made with SendInput can feed.
	ownInput := func(what, to string) {
		if n := b.nodes[to]; n != nil && n.inType != nil {
			problems = append(problems, fmt.Sprintf("%s: node %q takes its own input (%s), not the graph's state; only a Send made with graph.SendInput reaches it", what, to, n.inType))
		}
	}
	checkTarget := func(what, to string) {
		if to == Start {
			problems = append(problems, fmt.Sprintf("%s: START cannot be an end node", what))
		} else if !known(to) {
			problems = append(problems, fmt.Sprintf("%s: found edge ending at unknown node %q", what, to))
		}
		ownInput(what, to)
	}
	for _, to := range b.startEdges {
		checkTarget(fmt.Sprintf("edge %s -> %s", Start, to), to)
	}
	checkBranch := func(from string, br *branch[S]) {
		for _, d := range br.dests {
			if !known(d) {
				problems = append(problems, fmt.Sprintf("at %q node, a branch found unknown target %q", from, d))
			}
		}
		if br.router != nil {
			// A router chooses nodes by name: never one with its own
			// input (a branch may Send to it).
			for _, d := range br.dests {
				ownInput(fmt.Sprintf("conditional edge %s -> %s", from, d), d)
			}
		}
	}
	for _, br := range b.startBr {
		checkBranch(Start, br)
	}
	for _, name := range b.order {
		n := b.nodes[name]
		for _, to := range n.edges {
			checkTarget(fmt.Sprintf("edge %s -> %s", name, to), to)
		}
		for _, br := range n.branches {
			checkBranch(name, br)
		}
		for _, d := range n.dests {
			if !known(d) {
				problems = append(problems, fmt.Sprintf("node %q declares unknown destination %q", name, d))
			}
		}
		if n.inType != nil && len(n.mw) > 0 {
			problems = append(problems, fmt.Sprintf("node %q takes its own input (%s); WithMiddleware wraps only nodes that take the state", name, n.inType))
		}
	}
	for _, j := range b.joins {
		for _, s := range j.sources {
			if b.nodes[s] == nil {
				problems = append(problems, fmt.Sprintf("join %s: found edge starting at unknown node %q", j.key, s))
			}
		}
		if b.nodes[j.target] == nil {
			problems = append(problems, fmt.Sprintf("join %s: found edge ending at unknown node %q", j.key, j.target))
		}
		ownInput("join "+j.key, j.target)
	}
	if len(b.startEdges) == 0 && len(b.startBr) == 0 {
		problems = append(problems, "graph must have an entrypoint: add at least one edge from graph.Start to another node")
	}
	for _, list := range [][]string{cfg.interruptBefore, cfg.interruptAfter} {
		for _, n := range list {
			if n != "*" && b.nodes[n] == nil {
				problems = append(problems, fmt.Sprintf("interrupt node %q not found", n))
			}
		}
	}
	problems = append(problems, b.reachability()...)
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}

	g := &Graph[S]{
		nodes:      b.nodes,
		names:      slices.Sorted(slices.Values(b.order)),
		startEdges: b.startEdges,
		startNext:  nextNodes(b.startEdges),
		startBr:    b.startBr,
		joins:      b.joins,
		sc:         sc,
		saver:      cfg.saver,
		cache:      cfg.cache,
		name:       cfg.name,
		hooks:      cfg.hooks,
		leaseTTL:   DefaultLeaseTTL,
	}
	g.runDefaults = cfg.runDefaults
	if cfg.leaseTTL != nil {
		g.leaseTTL = max(*cfg.leaseTTL, 0)
	}
	// The graph gets its own copy of the nodes: building on after Compile
	// does not change a compiled graph.
	g.nodes = make(map[string]*node[S], len(b.nodes))
	for name, n := range b.nodes {
		c := *n
		c.joinOf = nil
		c.next = nextNodes(n.edges)
		if c.inType == nil && len(b.mw) > 0 {
			c.mw = append(slices.Clone(b.mw), n.mw...)
		}
		g.nodes[name] = &c
		g.hasDeferred = g.hasDeferred || n.deferred
	}
	// The targets of the static edges are the nodes' own name strings, so
	// that the frontiers made from them find their nodes by address.
	for _, n := range g.nodes {
		canonicalNames(n.next, g.nodes)
	}
	g.startNext = canonicalNames(slices.Clone(g.startNext), g.nodes)
	g.byAddr = newNodeTable(g.nodes)
	g.hdrNames = make([]*string, 1, len(g.names)+1)
	g.hdrNames[0] = &startName
	for _, name := range g.names {
		n := g.nodes[name]
		n.hidx = len(g.hdrNames)
		g.hdrNames = append(g.hdrNames, &n.name)
	}
	for i, j := range b.joins {
		for pos, s := range j.sources {
			n := g.nodes[s]
			n.joinOf = append(n.joinOf, joinRef{join: i, pos: pos})
		}
	}
	g.interruptBefore = expandInterrupts(cfg.interruptBefore, g.names)
	g.interruptAfter = expandInterrupts(cfg.interruptAfter, g.names)
	g.breakNoSaver = breakpointsNeedSaver(g.interruptBefore, g.interruptAfter)
	g.shape = g.fingerprint()
	return g, nil
}

// nameIndex returns the index of name, the name of node n (nil when name
// is not a node's), in g.hdrNames, or -1 when it is not there.
func (g *Graph[S]) nameIndex(name string, n *node[S]) int {
	if n != nil && n.name == name { // a compiled node's hidx is at least 1
		return n.hidx
	}
	if name == Start {
		return 0
	}
	return -1
}

// node returns the compiled node named name, or nil. A name that shares
// its bytes with a node's own name (every static edge's target, and a
// string literal equal to the name it was added with, which the linker
// stores once) is found by its address, without hashing it; any other
// through the map.
func (g *Graph[S]) node(name string) *node[S] {
	if n := g.byAddr.find(name); n != nil {
		return n
	}
	return g.nodes[name]
}

// nodeTable finds nodes by the address and length of their names' bytes:
// a string with the same address and length as a node's name has the same
// bytes (strings are immutable). It is a direct-mapped table, written once
// by Compile; a name whose slot another name took is not in it.
type nodeTable[S any] struct {
	slots []nodeSlot[S]
	shift uint // 64 minus log2 of len(slots)
}

type nodeSlot[S any] struct {
	p    *byte
	n    int
	node *node[S]
}

// newNodeTable makes the table of nodes, with about four slots a node.
func newNodeTable[S any](nodes map[string]*node[S]) nodeTable[S] {
	bits := uint(3)
	for 1<<bits < 4*len(nodes) {
		bits++
	}
	t := nodeTable[S]{slots: make([]nodeSlot[S], 1<<bits), shift: 64 - bits}
	for _, n := range nodes {
		if n.name == "" {
			continue
		}
		s := &t.slots[t.slot(unsafe.StringData(n.name))]
		if s.node == nil {
			*s = nodeSlot[S]{p: unsafe.StringData(n.name), n: len(n.name), node: n}
		}
	}
	return t
}

// slot returns the index of the slot of the name whose bytes start at p
// (Fibonacci hashing of the address).
func (t *nodeTable[S]) slot(p *byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(p))) * 0x9E3779B97F4A7C15 >> t.shift
}

// find returns the node whose name is name by address, or nil.
func (t *nodeTable[S]) find(name string) *node[S] {
	if len(t.slots) == 0 || name == "" {
		return nil
	}
	p := unsafe.StringData(name)
	if s := &t.slots[t.slot(p)&uint64(len(t.slots)-1)]; s.p == p && s.n == len(name) {
		return s.node
	}
	return nil
}

// canonicalNames replaces every name in names that is a node's by the
// node's own name string (the same bytes), in place, and returns names.
func canonicalNames[S any](names []string, nodes map[string]*node[S]) []string {
	for i, name := range names {
		if n := nodes[name]; n != nil {
			names[i] = n.name
		}
	}
	return names
}

// breakpointsNeedSaver is the error of a run, without a checkpointer, of a
// graph with the breakpoints before and after: a breakpoint pauses a run
// for good when there is no checkpoint to resume it from. Compile cannot
// refuse them: a graph compiled without a checkpointer runs with its
// parent's as a [Subgraph].
func breakpointsNeedSaver(before, after map[string]bool) error {
	if before == nil && after == nil {
		return nil
	}
	var at []string
	if len(before) > 0 {
		at = append(at, "before "+strings.Join(slices.Sorted(maps.Keys(before)), ", "))
	}
	if len(after) > 0 {
		at = append(at, "after "+strings.Join(slices.Sorted(maps.Keys(after)), ", "))
	}
	return fmt.Errorf("graph: the graph interrupts %s, but it runs without a checkpointer, so it could never be resumed: %w",
		strings.Join(at, " and "), ErrNoCheckpointer)
}

func expandInterrupts(list, names []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]bool)
	for _, n := range list {
		if n == "*" {
			for _, x := range names {
				m[x] = true
			}
		} else {
			m[n] = true
		}
	}
	return m
}

// reachability reports nodes no path from Start reaches and nodes with no
// way out. A branch or command node without declared destinations may go
// anywhere, so then unreachability is not reported.
func (b *Builder[S]) reachability() []string {
	var problems []string
	open := false // some branch may reach any node
	out := func(name string) []string {
		var next []string
		var brs []*branch[S]
		if name == Start {
			next = append(next, b.startEdges...)
			brs = b.startBr
		} else {
			n := b.nodes[name]
			if n == nil {
				return nil
			}
			next = append(next, n.edges...)
			next = append(next, n.dests...)
			if n.command && len(n.dests) == 0 {
				open = true
			}
			brs = n.branches
			for _, j := range b.joins {
				if slices.Contains(j.sources, name) {
					next = append(next, j.target)
				}
			}
		}
		for _, br := range brs {
			if len(br.dests) == 0 {
				open = true
			}
			next = append(next, br.dests...)
		}
		return next
	}
	seen := map[string]bool{Start: true}
	queue := []string{Start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range out(n) {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	// A node with no outgoing edge is no problem: its branch of the run
	// ends there, as in LangGraph (the common shape is a node reached only
	// by a Command's Goto or a Send that finishes the run).
	for _, name := range b.order {
		if !open && !seen[name] {
			problems = append(problems, fmt.Sprintf("node %q is unreachable from graph.Start", name))
		}
	}
	return problems
}

// nextNodes returns the targets of a node's edges as a step's frontier
// lists them: by name, each once, without End. A route built from them
// alone needs no sorting when the next step's frontier is computed.
func nextNodes(edges []string) []string {
	return sortedUnique(filterEnd(slices.Clone(edges)))
}

// fingerprint identifies the graph's shape: fields, nodes and edges.
func (g *Graph[S]) fingerprint() string {
	var parts []string
	for _, f := range g.sc.fields {
		parts = append(parts, "f:"+f.name+":"+f.typ.String())
	}
	for _, name := range g.names {
		n := g.nodes[name]
		e := slices.Sorted(slices.Values(n.edges))
		parts = append(parts, "n:"+name+"->"+strings.Join(e, ","))
		if n.inType != nil {
			parts = append(parts, "i:"+name+":"+n.inType.String())
		}
		for _, br := range n.branches {
			d := slices.Sorted(slices.Values(br.dests))
			parts = append(parts, "b:"+name+"->"+strings.Join(d, ","))
		}
	}
	se := slices.Sorted(slices.Values(g.startEdges))
	parts = append(parts, "s:"+strings.Join(se, ","))
	for _, br := range g.startBr {
		d := slices.Sorted(slices.Values(br.dests))
		parts = append(parts, "b:"+Start+"->"+strings.Join(d, ","))
	}
	for _, j := range g.joins {
		parts = append(parts, "j:"+j.key)
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:8])
}

// Breakpoints returns the nodes the graph was compiled to pause before and
// after ([WithInterruptBefore] and [WithInterruptAfter] given to Compile,
// "*" expanded), each list sorted. A runner that drives the graph's steps
// itself (package temporal's workflows) honours them with it.
func (g *Graph[S]) Breakpoints() (before, after []string) {
	return slices.Sorted(maps.Keys(g.interruptBefore)), slices.Sorted(maps.Keys(g.interruptAfter))
}

// MaxConcurrency returns how many tasks of a step the graph's runs run at
// once by default — the [WithMaxConcurrency] among the options given to
// [WithRunDefaults] — or 0 for no bound. A runner that runs a step's tasks
// itself (package temporal's workflows) keeps to it: with 1, tasks run
// one after the other in the step's order.
func (g *Graph[S]) MaxConcurrency() int {
	var c runConfig
	for _, o := range g.runDefaults {
		if o != nil {
			o.applyRun(&c)
		}
	}
	return max(c.maxConc, 0)
}
