package graph

import "strings"

// Mode selects what a stream yields; modes combine with |.
type Mode uint16

// Stream modes, as in LangGraph.
const (
	// ModeValues yields the whole state (an S) after every superstep that
	// changed it, at the start of a resumed run, and when a run pauses.
	ModeValues Mode = 1 << iota
	// ModeUpdates yields each task's writes (an S carrying them) as the
	// task finishes, and the interrupts of a pausing step.
	ModeUpdates
	// ModeCustom yields what nodes write with [StreamWriter].
	ModeCustom
	// ModeMessages yields LLM tokens ([MessageChunk]) written through
	// [MessageWriter].
	ModeMessages
	// ModeTasks yields a [TaskStart] when a task starts and a [TaskResult]
	// when it ends.
	ModeTasks
	// ModeCheckpoints yields a [CheckpointInfo] for every checkpoint saved.
	ModeCheckpoints
	// ModeDebug is ModeTasks and ModeCheckpoints together.
	ModeDebug = ModeTasks | ModeCheckpoints
)

// String names the modes set in m.
func (m Mode) String() string {
	var names []string
	for _, x := range []struct {
		m Mode
		s string
	}{{ModeValues, "values"}, {ModeUpdates, "updates"}, {ModeCustom, "custom"}, {ModeMessages, "messages"}, {ModeTasks, "tasks"}, {ModeCheckpoints, "checkpoints"}} {
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
	// [CheckpointInfo] (checkpoints). Subgraph events carry the subgraph's
	// state type.
	Payload any
	// Cached marks an update restored from pending writes or the node
	// cache instead of being computed again.
	Cached bool
	// Interrupts lists the pending interrupts on the updates and values
	// events of a pausing step.
	Interrupts []Interruption
}

// TaskStart is the payload of a [ModeTasks] event when a task starts.
type TaskStart struct {
	Name  string
	Input any
	Push  bool
}

// TaskResult is the payload of a [ModeTasks] event when a task ends.
type TaskResult struct {
	Name       string
	Writes     any
	Err        error
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
