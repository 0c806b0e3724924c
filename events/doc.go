// Package events is the event model and fan-out bus of the agent runtime.
//
// The plan/act/evaluate agent ("retrAI") reports its progress as a stream of
// [Event] values: a step starts, a tool is called and returns, the goal is
// checked, a human is asked for confirmation, an iteration completes, the run
// ends. Several consumers watch the same stream at once — a TUI, a web
// dashboard over WebSocket, a JSONL file, a [log/slog] logger — and none of
// them may slow the agent down.
//
// # Events
//
// An [Event] is a small, JSON-friendly record: a [Kind] (one of the Kind*
// constants, e.g. [KindToolCall]), the run it belongs to, the agent loop
// iteration, a timestamp and a free-form Payload. A few constructors build
// the common ones ([ToolCall], [ToolResult], [LLMUsage], [Error]); [New]
// builds any other.
//
// # Bus
//
// A [Bus] fans every published event out to all subscribers:
//
//	bus := events.NewBus()
//	defer bus.Close()
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
//	bus.Publish(events.ToolCall(runID, 1, "shell", `{"cmd":"ls"}`))
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
// The bus starts no goroutines of its own.
//
// # Sinks
//
// [WriteJSONL] writes a subscription as JSON Lines and [ReadJSONL] reads
// such a file back; [LogTo] logs a subscription to a [*slog.Logger].
//
// Events are shared between subscribers, not copied: consumers must treat an
// Event's Payload as read-only.
// [Bridge] consumes a graph run's stream (graph.Stream) and publishes it on
// a Bus: task starts, tool calls and results, interrupts waiting for a
// human, and the run's end or error.
package events
