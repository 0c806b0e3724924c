package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
)

func ExampleBus() {
	clock := func() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }
	bus := events.NewBus(events.WithClock(clock))

	// A dashboard following run-1 only.
	sub := bus.Subscribe(context.Background(), events.FilterRunIDs("run-1"))

	bus.Publish(events.Event{RunID: "run-1", Step: 1, Node: "plan", Data: events.NodeStarted{}})
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Node: "plan", Data: events.ToolCall{ID: "c1", Name: "shell", Args: `{"cmd":"go test ./..."}`}})
	bus.Publish(events.Event{RunID: "run-2", Step: 1, Node: "plan", Data: events.ToolCall{ID: "c1", Name: "shell", Args: `{"cmd":"ls"}`}}) // other run: filtered out
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Node: "plan", Data: events.ModelCall{Model: "small-model", TotalTokens: 1500}})
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Data: events.RunEnded{Status: events.StatusCompleted}})
	bus.Close() // the subscription still receives what was queued

	for ev, err := range sub.Events() {
		if lost, ok := errors.AsType[*events.LostError](err); ok {
			fmt.Println("missed", lost.N, "events")
			continue
		}
		fmt.Print(ev.Time.Format(time.Kitchen), " ", ev.RunID, " ", ev.Step, " ", ev.Kind())
		switch p := ev.Data.(type) {
		case events.ToolCall:
			fmt.Print(" ", p.Name)
		case events.ModelCall:
			fmt.Print(" ", p.TotalTokens, " tokens")
		}
		fmt.Println()
	}
	// Output:
	// 12:00PM run-1 1 node_started
	// 12:00PM run-1 1 tool_call shell
	// 12:00PM run-1 1 model_call 1500 tokens
	// 12:00PM run-1 1 run_ended
}

func ExampleLostError() {
	bus := events.NewBus(events.WithBufferSize(2))
	sub := bus.Subscribe(context.Background())
	for i := 1; i <= 5; i++ { // nobody reads yet: the oldest events are dropped
		bus.Publish(events.Event{RunID: "run-1", Step: i, Data: events.Custom{Value: i}})
	}
	bus.Close()

	for ev, err := range sub.Events() {
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("step", ev.Step)
	}
	// Output:
	// events: subscriber too slow, lost 3 event(s)
	// step 4
	// step 5
}

func ExampleWriteJSONL() {
	clock := func() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }
	bus := events.NewBus(events.WithClock(clock))
	sub := bus.Subscribe(context.Background())

	bus.Publish(events.Event{RunID: "run-1", Step: 1, Node: "tools", Task: "t1", Data: events.ToolResult{ID: "c1", Name: "shell", Result: "ok"}})
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Data: events.RunEnded{Status: events.StatusCompleted}})
	bus.Close()

	if err := events.WriteJSONL(context.Background(), os.Stdout, sub); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// {"kind":"tool_result","run_id":"run-1","step":1,"node":"tools","task":"t1","time":"2025-01-01T12:00:00Z","data":{"id":"c1","name":"shell","result":"ok"}}
	// {"kind":"run_ended","run_id":"run-1","step":1,"time":"2025-01-01T12:00:00Z","data":{"status":"completed"}}
}

func ExampleNewJSONLSink() {
	clock := func() time.Time { return time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC) }
	bus := events.NewBus(events.WithClock(clock))
	defer bus.Close()

	// The sink writes in a goroutine of its own from now on.
	sink := events.NewJSONLSink(bus, os.Stdout, events.FilterKinds(events.KindRunEnded, events.KindError))

	// A run publishes (Bridge does this for a graph run).
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Node: "tools", Data: events.NodeStarted{}})
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Data: events.Error{Message: "boom"}})
	bus.Publish(events.Event{RunID: "run-1", Step: 1, Data: events.RunEnded{Status: events.StatusFailed, Error: "boom"}})

	// Once the run has returned, Close writes what is left and stops the
	// sink's goroutine.
	if err := sink.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"kind":"error","run_id":"run-1","step":1,"time":"2025-01-01T12:00:00Z","data":{"message":"boom"}}
	// {"kind":"run_ended","run_id":"run-1","step":1,"time":"2025-01-01T12:00:00Z","data":{"status":"failed","error":"boom"}}
}

// Checked is the payload of an agent's own kind of event.
type Checked struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// EventKind names the kind, with the agent's prefix.
func (Checked) EventKind() events.Kind { return "myagent.checked" }

func Example_agentKinds() {
	b := graph.New[chat]()
	b.AddNode("check", func(ctx context.Context, s chat) (chat, error) {
		graph.StreamWriter(ctx)(Checked{Passed: 3, Failed: 1}) // published by Bridge
		return s, nil
	})
	b.AddEdge(graph.Start, "check")
	b.AddEdge("check", graph.End)
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	bus := events.NewBus()
	var log strings.Builder
	sink := events.NewJSONLSink(bus, &log, events.FilterKinds(Checked{}.EventKind()))
	if err := events.Bridge(ctx, bus, "run-1", g.Stream(ctx, chat{}, graph.WithStreamModes(events.StreamModes))); err != nil {
		fmt.Println(err)
	}
	if err := sink.Close(); err != nil {
		fmt.Println(err)
	}

	// A program that reads the log back gets its payload as a Raw, which
	// As decodes.
	for ev, err := range events.ReadJSONL(strings.NewReader(log.String())) {
		if err != nil {
			fmt.Println(err)
			continue
		}
		c, ok := events.As[Checked](ev)
		fmt.Println(ev.Kind(), ev.Node, c.Passed, c.Failed, ok)
	}
	// Output:
	// myagent.checked check 3 1 true
}

func ExampleAs() {
	var ev events.Event
	if err := json.Unmarshal([]byte(`{"kind":"myagent.checked","run_id":"r","step":2,"time":"2025-01-01T12:00:00Z","data":{"passed":5}}`), &ev); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T\n", ev.Data)
	if c, ok := events.As[Checked](ev); ok {
		fmt.Println("passed", c.Passed)
	}
	// Output:
	// events.Raw
	// passed 5
}
