package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Mode selects what a stream yields; modes combine with |.
type Mode uint16

// Stream modes, as in LangGraph.
const (
	// ModeValues yields the whole state (an S) after every superstep that
	// changed it, at the start of a resumed run, and when a run pauses
	// (then with the pending interrupts in [Event.Interrupts]).
	ModeValues Mode = 1 << iota
	// ModeUpdates yields each task's writes (an S carrying them, and
	// [Event.Writes]) as the task finishes.
	ModeUpdates
	// ModeCustom yields what nodes write with [StreamWriter].
	ModeCustom
	// ModeMessages yields LLM tokens ([MessageChunk]) written through
	// [MessageWriter].
	ModeMessages
	// ModeTasks yields a [TaskStart] when a task starts and a [TaskResult]
	// when it ends.
	ModeTasks
	// ModeCheckpoints yields a [CheckpointInfo] for every checkpoint saved,
	// whatever the [Durability].
	ModeCheckpoints
	// ModeInterrupts yields an event for each task that interrupts, as it
	// does (its [Event.Interrupts], with Node and TaskID naming it), and
	// one when the run stops at static breakpoints (a [Breakpoint]
	// payload). Streams that yield ModeUpdates or ModeValues yield these
	// too: a pause is part of both. With [WithSubgraphs], an interrupt in
	// a subgraph is streamed twice, by the subgraph's task (in its
	// namespace) and by the parent task that ran the subgraph, with the
	// same [Interruption.ID]: a UI asks the question once per ID.
	ModeInterrupts
	// ModeDebug is ModeTasks and ModeCheckpoints together.
	ModeDebug = ModeTasks | ModeCheckpoints
)

// String names the modes set in m.
func (m Mode) String() string {
	var names []string
	for _, x := range []struct {
		m Mode
		s string
	}{{ModeValues, "values"}, {ModeUpdates, "updates"}, {ModeCustom, "custom"}, {ModeMessages, "messages"}, {ModeTasks, "tasks"}, {ModeCheckpoints, "checkpoints"}, {ModeInterrupts, "interrupts"}} {
		if m&x.m != 0 {
			names = append(names, x.s)
		}
	}
	return strings.Join(names, "|")
}

// Event is one item of a stream.
type Event struct {
	Mode Mode
	// Namespace is the subgraph path that emitted the event ("" for the
	// root graph): "node:taskID" segments joined by "|".
	Namespace string
	// Step is the superstep.
	Step int
	// Node and TaskID name the task the event comes from, when it comes
	// from one.
	Node   string
	TaskID string
	// Payload depends on Mode: the state S (values), the task's writes as
	// an S (updates), the written value (custom), a [MessageChunk]
	// (messages), a [TaskStart] or [TaskResult] (tasks), a
	// [CheckpointInfo] (checkpoints), nothing or a [Breakpoint]
	// (interrupts). Subgraph events carry the subgraph's state type.
	Payload any
	// Writes lists, on an updates event, the fields the task wrote and
	// what it wrote to them.
	Writes Writes
	// Cached marks an update restored from pending writes or the node
	// cache instead of being computed again.
	Cached bool
	// Interrupts lists the interrupts a task raised (on its interrupts
	// event), or every pending interrupt (on the values event of a
	// pausing step).
	Interrupts []Interruption
}

// String describes the event in one line, for logs and debugging: its
// mode, step, namespace and task, and what it carries.
func (e Event) String() string {
	var b strings.Builder
	if e.Mode == 0 {
		b.WriteString("event") // the zero Event a stream yields beside its error
	}
	b.WriteString(e.Mode.String())
	fmt.Fprintf(&b, " step=%d", e.Step)
	if e.Namespace != "" {
		fmt.Fprintf(&b, " ns=%s", e.Namespace)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node=%s", e.Node)
	}
	if e.Cached {
		b.WriteString(" cached")
	}
	switch {
	case e.Writes != nil:
		b.WriteString(" writes=")
		b.WriteString(e.Writes.String())
	case e.Mode == ModeInterrupts && len(e.Interrupts) > 0:
		for _, in := range e.Interrupts {
			fmt.Fprintf(&b, " interrupt=%s:%s", in.ID, compactJSON(in.Value))
		}
	case e.Mode == ModeValues || e.Mode == ModeUpdates:
		// The state's fields are runtime types: their JSON reads best.
		fmt.Fprintf(&b, " %s", compactJSON(e.Payload))
	case e.Payload != nil:
		fmt.Fprintf(&b, " %+v", e.Payload)
	}
	return b.String()
}

// compactJSON is v as JSON, or as %v when it has none.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// Writes maps each field a task wrote to the JSON of its write, as
// checkpoints record it: a last-value field's new value, a reducer
// field's {"updates": [...]} (with "overwrite" when it replaced the
// value). Fields the task did not write are absent.
type Writes map[string]json.RawMessage

// Fields returns the names of the written fields, sorted.
func (w Writes) Fields() []string {
	names := make([]string, 0, len(w))
	for k := range w {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// String lists the writes as {Field: json, ...}, sorted by field.
func (w Writes) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range w.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.Write(w[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Breakpoint is the payload of the [ModeInterrupts] event of a run that
// stopped at static breakpoints ([WithInterruptBefore], [WithInterruptBefore],
// …).
type Breakpoint struct {
	// Nodes are the breakpoint nodes that stopped the run.
	Nodes []string
	// After is false for a stop before the nodes run, true for one after.
	After bool
}

// TaskStart is the payload of a [ModeTasks] event when a task starts.
type TaskStart struct {
	Name  string
	Input any
	Push  bool
}

// TaskResult is the payload of a [ModeTasks] event when a task ends.
type TaskResult struct {
	Name string
	// Output is the state the task returned (an S carrying its writes),
	// and Writes what it wrote, when it finished.
	Output any
	Writes Writes
	// Err is the task's error, when it failed.
	Err error
	// Interrupts are the interrupts it raised, when it paused.
	Interrupts []Interruption
}

// CheckpointInfo is the payload of a [ModeCheckpoints] event.
type CheckpointInfo struct {
	ID       string
	ParentID string
	Step     int
	Source   string
	Next     []string
	Values   any
}
