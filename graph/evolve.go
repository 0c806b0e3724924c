package graph

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Graph evolution: resuming a checkpoint written by a graph of another
// shape (a deploy added a node, changed an edge or a router, removed a
// node or a field). The checkpoint's frontier names the tasks to run next
// and its pending writes what the paused step's tasks left behind; both
// name nodes and fields, never edges or routers, which are evaluated when
// a task finishes. So the new graph continues the checkpoint when it has
// every node with work pending and can decode every stored value:
//
//   - a stored value of a field the graph no longer has is dropped, and a
//     field the checkpoint lacks starts at its zero value (LangGraph's
//     channels_from_checkpoint does the same);
//   - a node that ran last but has nothing pending may be gone;
//   - a join's progress is kept when the graph still has a join to the
//     same target from the sources already seen, else dropped (the channel
//     of a LangGraph barrier is named after its sources, and is dropped
//     when they change);
//   - a node with work pending — a task of the next step, a Send, a fired
//     join, a deferred node, an interrupt waiting for its answer, the route
//     of a task that finished in a paused step — that the graph lacks, or a
//     stored value it cannot decode, makes the checkpoint impossible to
//     continue: a [*ShapeMismatchError] names them. (LangGraph skips a Send
//     to an unknown node with a warning; here the run would silently lose
//     work, so it refuses.)
//
// A checkpoint of the graph's own shape is decoded strictly: anything
// unexpected in it is a [*checkpoint.CorruptError].

// evolution collects what keeps a checkpoint of another shape from being
// continued. A nil *evolution decodes strictly.
type evolution struct {
	nodes  []string
	fields []string
	errs   []error
	// state is set when the state itself (a stored value, a command's
	// update) cannot be restored; otherwise every problem is about
	// pending work, which new input drops.
	state bool
}

// pendingOnly reports whether every problem is about pending work.
func (ev *evolution) pendingOnly() bool { return ev != nil && !ev.state }

// missingNode records a node with pending work that the graph lacks.
func (ev *evolution) missingNode(name, where string) {
	if !slices.Contains(ev.nodes, name) {
		ev.nodes = append(ev.nodes, name)
	}
	ev.errs = append(ev.errs, fmt.Errorf("%s: node %q is gone", where, name))
}

// ownInputNode records a node triggered with the state (a task of the
// next step, a route) that now takes an input of its own.
func (ev *evolution) ownInputNode(name, where string) {
	if !slices.Contains(ev.nodes, name) {
		ev.nodes = append(ev.nodes, name)
	}
	ev.errs = append(ev.errs, fmt.Errorf("%s: node %q now takes its own input, not the state", where, name))
}

// badField records a stored value of a field that the graph cannot decode.
func (ev *evolution) badField(name string, err error) {
	if !slices.Contains(ev.fields, name) {
		ev.fields = append(ev.fields, name)
	}
	ev.errs = append(ev.errs, fmt.Errorf("field %s: %w", name, err))
}

// problem records anything else that keeps the checkpoint from being
// continued.
func (ev *evolution) problem(err error) { ev.errs = append(ev.errs, err) }

// err returns the error of checkpoint t, or nil when it can be continued.
func (ev *evolution) err(t *checkpoint.Tuple, want string) error {
	if ev == nil || len(ev.errs) == 0 {
		return nil
	}
	sort.Strings(ev.nodes)
	sort.Strings(ev.fields)
	return &ShapeMismatchError{CheckpointID: t.ID, Want: want, Got: t.Shape,
		Nodes: ev.nodes, Fields: ev.fields, Err: errors.Join(ev.errs...)}
}

// evolveJoin finds the join of g that carries on the progress of a join
// with the given key that g no longer has (its sources changed): a join
// to the same target with every source already seen. It returns -1 when
// there is none.
func (g *Graph[S]) evolveJoin(key string, seen []string) int {
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return -1
	}
	target := key[i+1:]
	for ji, j := range g.joins {
		if j.target != target {
			continue
		}
		ok := true
		for _, n := range seen {
			ok = ok && slices.Contains(j.sources, n)
		}
		if ok {
			return ji
		}
	}
	return -1
}
