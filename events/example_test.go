package events_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentgraph/agentgraph/events"
)

func ExampleBus() {
	clock := func() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }
	bus := events.NewBus(events.WithClock(clock))

	// A dashboard following run-1 only.
	sub := bus.Subscribe(context.Background(), events.FilterRunIDs("run-1"))

	bus.Publish(events.New(events.KindStepStart, "run-1", 1, map[string]any{"step": "plan"}))
	bus.Publish(events.ToolCall("run-1", 1, "shell", `{"cmd":"go test ./..."}`))
	bus.Publish(events.ToolCall("run-2", 1, "shell", `{"cmd":"ls"}`)) // other run: filtered out
	bus.Publish(events.LLMUsage("run-1", 1, "small-model", 1200, 300))
	bus.Publish(events.New(events.KindRunEnd, "run-1", 1, nil))
	bus.Close() // the subscription still receives what was queued

	for ev, err := range sub.Events() {
		if lost, ok := errors.AsType[*events.LostError](err); ok {
			fmt.Println("missed", lost.N, "events")
			continue
		}
		tokens, _ := ev.PayloadInt("total_tokens")
		fmt.Println(ev.Time.Format(time.Kitchen), ev.RunID, ev.Iteration, ev.Kind, tokens)
	}
	// Output:
	// 12:00PM run-1 1 step_start 0
	// 12:00PM run-1 1 tool_call 0
	// 12:00PM run-1 1 llm_usage 1500
	// 12:00PM run-1 1 run_end 0
}

func ExampleLostError() {
	bus := events.NewBus(events.WithBufferSize(2))
	sub := bus.Subscribe(context.Background())
	for i := 1; i <= 5; i++ { // nobody reads yet: the oldest events are dropped
		bus.Publish(events.New(events.KindLog, "run-1", i, nil))
	}
	bus.Close()

	for ev, err := range sub.Events() {
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("iteration", ev.Iteration)
	}
	// Output:
	// events: subscriber too slow, lost 3 event(s)
	// iteration 4
	// iteration 5
}

func ExampleWriteJSONL() {
	clock := func() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }
	bus := events.NewBus(events.WithClock(clock))
	sub := bus.Subscribe(context.Background())

	bus.Publish(events.ToolCall("run-1", 1, "shell", "ls"))
	bus.Publish(events.New(events.KindRunEnd, "run-1", 1, nil))
	bus.Close()

	if err := events.WriteJSONL(context.Background(), os.Stdout, sub); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// {"kind":"tool_call","run_id":"run-1","iteration":1,"time":"2025-01-01T12:00:00Z","payload":{"args":"ls","tool":"shell"}}
	// {"kind":"run_end","run_id":"run-1","iteration":1,"time":"2025-01-01T12:00:00Z","payload":null}
}
