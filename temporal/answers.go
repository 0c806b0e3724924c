package temporal

import (
	"encoding/json"
	"fmt"
	"slices"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/graph"
)

// Types of the application errors an [UpdateResume] update is refused
// with, as [sdktemporal.ApplicationError.Type] reports them to the caller
// of [AnswerChecked] (through errors.As).
const (
	// ErrTypeNotWaiting refuses an answer to an interrupt the run does not
	// wait on: unknown, of an earlier pause, or sent while the run is not
	// paused. Its message wraps that of [graph.ErrNotInterrupted].
	ErrTypeNotWaiting = "agentgraph.NotWaitingError"
	// ErrTypeAnswered refuses a second answer to an interrupt: the first
	// one, by signal or by update, counts.
	ErrTypeAnswered = "agentgraph.AnsweredError"
)

// answerGate is the one place the answers of a paused run go through, by
// signal ([SignalResume]) or by update ([UpdateResume]): it admits one
// answer per pending interrupt — the first to reach the workflow — and
// refuses every other. It holds answers only while the run waits, so that
// no answer outlives the pause it was given in.
type answerGate struct {
	thread string
	// status is the run's status: the pause's interrupts, and where the
	// gate reports the IDs answered so far.
	status *Status
	// changed is called when the pause begins, takes an answer, and ends
	// (closing).
	changed func(closing bool)
	waiting bool
	answers map[string]json.RawMessage
}

// open starts a pause: the run waits for answers to status's interrupts
// (or one answer going on past its breakpoint).
func (g *answerGate) open() {
	g.waiting, g.answers, g.status.Answered = true, map[string]json.RawMessage{}, nil
	g.notify(false)
}

func (g *answerGate) notify(closing bool) {
	if g.changed != nil {
		g.changed(closing)
	}
}

// close ends the pause and returns its answers; later answers are refused.
func (g *answerGate) close() map[string]json.RawMessage {
	answers := g.answers
	g.waiting, g.answers = false, nil
	g.notify(true)
	return answers
}

// complete reports whether every answer the pause waits for is in.
func (g *answerGate) complete() bool {
	if !g.waiting {
		return false
	}
	if len(g.status.Interrupts) == 0 {
		_, ok := g.answers[""]
		return ok
	}
	return len(g.answers) == len(g.status.Interrupts)
}

// check returns the error that refuses sig, or nil when admit would admit
// it. It changes nothing (an update's validator calls it).
func (g *answerGate) check(sig ResumeSignal) error {
	if !g.waiting || !waitsOn(*g.status, sig.ID) {
		return sdktemporal.NewApplicationError(
			fmt.Sprintf("%v: thread %s is not waiting on interrupt %q", graph.ErrNotInterrupted, g.thread, sig.ID), ErrTypeNotWaiting)
	}
	if _, ok := g.answers[sig.ID]; ok {
		return sdktemporal.NewApplicationError(
			fmt.Sprintf("temporal: interrupt %q of thread %s is answered already", sig.ID, g.thread), ErrTypeAnswered)
	}
	return nil
}

// admit takes sig as the answer to its interrupt, or returns the error
// that refuses it (see check).
func (g *answerGate) admit(sig ResumeSignal) error {
	if err := g.check(sig); err != nil {
		return err
	}
	g.answers[sig.ID] = sig.Value
	g.status.Answered = append(g.status.Answered, sig.ID)
	slices.Sort(g.status.Answered)
	g.notify(false)
	return nil
}

// wire wires the gate to the run's signal channel and update handler
// and returns the run's await function: it waits for the answers of the
// pause status is at and returns them by ID (nil for a static
// breakpoint).
//
// Signals are received on a channel, updates are handled as they come;
// both go through the gate, so the first answer to reach the workflow
// counts and the other is refused — the update's caller gets the error,
// a signal is dropped and logged. The update handler first passes the
// signals already delivered through the gate, so that a signal that
// reached the workflow before an update counts first. (Within one
// workflow task, Temporal hands its signals to the channel before it runs
// update handlers, so there a signal counts before an update whatever
// their order in the history.)
//
// A signal delivered while the run is not paused is kept for the next
// pause if it answers an interrupt by ID (its ID names one interrupt of
// one task, so it cannot answer another) — an answer sent from an
// interrupt event seen in a stream, say. One with an empty ID, which
// would go on past any breakpoint, is dropped: it may be a late second
// answer to an earlier breakpoint, and must not pass the next one.
func (g *answerGate) wire(ctx workflow.Context) (await func() (map[string]json.RawMessage, error), err error) {
	log := workflow.GetLogger(ctx)
	signals := workflow.GetSignalChannel(ctx, SignalResume)
	drop := func(sig ResumeSignal, err error) {
		log.Warn("agentgraph: dropping an answer", "id", sig.ID, "thread", g.thread, "reason", err.Error())
	}
	// drain passes the signals delivered so far through the gate; early
	// marks those delivered before the pause.
	drain := func(early bool) {
		var sig ResumeSignal
		for signals.ReceiveAsync(&sig) {
			switch {
			case early && sig.ID == "":
				drop(sig, fmt.Errorf("an answer going on past a breakpoint, sent before the run paused at it"))
			default:
				if err := g.admit(sig); err != nil {
					drop(sig, err)
				}
			}
			sig = ResumeSignal{}
		}
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateResume,
		func(ctx workflow.Context, sig ResumeSignal) error {
			if !g.waiting {
				return g.check(sig)
			}
			drain(false)
			return g.admit(sig)
		},
		workflow.UpdateHandlerOptions{Validator: g.check})
	if err != nil {
		return nil, err
	}
	await = func() (map[string]json.RawMessage, error) {
		g.open()
		drain(true)
		for !g.complete() {
			// A run waiting for a human can be cancelled like any other.
			if err := workflow.Await(ctx, func() bool { return g.complete() || signals.Len() > 0 }); err != nil {
				g.close()
				return nil, err
			}
			drain(false)
		}
		answers := g.close()
		// Answers delivered with the last one are refused now, not kept
		// for the next pause.
		drain(false)
		if len(g.status.Interrupts) == 0 {
			return nil, nil // on past a static breakpoint
		}
		return answers, nil
	}
	return await, nil
}
