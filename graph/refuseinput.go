package graph

import (
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// PendingInterruptError is returned by [Graph.Invoke] and [Graph.Stream],
// in a run with [RefuseInputWhileInterrupted], when the thread waits for
// answers to interrupts: nothing was written, and the interrupts stay
// pending until [Graph.Resume] answers them.
type PendingInterruptError struct {
	// Thread is the thread's ID.
	Thread string
	// Interrupts are the pending interrupts, by ID.
	Interrupts []Interruption
}

// Error implements error.
func (e *PendingInterruptError) Error() string {
	ids := make([]string, len(e.Interrupts))
	for i, in := range e.Interrupts {
		ids[i] = in.ID + " (node " + in.Node + ")"
	}
	return fmt.Sprintf("graph: thread %q waits for answers to interrupt %s; new input would drop them: answer with Resume first",
		e.Thread, strings.Join(ids, ", "))
}

// RefuseInputWhileInterrupted makes a run with new input (Invoke, Stream)
// on a thread whose latest checkpoint has pending dynamic interrupts fail
// with a [*PendingInterruptError] before anything is written.
//
// Without it, as in LangGraph, new input on a paused thread starts a new
// run from the thread's state: the pending interrupts are dropped, and
// the tasks that asked them never run (a model's tool call waiting for
// approval stays unanswered). Give it to every run with
// [WithRunDefaults] to make that a mistake the caller hears about.
// Resume is not affected, nor are runs from another checkpoint
// ([WithCheckpointID]).
func RefuseInputWhileInterrupted() RunOption {
	return runOption(func(c *runConfig) { c.refuseInput = true })
}

// refusePausedInput returns a *PendingInterruptError when the run refuses
// new input on a paused thread and checkpoint t has pending interrupts.
func (l *loop[S]) refusePausedInput(t *checkpoint.Tuple) error {
	if !l.cfg.refuseInput || t == nil || l.nested != nil || l.cfg.checkpointID != "" {
		return nil
	}
	if err := l.restorePending(t); err != nil {
		return err
	}
	pending := l.pendingInterrupts()
	if len(pending) == 0 {
		return nil
	}
	return &PendingInterruptError{Thread: l.cfg.thread, Interrupts: pending}
}
