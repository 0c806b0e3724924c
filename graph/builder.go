package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// NodeFunc is a plain node: it reads the state snapshot s and returns the
// writes it wants merged — usually s itself with some fields written (Set,
// Append, …), since s carries no pending writes of its own.
type NodeFunc[S any] func(ctx context.Context, s S) (S, error)

// CommandFunc is a node that also chooses where to go next (see [Command]).
type CommandFunc[S any] func(ctx context.Context, s S) (Command[S], error)

// BranchFunc chooses, after its source node ran, the nodes (or path-map
// keys) and Send tasks of the next step. It sees the source node's input
// with only that node's own writes applied.
type BranchFunc[S any] func(ctx context.Context, s S) (Route[S], error)

// RouterFunc is a branch choosing one node or path-map key.
type RouterFunc[S any] func(ctx context.Context, s S) (string, error)

// MultiRouterFunc chooses the nodes (or path-map keys) to run next, any
// number of them; see [Builder.AddMultiConditionalEdges].
type MultiRouterFunc[S any] func(ctx context.Context, s S) ([]string, error)

type node[S any] struct {
	name  string
	hidx  int // its name's index in the compiled graph's hdrNames (0: none)
	fn    CommandFunc[S]
	plain NodeFunc[S] // the function of a node added with AddNode (fn wraps it)
	// A node added with AddNodeWithInput: its input type, its function
	// (taking an inType value) and the decoder of a saved input.
	inType   reflect.Type
	inFn     func(ctx context.Context, in any) (S, error)
	decodeIn func(b []byte) (any, error)
	command  bool
	retry    *RetryPolicy
	timeout  time.Duration
	deferred bool
	cache    *CachePolicy
	dests    []string
	mw       []Middleware[S] // the node's own (WithMiddleware); Compile puts the graph's first
	edges    []string
	next     []string // edges sorted by name, without repeats or End (set by Compile)
	branches []*branch[S]
	joinOf   []joinRef // the joins this node is a source of (set by Compile)
}

// joinRef is a node's place among the sources of a join.
type joinRef struct{ join, pos int }

type branch[S any] struct {
	fn      BranchFunc[S]
	router  RouterFunc[S] // set instead of fn for AddConditionalEdges
	pathMap map[string]string
	dests   []string
}

type join struct {
	sources []string
	target  string
	key     string
}

// Builder assembles a graph over the state type S. Its methods record
// problems instead of failing; [Builder.Compile] reports all of them at once.
// The zero value is an empty builder ready to use, like the one [New]
// returns. A Builder is not safe for concurrent use.
type Builder[S any] struct {
	nodes      map[string]*node[S]
	order      []string
	startEdges []string
	startBr    []*branch[S]
	joins      []*join
	mw         []Middleware[S] // see Use
	problems   []string
}

// New returns an empty builder for state S. S must be a struct whose
// exported fields are all field types of package state (Value, Append, Sum,
// Map, Reduced, Messages).
func New[S any]() *Builder[S] {
	return &Builder[S]{nodes: make(map[string]*node[S])}
}

// NodeOption configures a node. It is made by the With… functions of
// this package.
type NodeOption interface{ applyNode(*nodeConfig) }

// nodeOption is a NodeOption that is a function.
type nodeOption func(*nodeConfig)

func (f nodeOption) applyNode(c *nodeConfig) { f(c) }

type nodeConfig struct {
	retry    *RetryPolicy
	timeout  time.Duration
	deferred bool
	cache    *CachePolicy
	dests    []string
	// mw holds the Middleware[S] of WithMiddleware (nodeConfig has no
	// type parameter); mwProblem says why they cannot be used.
	mw        []any
	mwProblem string
}

// WithRetry retries the node's failed attempts under p.
func WithRetry(p RetryPolicy) NodeOption {
	return nodeOption(func(c *nodeConfig) { c.retry = &p })
}

// WithNodeTimeout bounds each attempt of the node: an attempt that has not
// returned d after it started fails at that moment with a
// [*NodeTimeoutError] (errors.Is [ErrNodeTimeout]), which the node's
// [RetryPolicy] retries like any other error unless its RetryOn says
// otherwise. The node's context is cancelled at the deadline, and the
// runtime does not wait for a node that ignores it: such a node is
// abandoned. Its goroutine (each attempt of a node with a timeout runs on
// a goroutine of its own) runs on until the node returns, on its own copy
// of its input, and what it returns is dropped; it can no longer
// interrupt or stream, but any side effect it has outside the run still
// happens.
func WithNodeTimeout(d time.Duration) NodeOption {
	return nodeOption(func(c *nodeConfig) { c.timeout = d })
}

// WithDeferred makes the node wait until every other pending branch of the run
// has finished: it runs once, in the first step where nothing else is
// triggered.
func WithDeferred() NodeOption {
	return nodeOption(func(c *nodeConfig) { c.deferred = true })
}

// WithCachePolicy caches the node's results (its writes and routes) keyed by
// its input; the graph needs a cache ([WithCache]).
func WithCachePolicy(p CachePolicy) NodeOption {
	return nodeOption(func(c *nodeConfig) { c.cache = &p })
}

// AddNode adds a plain node.
func (b *Builder[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) *Builder[S] {
	if fn == nil {
		b.problem("node %q: nil function", name)
		return b
	}
	return b.addNode(name, func(ctx context.Context, s S) (Command[S], error) {
		out, err := fn(ctx, s)
		return Command[S]{Update: out}, err
	}, fn, opts)
}

// AddNodeWithInput adds to b a node whose input is its own type I instead
// of the graph's state, like a LangGraph node with its own input schema:
// the map step of a map-reduce, run once per item. It is reached only by
// Send tasks made with [SendInput] (an edge, a join or a destination
// declared for a conditional edge's router fails Compile; a router, a
// Goto or a state-carrying Send that reaches it fails the run with an
// error naming it), and it
// returns writes to the graph's state like any node. Its input is saved
// in checkpoints as JSON, so I must round-trip through encoding/json. I
// must be a concrete type, not an interface such as any: a Send is
// matched with the node by its payload's type, and a checkpoint could
// not restore an interface value's dynamic type (Compile fails, naming
// the node).
//
// It is a function, not a method, because Go methods cannot take type
// parameters.
func AddNodeWithInput[S, I any](b *Builder[S], name string, fn func(ctx context.Context, in I) (S, error), opts ...NodeOption) *Builder[S] {
	if fn == nil {
		b.problem("node %q: nil function", name)
		return b
	}
	if t := reflect.TypeFor[I](); t.Kind() == reflect.Interface {
		b.problem("node %q: its own input type %s is an interface; it must be a concrete type (a Send reaches the node by its payload's type, and a checkpoint restores that type)", name, t)
		return b
	}
	call := func(ctx context.Context, in any) (S, error) {
		v, ok := in.(I)
		if !ok {
			var zero S
			return zero, fmt.Errorf("graph: node %s takes a %s, got %T", name, reflect.TypeFor[I](), in)
		}
		return fn(ctx, v)
	}
	added := len(b.order)
	b.addNode(name, func(ctx context.Context, s S) (Command[S], error) {
		return Command[S]{}, fmt.Errorf("graph: node %s takes its own input (%s), not the state; reach it with graph.SendInput", name, reflect.TypeFor[I]())
	}, nil, opts)
	if len(b.order) > added { // added (not refused: see addNode)
		n := b.nodes[name]
		n.command = false
		n.inType, n.inFn = reflect.TypeFor[I](), call
		n.decodeIn = func(data []byte) (any, error) {
			var v I
			if err := json.Unmarshal(data, &v); err != nil {
				return nil, fmt.Errorf("decoding the %s input of node %s: %w", reflect.TypeFor[I](), name, err)
			}
			return v, nil
		}
	}
	return b
}

// AddCommandNode adds a node that returns a [Command].
func (b *Builder[S]) AddCommandNode(name string, fn CommandFunc[S], opts ...NodeOption) *Builder[S] {
	if fn == nil {
		b.problem("node %q: nil function", name)
		return b
	}
	return b.addNode(name, fn, nil, opts)
}

// addNode adds a node running fn; plain is the function of a node added
// with AddNode (nil for a command node).
func (b *Builder[S]) addNode(name string, fn CommandFunc[S], plain NodeFunc[S], opts []NodeOption) *Builder[S] {
	switch {
	case name == "":
		b.problem("a node has an empty name")
		return b
	case name == Start || name == End:
		b.problem("node %q: the name is reserved", name)
		return b
	case strings.ContainsAny(name, "|:"):
		b.problem("node %q: '|' and ':' are reserved characters in node names", name)
		return b
	case b.nodes[name] != nil:
		b.problem("node %q: added twice", name)
		return b
	}
	var c nodeConfig
	for _, o := range opts {
		if o != nil {
			o.applyNode(&c)
		}
	}
	mw, problem := nodeMiddleware[S](&c)
	if problem != "" {
		b.problem("node %q: %s", name, problem)
	}
	if b.nodes == nil {
		b.nodes = make(map[string]*node[S])
	}
	b.nodes[name] = &node[S]{name: name, fn: fn, plain: plain, command: plain == nil, retry: c.retry, timeout: c.timeout,
		deferred: c.deferred, cache: c.cache, dests: c.dests, mw: mw}
	b.order = append(b.order, name)
	return b
}

func (b *Builder[S]) problem(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// AddEdge runs to after from. Several edges from one node fan out in the
// next step; from may be [Start] and to may be [End].
func (b *Builder[S]) AddEdge(from, to string) *Builder[S] {
	switch {
	case from == End:
		b.problem("edge %s -> %s: END cannot be a start node", from, to)
	case to == Start:
		b.problem("edge %s -> %s: START cannot be an end node", from, to)
	case from == Start:
		b.startEdges = append(b.startEdges, to)
	default:
		if n := b.nodes[from]; n != nil {
			n.edges = append(n.edges, to)
		} else {
			b.problem("edge %s -> %s: found edge starting at unknown node %q", from, to, from)
		}
	}
	return b
}

// AddJoin runs to once every node of from has finished, possibly in
// different steps (a waiting edge). The join resets when to runs.
func (b *Builder[S]) AddJoin(from []string, to string) *Builder[S] {
	if len(from) == 0 {
		b.problem("join -> %s: no source nodes", to)
		return b
	}
	for _, f := range from {
		if f == Start || f == End {
			b.problem("join %s -> %s: %s cannot be a join source", strings.Join(from, "+"), to, f)
			return b
		}
	}
	b.joins = append(b.joins, &join{sources: append([]string(nil), from...), target: to, key: strings.Join(from, "+") + ":" + to})
	return b
}

// BranchOption configures a conditional edge or branch. It is made by the
// With… functions of this package.
type BranchOption interface{ applyBranch(*branchConfig) }

// branchOption is a BranchOption that is a function.
type branchOption func(*branchConfig)

func (f branchOption) applyBranch(c *branchConfig) { f(c) }

type branchConfig struct {
	pathMap map[string]string
	dests   []string
}

// WithPathMap maps the keys a router returns to node names. Its values are the
// branch's declared destinations unless [WithDestinations] is given too.
func WithPathMap(m map[string]string) BranchOption {
	return branchOption(func(c *branchConfig) { c.pathMap = m })
}

// AddConditionalEdges adds a router after from (or [Start], for a
// conditional entry point): it returns one node name, a key of its
// [WithPathMap], or [End]. A router that chooses several nodes at once (a
// list, in LangGraph's add_conditional_edges) is added with
// [Builder.AddMultiConditionalEdges]; one that also sends [Send] tasks,
// with [Builder.AddBranch].
func (b *Builder[S]) AddConditionalEdges(from string, fn RouterFunc[S], opts ...BranchOption) *Builder[S] {
	if fn == nil {
		b.problem("conditional edges from %q: nil function", from)
		return b
	}
	b.addBranch(from, &branch[S]{router: fn}, opts)
	return b
}

// AddMultiConditionalEdges adds a router after from (or [Start]) that
// chooses any number of nodes, path-map keys or [End] at once: every one
// it returns runs in the next step (none ends that branch). It is
// LangGraph's add_conditional_edges with a router returning a list.
func (b *Builder[S]) AddMultiConditionalEdges(from string, fn MultiRouterFunc[S], opts ...BranchOption) *Builder[S] {
	if fn == nil {
		b.problem("conditional edges from %q: nil function", from)
		return b
	}
	b.addBranch(from, &branch[S]{fn: func(ctx context.Context, s S) (Route[S], error) {
		nodes, err := fn(ctx, s)
		return Route[S]{Nodes: nodes}, err
	}}, opts)
	return b
}

// AddBranch adds a branch after from (or [Start]) that may choose several
// nodes and Send tasks.
func (b *Builder[S]) AddBranch(from string, fn BranchFunc[S], opts ...BranchOption) *Builder[S] {
	if fn == nil {
		b.problem("branch from %q: nil function", from)
		return b
	}
	b.addBranch(from, &branch[S]{fn: fn}, opts)
	return b
}

func (b *Builder[S]) addBranch(from string, br *branch[S], opts []BranchOption) {
	var c branchConfig
	for _, o := range opts {
		if o != nil {
			o.applyBranch(&c)
		}
	}
	br.pathMap, br.dests = c.pathMap, c.dests
	if br.dests == nil && br.pathMap != nil {
		for _, v := range br.pathMap {
			br.dests = append(br.dests, v)
		}
	}
	switch {
	case from == Start:
		b.startBr = append(b.startBr, br)
	case from == End:
		b.problem("branch from %s: END cannot be a start node", from)
	default:
		if n := b.nodes[from]; n != nil {
			n.branches = append(n.branches, br)
		} else {
			b.problem("branch from %q: found edge starting at unknown node %q", from, from)
		}
	}
}

// DestinationsOption declares where a node or a branch may go: it is both
// a [NodeOption] and a [BranchOption].
type DestinationsOption interface {
	NodeOption
	BranchOption
}

// WithDestinations declares the nodes a command node or a branch may
// choose ([End] included, if it may end the run), for validation and
// rendering. A branch is held to them at run time: one that chooses, or
// sends a [Send] to, a node outside them fails its source node's task
// with an [*UndeclaredDestinationError]. On a command node they are
// checked at Compile and drawn, as LangGraph's destinations=.
func WithDestinations(nodes ...string) DestinationsOption { return destinations(nodes) }

type destinations []string

func (d destinations) applyNode(c *nodeConfig) { c.dests = append(c.dests, d...) }

func (d destinations) applyBranch(c *branchConfig) { c.dests = append(c.dests, d...) }
