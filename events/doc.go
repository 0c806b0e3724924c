// Package events is the event model of graph runs and a fan-out bus for
// it: a run reports what it does as a stream of [Event] values, and
// several consumers watch the stream at once — a TUI, a web dashboard, a
// JSON Lines file, a [log/slog] logger — without slowing the run down.
//
// # Events
//
// An [Event] says in which run, superstep and task something happened
// (RunID, Step, Namespace, Node, Task), when, and what: its Data, a typed
// [Payload]. Each payload type is one [Kind] of event:
//
//   - [RunStarted], [RunEnded]: a run starts and stops (with its
//     [Status]);
//   - [NodeStarted], [NodeEnded]: a task starts and ends (with its
//     writes, its error or its interrupt);
//   - [ModelCall]: a model answered (with its token usage);
//   - [ToolCall], [ToolResult]: a model asked for a tool call, and its
//     result;
//   - [Interrupt]: a task paused the run, or a breakpoint stopped it;
//   - [Custom]: a value a node wrote to its stream;
//   - [Error]: the run failed.
//
// Consumers switch on the payload's type:
//
//	switch p := ev.Data.(type) {
//	case events.ToolCall:
//		fmt.Println(ev.Node, "calls", p.Name, p.Args)
//	case events.RunEnded:
//		fmt.Println("run", ev.RunID, p.Status)
//	}
//
// # Events of an agent's own
//
// An agent adds kinds of its own in its own package: a payload type with
// an EventKind method, named with a prefix of the agent's ("retrai.", …),
// which its nodes write with graph.StreamWriter like any other node:
//
//	type Checked struct{ Passed, Failed int }
//
//	func (Checked) EventKind() events.Kind { return "myagent.checked" }
//
//	graph.StreamWriter(ctx)(Checked{Passed: 3})
//
// [Bridge] publishes them as they are, under their kind. Their JSON is
// the payload's; read back from JSON by a program that does not link the
// agent, they are a [Raw], which [As] decodes into the type of its kind.
//
// # From a run to the bus
//
// [Bridge] consumes a graph run's stream (Graph.Stream with
// graph.WithStreamModes([StreamModes])) and publishes its events on a
// [Publisher], a [*Bus] say:
//
//	bus := events.NewBus()
//	defer bus.Close()
//	sink := events.NewJSONLSink(bus, f) // writes in a goroutine of its own
//	err := events.Bridge(ctx, bus, runID, g.Stream(ctx, input, graph.WithStreamModes(events.StreamModes)))
//	if cerr := sink.Close(); cerr != nil { // every event of the run is in f
//		log.Print(cerr)
//	}
//
// # Bus
//
// A [Bus] fans every published event out to all subscribers:
//
//	sub := bus.Subscribe(ctx, events.FilterRunIDs(runID))
//	go func() {
//		for ev, err := range sub.Events() {
//			if lost, ok := errors.AsType[*events.LostError](err); ok {
//				fmt.Println("missed", lost.N, "events")
//				continue
//			}
//			render(ev)
//		}
//	}()
//
// The delivery contract is:
//
//   - [Bus.Publish] never waits for a subscriber. Every subscriber has its own
//     bounded queue ([WithBufferSize], [QueueSize]); when a slow subscriber's
//     queue is full the OLDEST queued event is dropped to make room.
//   - A subscriber learns about drops in band: before the next event it
//     receives, [Subscription.Events] yields a zero Event together with a
//     [*LostError] whose N is the number of events dropped since the previous
//     delivery. Events that are delivered arrive with a nil error.
//   - All subscribers see events in the same order: the order in which
//     Publish calls were serialized by the bus.
//   - [Bus.Close] ends every subscription once it has delivered what was
//     already queued. Cancelling the context given to [Bus.Subscribe], or
//     calling [Subscription.Close], unregisters that subscriber and ends its
//     iteration at once (queued events are discarded).
//
// The bus starts no goroutines of its own. Events are shared between
// subscribers, not copied: consumers must treat an Event's Data as
// read-only.
//
// # Sinks
//
// A [Sink] consumes a bus in a goroutine of its own until [Sink.Close],
// which returns once it has consumed every event published before:
// [NewJSONLSink] writes JSON Lines, [NewLogSink] logs to a [*slog.Logger].
// [WriteJSONL] and [LogTo] do the same on the caller's goroutine, and
// [ReadJSONL] reads a JSON Lines file back.
package events
