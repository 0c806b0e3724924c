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
// of other modes are ignored, and ModeTasks is optional (see [Bridge]).
const StreamModes = graph.ModeUpdates | graph.ModeTasks

// Run statuses of the "status" payload key of [KindRunEnd] events published
// by [Bridge].
const (
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusCancelled   = "cancelled"
	StatusFailed      = "failed"
)

// Bridge consumes the stream of a graph run (from Graph.Stream or
// Graph.StreamResume) and publishes its progress on bus as events of run
// runID. It returns when the stream ends, with the run's error: nil, an
// [*graph.Interrupted] when the run paused, or its failure. When ctx is
// done first, Bridge stops consuming — which cancels the run — and returns
// ctx.Err(); pass the run the same context so that a run blocked in a node
// is cancelled too.
//
// Every event's Iteration is the superstep of the root graph it belongs
// to. The mapping is:
//
//   - A node task starting (a graph.TaskStart of [graph.ModeTasks]):
//     [KindStepStart] with payload "node", "task_id", "step". Without
//     ModeTasks in the stream, the event is published when the task's update
//     arrives, just before the events below.
//   - A node task's update ([graph.ModeUpdates]): for each message it
//     appended to a state.Messages field of the state, a [KindToolCall] per
//     tool call of an AI message ("tool", "args", "call_id", "node") and a
//     [KindToolResult] per tool result ("tool", "output", "call_id",
//     "node"). Messages that replace one with the same ID are not new and
//     publish nothing. Updates restored from a checkpoint or the node cache
//     add "cached": true.
//   - The end of a superstep of the root graph in which nodes ran (seen
//     when the next one starts, or when the run completes):
//     [KindIterationComplete] with "step" and "nodes" (their sorted names).
//   - A completed run: [KindRunEnd] with "status" [StatusCompleted].
//   - A paused run: one [KindHumanCheckRequired] per pending interrupt
//     ("interrupt_id", "node", "value", and "namespace" in a subgraph), or
//     per breakpoint node ("node" and "breakpoint": "before" or "after"),
//     then [KindRunEnd] with [StatusInterrupted].
//   - A cancelled run (context.Canceled): [KindRunEnd] with
//     [StatusCancelled] and "error".
//   - A failed run: [KindError] with "error", then [KindRunEnd] with
//     [StatusFailed] and "error".
//
// Events of subgraphs (streamed with graph.WithSubgraphs) are published the
// same way, with a "namespace" payload key. Interrupt values are published
// as they are and must be JSON-encodable for JSON sinks.
func Bridge(ctx context.Context, bus *Bus, runID string, stream iter.Seq2[graph.Event, error]) error {
	if bus == nil {
		return errors.New("events: Bridge needs a bus")
	}
	b := &bridge{bus: bus, runID: runID, started: map[string]bool{}}
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

type bridge struct {
	bus   *Bus
	runID string
	// step is the current superstep of the root graph and nodes the names
	// of the tasks that ran in it.
	step    int
	nodes   []string
	started map[string]bool // task IDs with a published step start
}

func (b *bridge) publish(kind Kind, payload map[string]any) {
	b.bus.Publish(New(kind, b.runID, b.step, payload))
}

func (b *bridge) event(ev graph.Event) {
	root := ev.Namespace == ""
	if root && ev.Step > b.step {
		b.completeStep()
		b.step = ev.Step
	}
	if ev.Node == "" || ev.Node == graph.Start {
		return
	}
	switch ev.Mode {
	case graph.ModeTasks:
		if _, ok := ev.Payload.(graph.TaskStart); ok {
			b.stepStart(ev)
		}
	case graph.ModeUpdates:
		b.stepStart(ev)
		for _, m := range appended(ev.Payload) {
			b.message(ev, m)
		}
	}
}

// stepStart publishes the start of ev's task once.
func (b *bridge) stepStart(ev graph.Event) {
	key := ev.Namespace + "|" + ev.TaskID
	if b.started[key] {
		return
	}
	b.started[key] = true
	if ev.Namespace == "" {
		b.nodes = append(b.nodes, ev.Node)
	}
	b.publish(KindStepStart, b.payload(ev, map[string]any{"task_id": ev.TaskID, "step": ev.Step}))
}

func (b *bridge) message(ev graph.Event, m state.Message) {
	for _, c := range m.ToolCalls() {
		var name, args string
		if c.FunctionCall != nil {
			name, args = c.FunctionCall.Name, c.FunctionCall.Arguments
		}
		b.publish(KindToolCall, b.payload(ev, map[string]any{"tool": name, "args": args, "call_id": c.ID}))
	}
	for _, r := range m.ToolResults() {
		b.publish(KindToolResult, b.payload(ev, map[string]any{"tool": r.Name, "output": r.Content, "call_id": r.ToolCallID}))
	}
}

// payload adds the keys every task event carries to p.
func (b *bridge) payload(ev graph.Event, p map[string]any) map[string]any {
	p["node"] = ev.Node
	if ev.Namespace != "" {
		p["namespace"] = ev.Namespace
	}
	if ev.Cached && ev.Mode == graph.ModeUpdates {
		p["cached"] = true
	}
	return p
}

// completeStep publishes the end of the current superstep if nodes ran in
// it.
func (b *bridge) completeStep() {
	if len(b.nodes) == 0 {
		return
	}
	nodes := slices.Compact(slices.Sorted(slices.Values(b.nodes)))
	b.publish(KindIterationComplete, map[string]any{"step": b.step, "nodes": nodes})
	b.nodes = nil
}

func (b *bridge) end(err error) {
	if err == nil {
		b.completeStep()
		b.publish(KindRunEnd, map[string]any{"status": StatusCompleted})
		return
	}
	if intr, ok := errors.AsType[*graph.Interrupted](err); ok {
		for _, i := range intr.Interrupts {
			p := map[string]any{"interrupt_id": i.ID, "node": i.Node, "value": i.Value}
			if i.Namespace != "" {
				p["namespace"] = i.Namespace
			}
			b.publish(KindHumanCheckRequired, p)
		}
		for _, bp := range []struct {
			when  string
			nodes []string
		}{{"before", intr.Before}, {"after", intr.After}} {
			for _, n := range bp.nodes {
				b.publish(KindHumanCheckRequired, map[string]any{"node": n, "breakpoint": bp.when})
			}
		}
		b.publish(KindRunEnd, map[string]any{"status": StatusInterrupted})
		return
	}
	if errors.Is(err, context.Canceled) {
		b.publish(KindRunEnd, map[string]any{"status": StatusCancelled, "error": err.Error()})
		return
	}
	b.bus.Publish(Error(b.runID, b.step, err))
	b.publish(KindRunEnd, map[string]any{"status": StatusFailed, "error": err.Error()})
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
