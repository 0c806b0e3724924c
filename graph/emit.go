package graph

import (
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// The emitter: every kind of event a run streams is made here, in one
// function each, so that a stream mode is added or changed in one place.
// The functions take the sink to use: l.emitFn on the loop's goroutine, or
// the relaying sink of a concurrent step (see runConcurrent).

// streamModes returns the modes a run yields for the modes asked: those,
// plus [ModeInterrupts] when updates or values are asked (a pause is part
// of both, as LangGraph's "__interrupt__" chunk is).
func streamModes(m Mode) Mode {
	if m&(ModeUpdates|ModeValues) != 0 {
		m |= ModeInterrupts
	}
	return m
}

func (l *loop[S]) emit(ev Event) {
	if l.sink != nil && l.modes&ev.Mode != 0 {
		l.sink(ev)
	}
}

// emitValues yields the whole state *vals (ModeValues), as it is at the
// call. Interrupts are set when the run pauses. The state is passed by
// address: a run that streams no values (most) then copies nothing.
func (l *loop[S]) emitValues(step int, vals *S, intr []Interruption) {
	if l.modes&ModeValues != 0 {
		l.emitValuesNow(step, vals, intr)
	}
}

// emitValuesNow is emitValues in a run that streams values (out of line,
// so that emitValues inlines).
func (l *loop[S]) emitValuesNow(step int, vals *S, intr []Interruption) {
	l.emit(Event{Mode: ModeValues, Namespace: l.ns, Step: step, Payload: *vals, Interrupts: intr})
}

// writes is the Writes view of a finished task, when an event shows it
// (encoded once for its update and its result).
func (l *loop[S]) writes(t *task[S]) Writes {
	if l.modes&(ModeUpdates|ModeTasks) == 0 || !t.done {
		return nil
	}
	return l.g.writesView(&t.out)
}

// emitUpdate yields what a finished task wrote (ModeUpdates); w is its
// writes.
func (l *loop[S]) emitUpdate(t *task[S], w Writes, emit func(Event)) {
	if l.modes&ModeUpdates == 0 {
		return
	}
	emit(Event{Mode: ModeUpdates, Namespace: l.ns, Step: l.step, Node: t.name, TaskID: t.hdr.ID(),
		Payload: t.out, Writes: w, Cached: t.cached || t.restored})
}

// emitTaskStart yields the start of a task (ModeTasks).
func (l *loop[S]) emitTaskStart(t *task[S]) {
	if l.modes&ModeTasks == 0 || t.name == Start {
		return
	}
	l.emit(Event{Mode: ModeTasks, Namespace: l.ns, Step: l.step, Node: t.name, TaskID: t.hdr.ID(),
		Payload: TaskStart{Name: t.name, Input: t.nodeInput(), Push: t.push}})
}

// emitTaskResult yields the end of a task (ModeTasks): its writes w, its
// error or its interrupts.
func (l *loop[S]) emitTaskResult(t *task[S], w Writes, emit func(Event)) {
	if l.modes&ModeTasks == 0 || t.name == Start {
		return
	}
	r := TaskResult{Name: t.name, Err: t.err}
	if t.done {
		r.Output, r.Writes = t.out, w
	}
	if t.interrupted() {
		_, raised := t.hdr.interrupts()
		r.Interrupts = slices.Clone(raised)
	}
	emit(Event{Mode: ModeTasks, Namespace: l.ns, Step: l.step, Node: t.name, TaskID: t.hdr.ID(), Payload: r})
}

// emitInterrupt yields the interrupts a task raised, as it ends
// (ModeInterrupts): one event per interrupted task, when it interrupts.
func (l *loop[S]) emitInterrupt(t *task[S], emit func(Event)) {
	if l.modes&ModeInterrupts == 0 {
		return
	}
	_, raised := t.hdr.interrupts()
	emit(Event{Mode: ModeInterrupts, Namespace: l.ns, Step: l.step, Node: t.name, TaskID: t.hdr.ID(),
		Interrupts: slices.Clone(raised)})
}

// emitBreakpoint yields a pause at static breakpoints (ModeInterrupts).
func (l *loop[S]) emitBreakpoint(step int, bp Breakpoint) {
	if l.modes&ModeInterrupts == 0 {
		return
	}
	l.emit(Event{Mode: ModeInterrupts, Namespace: l.ns, Step: step, Payload: bp})
}

// emitCheckpoint yields a saved checkpoint (ModeCheckpoints).
func (l *loop[S]) emitCheckpoint(cp *checkpoint.Checkpoint) {
	if l.modes&ModeCheckpoints == 0 {
		return
	}
	next := slices.Clone(l.fr.nodes)
	for _, s := range l.fr.sends {
		next = append(next, s.Node)
	}
	if l.fr.input != nil {
		next = append(next, Start)
	}
	l.emit(Event{Mode: ModeCheckpoints, Namespace: l.ns, Step: cp.Metadata.Step, Payload: CheckpointInfo{
		ID: cp.ID, ParentID: cp.ParentID, Step: cp.Metadata.Step, Source: cp.Metadata.Source, Next: next, Values: l.vals}})
}

// finished yields the events of a task that ended without an error: its
// update and result, or its interrupts.
func (l *loop[S]) finished(t *task[S], emit func(Event)) {
	if l.modes != 0 && t.name != Start {
		l.finishedNow(t, emit)
	}
}

// finishedNow is finished in a run that streams (out of line, so that
// finished inlines).
func (l *loop[S]) finishedNow(t *task[S], emit func(Event)) {
	w := l.writes(t)
	switch {
	case t.done:
		l.emitUpdate(t, w, emit)
	case t.interrupted():
		l.emitInterrupt(t, emit)
	default:
		return
	}
	l.emitTaskResult(t, w, emit)
}
