package graph

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/state"
)

type stateChannel = state.Channel

// Channels of pending writes besides the state fields.
const (
	chanRoute = "__route__"
)

const cmdTaskPrefix = "~cmd-"

// eachWrite calls fn with the name and the JSON write of every field
// written on *s, in the order of the fields' names.
func (g *Graph[S]) eachWrite(s *S, fn func(name string, write []byte)) error {
	p := unsafe.Pointer(s)
	for _, fi := range g.sc.byName {
		c := g.sc.ch(p, fi)
		if !c.Written() {
			continue
		}
		b, err := c.MarshalWrite()
		if err != nil {
			return fmt.Errorf("graph: encoding write of field %s: %w", g.sc.fields[fi].name, err)
		}
		fn(g.sc.fields[fi].name, b)
	}
	return nil
}

// writes encodes the fields written on *s.
func (g *Graph[S]) writes(s *S) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := g.eachWrite(s, func(name string, b []byte) {
		if m == nil {
			m = make(map[string]json.RawMessage)
		}
		m[name] = b
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// writesView is the [Writes] of *s (empty, not nil, when it wrote
// nothing), or nil when a write cannot be encoded (what a stream shows;
// saving reports the error).
func (g *Graph[S]) writesView(s *S) Writes {
	w, err := g.writes(s)
	if err != nil {
		return nil
	}
	if w == nil {
		return Writes{}
	}
	return Writes(w)
}

// fromWrites decodes writes encoded by writes. For a checkpoint of
// another shape ev is not nil: a write to a field the graph no longer has
// is dropped, and one it cannot decode is recorded in ev.
func (g *Graph[S]) fromWrites(m map[string]json.RawMessage, ev *evolution) (S, error) {
	var s S
	p := unsafe.Pointer(&s)
	for name, b := range m {
		fi, ok := g.sc.index[name]
		if !ok {
			if ev != nil {
				continue
			}
			return s, fmt.Errorf("write to unknown field %q", name)
		}
		if err := g.sc.ch(p, fi).UnmarshalWrite(b); err != nil {
			if ev != nil {
				ev.badField(name, fmt.Errorf("decoding a write: %w", err))
				continue
			}
			return s, fmt.Errorf("decoding write of field %s: %w", name, err)
		}
	}
	return s, nil
}

// writesAny reports whether any field of *s is written.
func (g *Graph[S]) writesAny(s *S) bool {
	p := unsafe.Pointer(s)
	for fi := range g.sc.fields {
		if g.sc.ch(p, fi).Written() {
			return true
		}
	}
	return false
}

// materialize turns the writes carried by *arg into values (a Send's input).
func (g *Graph[S]) materialize(arg *S, out *S, one *[1]stateChannel) {
	p, q := unsafe.Pointer(out), unsafe.Pointer(arg)
	for fi := range g.sc.fields {
		c := g.sc.ch(q, fi)
		if c.Written() {
			one[0] = c
			_ = g.sc.ch(p, fi).MergeWrites(one[:])
			one[0] = nil
		}
	}
}

type sendJSON struct {
	Node string                     `json:"node"`
	Arg  map[string]json.RawMessage `json:"arg,omitempty"`
	// Input is the input of a Send made with SendInput.
	Input json.RawMessage `json:"input,omitempty"`
}

type routeJSON struct {
	Nodes []string   `json:"nodes,omitempty"`
	Sends []sendJSON `json:"sends,omitempty"`
}

type frontierJSON struct {
	Input    map[string]json.RawMessage `json:"input,omitempty"`
	HasInput bool                       `json:"has_input,omitempty"`
	Nodes    []string                   `json:"nodes,omitempty"`
	Sends    []sendJSON                 `json:"sends,omitempty"`
	Joins    map[string][]string        `json:"joins,omitempty"`
	Deferred []string                   `json:"deferred,omitempty"`
	Last     []string                   `json:"last,omitempty"`
	Joined   []string                   `json:"joined,omitempty"`
	Accum    map[string]json.RawMessage `json:"accum,omitempty"`
}

func (g *Graph[S]) encodeSends(sends []Send[S]) ([]sendJSON, error) {
	var out []sendJSON
	for i := range sends {
		if sends[i].hasInput() {
			in := sends[i].payload()
			b, err := json.Marshal(in)
			if err != nil {
				return nil, fmt.Errorf("graph: encoding the %T input sent to node %s: %w", in, sends[i].Node, err)
			}
			out = append(out, sendJSON{Node: sends[i].Node, Input: b})
			continue
		}
		a, err := g.writes(&sends[i].Arg)
		if err != nil {
			return nil, err
		}
		out = append(out, sendJSON{Node: sends[i].Node, Arg: a})
	}
	return out, nil
}

// decodeSends decodes sends encoded by encodeSends; with ev (a checkpoint
// of another shape), what keeps them from being run is recorded in ev.
func (g *Graph[S]) decodeSends(in []sendJSON, ev *evolution) ([]Send[S], error) {
	var out []Send[S]
	for _, s := range in {
		n := g.nodes[s.Node]
		var err error
		switch {
		case n == nil && ev != nil:
			ev.missingNode(s.Node, "a Send")
			continue
		case n == nil:
			return nil, fmt.Errorf("send to unknown node %q", s.Node)
		case n.inType != nil && s.Input == nil:
			err = fmt.Errorf("send to node %q, which takes its own input, has none", s.Node)
		case n.inType != nil:
			var in any
			if in, err = n.decodeIn(s.Input); err == nil {
				out = append(out, sendOf[S](s.Node, in))
				continue
			}
		case s.Input != nil:
			err = fmt.Errorf("send to node %q, which takes the state, carries an input of its own", s.Node)
		default:
			var a S
			if a, err = g.fromWrites(s.Arg, ev); err == nil {
				out = append(out, Send[S]{Node: s.Node, Arg: a})
				continue
			}
		}
		if ev == nil {
			return nil, err
		}
		ev.problem(err)
	}
	return out, nil
}

// encodeFrontier appends the JSON of f (and of the accumulated writes) to
// b.
func (g *Graph[S]) encodeFrontier(b []byte, f *frontier[S], accum *S) ([]byte, error) {
	if accum == nil && f.input == nil && len(f.sends) == 0 && len(f.joins) == 0 && len(f.joined) == 0 {
		// The common case, written by hand: this runs every step.
		b = append(b, '{')
		b = appendStrings(b, "nodes", f.nodes)
		b = appendStrings(b, "deferred", f.deferred)
		b = appendStrings(b, "last", f.last)
		if len(b) > 1 {
			b = b[:len(b)-1]
		}
		return append(b, '}'), nil
	}
	var fj frontierJSON
	var err error
	if accum != nil {
		if fj.Accum, err = g.writes(accum); err != nil {
			return nil, err
		}
	}
	if f.input != nil {
		fj.HasInput = true
		if fj.Input, err = g.writes(f.input); err != nil {
			return nil, err
		}
	}
	fj.Nodes = f.nodes
	fj.Deferred = f.deferred
	fj.Last = f.last
	fj.Joined = f.joined
	if fj.Sends, err = g.encodeSends(f.sends); err != nil {
		return nil, err
	}
	for ji, seen := range f.joins {
		if fj.Joins == nil {
			fj.Joins = make(map[string][]string)
		}
		var names []string
		for i, src := range g.joins[ji].sources {
			if seen.has(i) {
				names = append(names, src)
			}
		}
		fj.Joins[g.joins[ji].key] = names
	}
	j, err := json.Marshal(fj)
	return append(b, j...), err
}

// appendStrings appends `"key":["a","b"],` when list is not empty.
func appendStrings(b []byte, key string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, "],"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeFrontier decodes a frontier encoded by encodeFrontier, and the
// accumulated writes into *accum when accum is not nil. It trusts nothing:
// a frontier that encodeFrontier could not have written for this graph is
// an error, the empty one included (a finished run's frontier is "{}").
// For a checkpoint of another shape ev is not nil: what the graph cannot
// continue is recorded in ev, what it need not continue is dropped (see
// evolve.go).
func (g *Graph[S]) decodeFrontier(b []byte, accum *S, ev *evolution) (frontier[S], error) {
	var f frontier[S]
	if len(b) == 0 {
		return f, errors.New("empty frontier")
	}
	var fj frontierJSON
	if err := decodeStrict(b, &fj); err != nil {
		return f, fmt.Errorf("decoding frontier: %w", err)
	}
	if fj.Input != nil && !fj.HasInput {
		return f, errors.New("frontier has input but not has_input")
	}
	if ev != nil {
		for _, list := range []struct {
			names []string
			what  string
		}{{fj.Nodes, "a task of the next step"}, {fj.Deferred, "a deferred task"}, {fj.Joined, "a join that fired"}} {
			for _, n := range list.names {
				if nd := g.nodes[n]; nd == nil {
					ev.missingNode(n, list.what)
				} else if nd.inType != nil {
					ev.ownInputNode(n, list.what)
				}
			}
		}
		// A node that ran last and has nothing pending may be gone.
		fj.Last = slices.DeleteFunc(fj.Last, func(n string) bool { return n != Start && g.nodes[n] == nil })
	} else if err := g.checkNodes("frontier", fj.Nodes, fj.Deferred, fj.Joined); err != nil {
		return f, err
	}
	for _, n := range fj.Last {
		if n != Start && g.nodes[n] == nil {
			return f, fmt.Errorf("frontier: unknown node %q ran last", n)
		}
	}
	if accum != nil && fj.Accum != nil {
		a, err := g.fromWrites(fj.Accum, ev)
		if err != nil {
			return f, fmt.Errorf("frontier: accumulated writes: %w", err)
		}
		*accum = a
	}
	if fj.HasInput {
		in, err := g.fromWrites(fj.Input, ev)
		if err != nil {
			return f, fmt.Errorf("frontier: input: %w", err)
		}
		f.input = &in
	}
	f.nodes, f.deferred, f.last, f.joined = fj.Nodes, fj.Deferred, fj.Last, fj.Joined
	var err error
	if f.sends, err = g.decodeSends(fj.Sends, ev); err != nil {
		return f, fmt.Errorf("frontier: %w", err)
	}
	for key, names := range fj.Joins {
		ji := slices.IndexFunc(g.joins, func(j *join) bool { return j.key == key })
		if ji < 0 && ev != nil {
			if ji = g.evolveJoin(key, names); ji < 0 {
				continue // the join is gone: nothing waits on its progress
			}
		}
		if ji < 0 {
			return f, fmt.Errorf("frontier: unknown join %q", key)
		}
		if f.joins == nil {
			f.joins = make(map[int]seenSources)
		}
		for _, n := range names {
			i := slices.Index(g.joins[ji].sources, n)
			if i < 0 {
				return f, fmt.Errorf("frontier: join %q has no source %q", key, n)
			}
			f.joins[ji] = f.joins[ji].with(i)
		}
	}
	return f, nil
}

// checkNodes returns an error naming what if a list holds a name that is
// not a node of g.
func (g *Graph[S]) checkNodes(what string, lists ...[]string) error {
	for _, list := range lists {
		for _, n := range list {
			if g.nodes[n] == nil {
				return fmt.Errorf("%s: unknown node %q", what, n)
			}
		}
	}
	return nil
}

// decodeStrict decodes b, which must be one JSON object with no field that
// v lacks, into v.
func decodeStrict(b []byte, v any) error {
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// encodeResult encodes a finished task's writes and route (pending writes
// and the node cache use it).
func (g *Graph[S]) encodeResult(t *task[S]) ([]byte, error) {
	w, err := g.writes(&t.out)
	if err != nil {
		return nil, err
	}
	r, err := g.encodeRoute(t.route)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		W map[string]json.RawMessage `json:"w,omitempty"`
		R json.RawMessage            `json:"r"`
	}{w, r})
}

// decodeResult decodes a result encoded by encodeResult into t.
func (g *Graph[S]) decodeResult(b []byte, t *task[S]) error {
	var v struct {
		W map[string]json.RawMessage `json:"w"`
		R json.RawMessage            `json:"r"`
	}
	if err := decodeStrict(b, &v); err != nil {
		return err
	}
	out, err := g.fromWrites(v.W, nil)
	if err != nil {
		return err
	}
	r, err := g.decodeRoute(v.R, false, nil)
	if err != nil {
		return err
	}
	t.out, t.route = out, r
	return nil
}

func (g *Graph[S]) encodeRoute(r Route[S]) ([]byte, error) {
	s, err := g.encodeSends(r.Sends)
	if err != nil {
		return nil, err
	}
	return json.Marshal(routeJSON{Nodes: r.Nodes, Sends: s})
}

// decodeRoute decodes a route encoded by encodeRoute. Only a command's
// route (a goto) may name End: a node's route never does.
func (g *Graph[S]) decodeRoute(b []byte, cmd bool, ev *evolution) (Route[S], error) {
	var rj routeJSON
	if err := decodeStrict(b, &rj); err != nil {
		return Route[S]{}, fmt.Errorf("decoding route: %w", err)
	}
	for _, n := range rj.Nodes {
		if !(cmd && n == End) && g.nodes[n] == nil {
			if ev != nil {
				ev.missingNode(n, "the route of a finished task")
				continue
			}
			return Route[S]{}, fmt.Errorf("route to unknown node %q", n)
		}
		if ev != nil && n != End && g.nodes[n].inType != nil {
			ev.ownInputNode(n, "the route of a finished task")
		}
	}
	s, err := g.decodeSends(rj.Sends, ev)
	if err != nil {
		return Route[S]{}, fmt.Errorf("route: %w", err)
	}
	return Route[S]{Nodes: rj.Nodes, Sends: s}, nil
}

// taskWrites encodes what a task leaves behind: its writes and route when
// it finished, its error, its interrupt and the resume answers so far.
func (l *loop[S]) taskWrites(id string, t *task[S]) ([]checkpoint.Write, error) {
	var ws []checkpoint.Write
	add := func(ch string, v []byte) {
		ws = append(ws, checkpoint.Write{TaskID: id, TaskPath: t.name, Channel: ch, Idx: checkpoint.WriteIndex(ch, len(ws)), Value: v})
	}
	if t.done || strings.HasPrefix(id, cmdTaskPrefix) {
		if err := l.g.eachWrite(&t.out, add); err != nil {
			return nil, err
		}
		r, err := l.g.encodeRoute(t.route)
		if err != nil {
			return nil, err
		}
		add(chanRoute, r)
	}
	if t.err != nil {
		b, _ := json.Marshal(t.err.Error())
		add(checkpoint.ChannelError, b)
	}
	if paused, raised := t.hdr.interrupts(); paused {
		b, err := json.Marshal(raised)
		if err != nil {
			return nil, fmt.Errorf("graph: interrupt payload of node %s is not JSON-encodable: %w", t.name, err)
		}
		add(checkpoint.ChannelInterrupt, b)
	}
	if answers := t.hdr.answers(); len(answers) > 0 {
		b, err := json.Marshal(answers)
		if err != nil {
			return nil, fmt.Errorf("graph: resume values of node %s are not JSON-encodable: %w", t.name, err)
		}
		add(checkpoint.ChannelResume, b)
	}
	return ws, nil
}

func (l *loop[S]) putWrites(ctx context.Context, id string, t *task[S]) error {
	if l.saver == nil {
		return nil
	}
	if l.lease != nil {
		if err := l.lease.lostErr(); err != nil {
			return err
		}
	}
	ws, err := l.taskWrites(id, t)
	if err != nil {
		return err
	}
	ref := checkpoint.Ref{ThreadID: l.cfg.thread, Namespace: l.ns, ID: l.cpID}
	if err := l.durability().writes(l.savingCtx(ctx), l, ref, ws); err != nil {
		return &SaverError{Op: opWrites, Thread: l.cfg.thread, Node: t.name, Err: err}
	}
	return nil
}

// Channel versions identify a channel's value within a thread: savers
// store each value once under its version, so two different values must
// never share one — not across forks of a thread, nor across processes or
// machines writing one database. A version is a tick in its high bits,
// one more than the tick of the newest version the branch has seen (so a
// new version is greater than every version it follows), and a low part
// that differs between every two versions this process makes (a per-
// process random origin plus a counter). Two versions made by one process
// never collide; two made by different processes collide only when both
// their ticks and their random origins meet (about 1 in 2^24 per pair of
// processes), and then the saver refuses the second value with a
// checkpoint.VersionConflictError instead of keeping one silently.
const (
	versionLowBits = 24
	versionLowMask = 1<<versionLowBits - 1
	// versionMaxTick keeps versions positive.
	versionMaxTick = 1<<(63-versionLowBits) - 1
)

var (
	versionOrigin  = randUint64()
	versionCounter atomic.Uint64
)

func randUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// nextVersion returns a channel version greater than cur, unique within the
// process and, with overwhelming likelihood, across processes (see above).
func nextVersion(cur int64) (int64, error) {
	tick := cur>>versionLowBits + 1
	if tick > versionMaxTick {
		return 0, fmt.Errorf("graph: channel versions exhausted (version %d)", cur)
	}
	low := int64((versionOrigin + versionCounter.Add(1)) & versionLowMask)
	return tick<<versionLowBits | low, nil
}

// durability returns the run's durability mode: synchronous outside a
// run (UpdateState).
func (l *loop[S]) durability() durabilityMode[S] {
	if l.dur == nil {
		l.dur = syncDurability[S]{}
	}
	return l.dur
}

// save writes a checkpoint of the current state and frontier.
func (l *loop[S]) save(ctx context.Context, source string) error {
	if l.saver == nil {
		return nil // (checked here too, so that a run without a saver makes no call)
	}
	return l.saveAt(ctx, source, l.step)
}

// saveAt is save for a checkpoint of the given step (a replay's fork
// copies a checkpoint, step included).
func (l *loop[S]) saveAt(ctx context.Context, source string, step int) error {
	if l.saver == nil {
		return nil
	}
	if l.lease != nil {
		// A run that lost its lease stops before it writes again.
		if err := l.lease.lostErr(); err != nil {
			return err
		}
	}
	parent, fork := l.cpID, l.fork
	l.fork = false
	l.cpTime = time.Now()
	l.cpID = checkpoint.NewIDAt(l.cpTime)
	l.cpStep = step
	return l.durability().checkpoint(l.savingCtx(ctx), l, parent, source, fork)
}

// checkpoint builds the checkpoint l.cpID with the values changed since the
// last one saved.
func (l *loop[S]) checkpoint(parent, source string, fork bool) (*checkpoint.Checkpoint, error) {
	var accum *S
	if l.accumulate {
		accum = &l.accum
	}
	b, err := l.g.encodeFrontier(l.frBuf[:0], &l.fr, accum)
	if err != nil {
		return nil, err
	}
	l.frBuf = b
	// A loop's frontier is the same step after step: checkpoints share
	// its bytes (savers do not modify them, see checkpoint.Saver.Put).
	if !bytes.Equal(b, l.frLast) {
		l.frLast = bytes.Clone(b)
	}
	fr := l.frLast
	cp := &checkpoint.Checkpoint{
		ID: l.cpID, ThreadID: l.cfg.thread, Namespace: l.ns, ParentID: parent,
		CreatedAt: l.cpTime.UTC(),
		Metadata: checkpoint.Metadata{Source: source, Step: l.cpStep, Parents: l.parents, RunID: l.cfg.runID,
			Extra: maps.Clone(l.cfg.metadata)},
		Frontier: fr,
		Shape:    l.g.shape,
		Fork:     fork,
	}
	p := unsafe.Pointer(&l.vals)
	n := 0
	for _, v := range l.versions {
		if v != 0 {
			n++
		}
	}
	cp.Channels = make([]checkpoint.Channel, 0, n)
	for _, fi := range l.g.sc.byName {
		v := l.versions[fi]
		if v == 0 {
			continue
		}
		ch := checkpoint.Channel{Name: l.g.sc.fields[fi].name, Version: v}
		if v != l.saved[fi] {
			b, err := l.g.sc.ch(p, fi).MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("graph: encoding field %s: %w", ch.Name, err)
			}
			if b == nil {
				b = []byte("null")
			}
			ch.Value = b
		}
		cp.Channels = append(cp.Channels, ch)
	}
	copy(l.saved, l.versions)
	return cp, nil
}

// restoredTask is what pending writes say about a task of the checkpoint.
type restoredTask[S any] struct {
	done       bool
	out        S
	route      Route[S]
	answers    []any
	interrupts []Interruption
	err        string
	name       string
}

// corrupt returns the error of a checkpoint t that cannot be restored.
func corrupt(t *checkpoint.Tuple, err error) error {
	return &checkpoint.CorruptError{ThreadID: t.ThreadID, Namespace: t.Namespace, CheckpointID: t.ID, Err: err}
}

// restore loads a checkpoint's state and frontier, and applies the writes
// of commands recorded against it. A checkpoint of a graph of another
// shape is continued when it can be (see evolve.go), and gives a
// [*ShapeMismatchError] naming what is missing when it cannot; one that
// this graph cannot have written (a missing or undecodable value,
// frontier or command) a [*checkpoint.CorruptError].
func (l *loop[S]) restore(t *checkpoint.Tuple) error {
	l.ev = nil
	if t.Shape != "" && t.Shape != l.g.shape {
		l.ev = &evolution{}
	}
	if t.Metadata.Step < -1 {
		return corrupt(t, fmt.Errorf("step %d", t.Metadata.Step))
	}
	p := unsafe.Pointer(&l.vals)
	for _, ch := range t.Channels {
		fi, ok := l.g.sc.index[ch.Name]
		if !ok {
			if t.Shape == l.g.shape {
				// The shape covers the fields: this graph wrote it.
				return corrupt(t, fmt.Errorf("value of unknown field %q", ch.Name))
			}
			continue // a field this graph no longer has
		}
		if ch.Version <= 0 {
			return corrupt(t, fmt.Errorf("field %s has version %d", ch.Name, ch.Version))
		}
		if ch.Value == nil {
			return corrupt(t, fmt.Errorf("no value for field %s at version %d", ch.Name, ch.Version))
		}
		if err := l.g.sc.ch(p, fi).UnmarshalJSON(ch.Value); err != nil {
			if l.ev != nil {
				l.ev.badField(ch.Name, err)
				l.ev.state = true
				continue
			}
			return corrupt(t, fmt.Errorf("decoding field %s: %w", ch.Name, err))
		}
		l.versions[fi] = ch.Version
		l.maxVer = max(l.maxVer, ch.Version)
	}
	copy(l.saved, l.versions)
	var accum *S
	if l.accumulate {
		accum = &l.accum
	}
	fr, err := l.g.decodeFrontier(t.Frontier, accum, l.ev)
	if err != nil {
		return corrupt(t, err)
	}
	l.fr = fr
	l.cpID = t.ID
	l.cpStep = t.Metadata.Step
	if l.nested != nil {
		l.parents = l.nested.parents
	}
	// Commands recorded against this checkpoint, oldest first.
	var cmds []string
	byTask := make(map[string][]checkpoint.Write)
	for _, w := range t.PendingWrites {
		if strings.HasPrefix(w.TaskID, cmdTaskPrefix) {
			if _, ok := byTask[w.TaskID]; !ok {
				cmds = append(cmds, w.TaskID)
			}
			byTask[w.TaskID] = append(byTask[w.TaskID], w)
		}
	}
	sort.Strings(cmds)
	nerr := 0
	if l.ev != nil {
		nerr = len(l.ev.errs)
	}
	for _, id := range cmds {
		r, err := l.decodeTask(byTask[id], true)
		if err == nil && (r.name != "command" || !r.done) {
			err = errors.New("not a command's writes")
		}
		if err == nil {
			err = l.applyStandalone(&task[S]{hdr: new(taskHeader), name: "command", out: r.out, route: r.route})
		}
		if err != nil {
			return corrupt(t, fmt.Errorf("command %s: %w", id, err))
		}
	}
	if l.ev != nil && len(l.ev.errs) > nerr {
		l.ev.state = true // a command's update is part of the state
	}
	return l.ev.err(t, l.g.shape)
}

// decodeTask decodes the pending writes of one task, or of a command,
// written by taskWrites.
func (l *loop[S]) decodeTask(ws []checkpoint.Write, cmd bool) (*restoredTask[S], error) {
	r := &restoredTask[S]{}
	writes := make(map[string]json.RawMessage)
	for i, w := range ws {
		if i > 0 && w.TaskPath != r.name {
			return nil, fmt.Errorf("writes of one task name nodes %q and %q", r.name, w.TaskPath)
		}
		r.name = w.TaskPath
		switch w.Channel {
		case chanRoute:
			rt, err := l.g.decodeRoute(w.Value, cmd, l.ev)
			if err != nil {
				return nil, err
			}
			r.route, r.done = rt, true
		case checkpoint.ChannelError:
			if err := json.Unmarshal(w.Value, &r.err); err != nil {
				return nil, fmt.Errorf("decoding error: %w", err)
			}
		case checkpoint.ChannelInterrupt:
			if err := json.Unmarshal(w.Value, &r.interrupts); err != nil {
				return nil, fmt.Errorf("decoding interrupt: %w", err)
			}
		case checkpoint.ChannelResume:
			if err := json.Unmarshal(w.Value, &r.answers); err != nil {
				return nil, fmt.Errorf("decoding resume values: %w", err)
			}
		case checkpoint.ChannelNoWrites:
			r.done = true
		default:
			writes[w.Channel] = w.Value
		}
	}
	out, err := l.g.fromWrites(writes, l.ev)
	if err != nil {
		return nil, err
	}
	r.out = out
	return r, nil
}

// restorePending indexes the checkpoint's pending writes by task, so that
// finished tasks are not run again and interrupted ones get their answers.
// It follows restore. Writes of a task that the checkpoint's next step does
// not run (nor a command) give a [*checkpoint.CorruptError]: running it
// again, or dropping its interrupt, would pass the damage silently.
func (l *loop[S]) restorePending(t *checkpoint.Tuple) error {
	byTask := make(map[string][]checkpoint.Write)
	for _, w := range t.PendingWrites {
		if !strings.HasPrefix(w.TaskID, cmdTaskPrefix) {
			byTask[w.TaskID] = append(byTask[w.TaskID], w)
		}
	}
	l.restored = make(map[string]*restoredTask[S], len(byTask))
	if len(byTask) == 0 {
		return nil
	}
	names := l.nextTasks(t)
	for id, ws := range byTask {
		name, ok := names[id]
		if !ok {
			return corrupt(t, fmt.Errorf("pending writes of task %q (%s), which the checkpoint does not run next", id, ws[0].TaskPath))
		}
		r, err := l.decodeTask(ws, false)
		if err == nil && r.name != name {
			err = fmt.Errorf("written by node %q, not %q", r.name, name)
		}
		if err != nil {
			return corrupt(t, fmt.Errorf("pending writes of task %q (%s): %w", id, name, err))
		}
		l.restored[id] = r
	}
	return l.ev.err(t, l.g.shape)
}

// nextTasks returns the node of every task of the step after checkpoint t,
// which restore loaded, by task ID.
func (l *loop[S]) nextTasks(t *checkpoint.Tuple) map[string]string {
	step, restored := l.step, l.restored
	l.step, l.restored = t.Metadata.Step+1, nil
	names := make(map[string]string)
	for _, tk := range l.prepare() {
		names[tk.hdr.ID()] = tk.name
	}
	l.step, l.restored = step, restored
	return names
}
