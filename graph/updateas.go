package graph

import (
	"fmt"
	"unsafe"
)

// UpdateAs returns what the task of an updates event ([ModeUpdates]) wrote,
// as a state S holding just those writes applied to an empty state: a
// state.Messages field holds the messages the node added, a state.Append
// field the items it appended, a state.Value field the value it set;
// fields the node did not write are zero. Read it with the fields' usual
// getters:
//
//	for ev, err := range g.Stream(ctx, in) {
//		if err != nil { … }
//		upd, err := graph.UpdateAs[State](ev)
//		if err != nil { … } // not an updates event of a graph of state State
//		for _, m := range upd.Messages.List() { … }
//	}
//
// (The event's Payload is the node's own return value, whose reducer fields
// hold write operations, not values; [Event.Writes] has the same writes as
// JSON.) An event of a subgraph carries the subgraph's state type: ask for
// that type, with the event's Namespace telling which subgraph it is.
func UpdateAs[S any](ev Event) (S, error) {
	var out S
	if ev.Mode != ModeUpdates {
		return out, fmt.Errorf("graph: UpdateAs needs an updates event, got %s", ev.Mode)
	}
	in, ok := ev.Payload.(S)
	if !ok {
		return out, fmt.Errorf("graph: the updates event of node %s (namespace %q) carries a %T, not a %T", ev.Node, ev.Namespace, ev.Payload, out)
	}
	sc, problems := schemaOf[S]()
	if len(problems) > 0 {
		return out, &CompileError{Problems: problems}
	}
	var one [1]stateChannel
	if fi, err := sc.mergeWritten(unsafe.Pointer(&out), unsafe.Pointer(&in), &one); err != nil {
		return out, fmt.Errorf("graph: applying node %s's write of field %s: %w", ev.Node, sc.fields[fi].name, err)
	}
	return out, nil
}
