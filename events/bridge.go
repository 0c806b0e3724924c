package events

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"slices"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// StreamModes are the stream modes [Bridge] reads: pass
// graph.WithStreamModes(events.StreamModes) to the run it consumes. Events
// of other modes are ignored; without ModeTasks a task's start is
// published when its update arrives, and without ModeCustom the payloads
// nodes write are not published.
const StreamModes = graph.ModeUpdates | graph.ModeTasks | graph.ModeCustom | graph.ModeInterrupts

// ErrNoPublisher is returned by [Bridge] when it is given no publisher.
var ErrNoPublisher = errors.New("events: Bridge needs a publisher")

// Bridge consumes the stream of a graph run (from Graph.Stream or
// Graph.StreamResume) and publishes its progress on pub as events of run
// runID. It returns when the stream ends, with the run's error: nil, an
// [*graph.Interrupted] when the run paused, or its failure. When ctx is
// done first, Bridge stops consuming — which cancels the run — and returns
// ctx.Err(); pass the run the same context so that a run blocked in a node
// is cancelled too.
//
// Events are published on the run's goroutine, in the order the stream
// yields them, and all of them before Bridge returns: a sink subscribed
// before the run and closed after Bridge returns has every event of the
// run (see [NewJSONLSink]). The events are:
//
//   - [RunStarted] first, and [RunEnded] last: [StatusCompleted];
//     [StatusInterrupted]; [StatusCancelled] (context.Canceled); or
//     [StatusFailed], after an [Error].
//   - For each task: [NodeStarted] when it starts (or, without ModeTasks
//     in the stream, when its update arrives) and [NodeEnded] when it
//     ends, with its writes, its error, or Interrupted set.
//   - For each message a task appends to a state.Messages field of the
//     state: a [ToolCall] per tool call of an AI message and a
//     [ToolResult] per tool message, once per message (from the subgraph
//     task that appended it, when the stream has the subgraph's events).
//     Messages that replace one with the same ID are not new and publish
//     nothing.
//   - An [Interrupt] for each graph.Interrupt that pauses a task, as it
//     does, and for each breakpoint node that stops the run.
//   - What nodes write with graph.StreamWriter ([graph.ModeCustom]):
//     a value that is a [Payload] is published as it is, under its own
//     kind — this is how an agent publishes the events of its own kinds
//     (a [ModelCall], say, or its own payload types) — and any other
//     value as a [Custom].
//
// Task events carry the task's Node, Task (its ID), Namespace and Step;
// the run's events carry the root graph's last superstep. Events of
// subgraphs (streamed with graph.WithSubgraphs) are published the same
// way, with their Namespace.
func Bridge(ctx context.Context, pub Publisher, runID string, stream iter.Seq2[graph.Event, error]) error {
	if pub == nil {
		return ErrNoPublisher
	}
	b := &bridge{pub: pub, runID: runID, tasks: map[string]taskSeen{}, messages: map[string]bool{}, interrupts: map[string]bool{}}
	b.run(RunStarted{})
	var runErr error
	for ev, err := range stream {
		if err != nil {
			runErr = err
			break
		}
		if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		b.event(ev)
	}
	b.end(runErr)
	return runErr
}

// taskSeen records what was published about a task.
type taskSeen uint8

const (
	taskStarted taskSeen = 1 << iota
	taskEnded
)

type bridge struct {
	pub   Publisher
	runID string
	step  int                 // the last superstep of the root graph
	tasks map[string]taskSeen // by namespace and task ID
	// messages are the IDs of the messages published: a subgraph's
	// messages come again in the update of its parent's task.
	messages map[string]bool
	// interrupts and breakpoints already published, by ID and by node.
	interrupts  map[string]bool
	breakpoints []string
}

// run publishes an event of the run itself.
func (b *bridge) run(p Payload) {
	b.pub.Publish(Event{RunID: b.runID, Step: b.step, Data: p})
}

// task publishes an event of ev's task.
func (b *bridge) task(ev graph.Event, p Payload) {
	b.pub.Publish(Event{RunID: b.runID, Step: ev.Step, Namespace: ev.Namespace, Node: ev.Node,
		Task: ev.TaskID, Data: p})
}

func (b *bridge) event(ev graph.Event) {
	if ev.Namespace == "" && ev.Step > b.step {
		b.step = ev.Step
	}
	if ev.Node == graph.Start {
		return
	}
	switch ev.Mode {
	case graph.ModeTasks:
		switch p := ev.Payload.(type) {
		case graph.TaskStart:
			b.started(ev, p.Push)
		case graph.TaskResult:
			b.started(ev, false)
			ended := NodeEnded{Writes: p.Writes, Interrupted: len(p.Interrupts) > 0}
			if p.Err != nil {
				ended.Error = p.Err.Error()
			}
			b.ended(ev, ended)
		}
	case graph.ModeUpdates:
		if ev.Node == "" {
			return
		}
		b.started(ev, false)
		for _, m := range appended(ev.Payload) {
			b.message(ev, m)
		}
		b.ended(ev, NodeEnded{Writes: ev.Writes, Cached: ev.Cached})
	case graph.ModeInterrupts:
		if bp, ok := ev.Payload.(graph.Breakpoint); ok {
			b.breakpoint(ev, bp.Nodes, bp.After)
			return
		}
		for _, in := range ev.Interrupts {
			b.interrupt(ev, in)
		}
	case graph.ModeCustom:
		p, ok := ev.Payload.(Payload)
		if !ok {
			p = Custom{Value: ev.Payload}
		}
		b.task(ev, p)
	}
}

// started publishes the start of ev's task once.
func (b *bridge) started(ev graph.Event, push bool) {
	key := ev.Namespace + "|" + ev.TaskID
	if b.tasks[key]&taskStarted != 0 {
		return
	}
	b.tasks[key] |= taskStarted
	b.task(ev, NodeStarted{Push: push})
}

// ended publishes the end of ev's task once: an update and the task's
// result both report it.
func (b *bridge) ended(ev graph.Event, p NodeEnded) {
	key := ev.Namespace + "|" + ev.TaskID
	if b.tasks[key]&taskEnded != 0 {
		return
	}
	b.tasks[key] |= taskEnded
	if len(p.Writes) == 0 {
		p.Writes = nil
	}
	b.task(ev, p)
}

func (b *bridge) message(ev graph.Event, m state.Message) {
	if m.ID != "" {
		if b.messages[m.ID] {
			return
		}
		b.messages[m.ID] = true
	}
	for _, c := range m.ToolCalls() {
		tc := ToolCall{ID: c.ID}
		if c.FunctionCall != nil {
			tc.Name, tc.Args = c.FunctionCall.Name, c.FunctionCall.Arguments
		}
		b.task(ev, tc)
	}
	for _, r := range m.ToolResults() {
		b.task(ev, ToolResult{ID: r.ToolCallID, Name: r.Name, Result: r.Content})
	}
}

// interrupt publishes in once.
func (b *bridge) interrupt(ev graph.Event, in graph.Interruption) {
	if b.interrupts[in.ID] {
		return
	}
	b.interrupts[in.ID] = true
	if in.Node != ev.Node || in.Namespace != ev.Namespace {
		// Raised in a subgraph of ev's task: not that task's own.
		ev.Node, ev.Namespace, ev.TaskID = in.Node, in.Namespace, ""
	}
	b.task(ev, Interrupt{ID: in.ID, Value: in.Value})
}

// breakpoint publishes a stop before or after nodes.
func (b *bridge) breakpoint(ev graph.Event, nodes []string, after bool) {
	when := BreakpointBefore
	if after {
		when = BreakpointAfter
	}
	for _, n := range nodes {
		key := when + "|" + ev.Namespace + "|" + n
		if slices.Contains(b.breakpoints, key) {
			continue
		}
		b.breakpoints = append(b.breakpoints, key)
		ev.Node = n
		b.task(ev, Interrupt{Breakpoint: when})
	}
}

func (b *bridge) end(err error) {
	if err == nil {
		b.run(RunEnded{Status: StatusCompleted})
		return
	}
	if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
		// The interrupts the stream did not show (those of subgraphs
		// streamed without graph.WithSubgraphs, say).
		at := graph.Event{Step: b.step}
		for _, in := range intr.Interrupts {
			b.interrupt(at, in)
		}
		b.breakpoint(at, intr.Before, false)
		b.breakpoint(at, intr.After, true)
		b.run(RunEnded{Status: StatusInterrupted})
		return
	}
	if errors.Is(err, context.Canceled) {
		b.run(RunEnded{Status: StatusCancelled, Error: err.Error()})
		return
	}
	b.run(Error{Message: err.Error()})
	b.run(RunEnded{Status: StatusFailed, Error: err.Error()})
}

var messagesType = reflect.TypeFor[state.Messages]()

// appended returns the messages that the update payload (a state struct
// carrying a task's writes) appends to its state.Messages fields.
func appended(payload any) []state.Message {
	v := reflect.ValueOf(payload)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var out []state.Message
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Type == messagesType {
			out = append(out, written(v.Field(i).Interface().(state.Messages))...)
		}
	}
	return out
}

// written returns the messages w's pending write adds to the history w
// holds (the writing node's input): the write is applied to a copy, and the
// messages whose IDs were not there before are new.
func written(w state.Messages) []state.Message {
	if !w.Channel().Written() {
		return nil
	}
	before := w.List()
	merged := w
	merged.Channel().ClearWrite()
	if err := merged.Channel().MergeWrites([]state.Channel{w.Channel()}); err != nil {
		return nil
	}
	old := make(map[string]bool, len(before))
	for _, m := range before {
		old[m.ID] = true
	}
	var out []state.Message
	for _, m := range merged.List() {
		if !old[m.ID] {
			out = append(out, m)
		}
	}
	return out
}
