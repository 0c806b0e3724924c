package events_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type chat struct {
	Messages state.Messages
}

// reactGraph is a model/tools loop without a model: "model" asks for two
// tool calls, "tools" answers them, and "model" then answers.
func reactGraph(t *testing.T, opts ...graph.CompileOption) *graph.Graph[chat] {
	t.Helper()
	b := graph.New[chat]()
	b.AddNode("model", func(ctx context.Context, s chat) (chat, error) {
		if last, _ := s.Messages.Last(); len(last.ToolResults()) > 0 {
			s.Messages.Append(state.AI("done"))
			return s, nil
		}
		s.Messages.Append(state.AI("", state.ToolCall("c1", "add", `{"a":1}`), state.ToolCall("c2", "mul", `{"a":2}`)))
		return s, nil
	})
	b.AddNode("tools", func(ctx context.Context, s chat) (chat, error) {
		// A fresh state carrying only the write, as tools.Node returns.
		return chat{Messages: state.Msgs(state.Tool("c1", "add", "1"), state.Tool("c2", "mul", "2"))}, nil
	})
	b.AddEdge(graph.Start, "model")
	b.AddConditionalEdges("model", func(ctx context.Context, s chat) (string, error) {
		if last, _ := s.Messages.Last(); len(last.ToolCalls()) > 0 {
			return "tools", nil
		}
		return graph.End, nil
	}, graph.Destinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// bridge runs Bridge over stream and returns what it published, with
// task IDs checked and blanked.
func bridge(t *testing.T, ctx context.Context, stream iter.Seq2[graph.Event, error]) ([]events.Event, error) {
	t.Helper()
	bus := events.NewBus(events.WithClock(fixedClock))
	sub := bus.Subscribe(t.Context(), events.QueueSize(1000))
	err := events.Bridge(ctx, bus, "run-1", stream)
	bus.Close()
	var got []events.Event
	for _, it := range drain(t, sub) {
		require.Zero(t, it.Lost)
		e := it.Ev
		if id, ok := e.Payload["task_id"]; ok {
			require.NotEmpty(t, id)
			e.Payload["task_id"] = "T"
		}
		got = append(got, e)
	}
	return got, err
}

func bev(kind events.Kind, iteration int, payload map[string]any) events.Event {
	return events.Event{Kind: kind, RunID: "run-1", Iteration: iteration, Time: t0, Payload: payload}
}

func stepStart(step int, node string) events.Event {
	return bev(events.KindStepStart, step, map[string]any{"node": node, "task_id": "T", "step": step})
}

func iterationComplete(step int, nodes ...string) events.Event {
	return bev(events.KindIterationComplete, step, map[string]any{"step": step, "nodes": nodes})
}

func runEnd(step int, status string, extra ...string) events.Event {
	p := map[string]any{"status": status}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return bev(events.KindRunEnd, step, p)
}

func TestBridgePublishesTheRunWhateverTheStreamModes(t *testing.T) {
	want := []events.Event{
		stepStart(1, "model"),
		bev(events.KindToolCall, 1, map[string]any{"node": "model", "tool": "add", "args": `{"a":1}`, "call_id": "c1"}),
		bev(events.KindToolCall, 1, map[string]any{"node": "model", "tool": "mul", "args": `{"a":2}`, "call_id": "c2"}),
		iterationComplete(1, "model"),
		stepStart(2, "tools"),
		bev(events.KindToolResult, 2, map[string]any{"node": "tools", "tool": "add", "output": "1", "call_id": "c1"}),
		bev(events.KindToolResult, 2, map[string]any{"node": "tools", "tool": "mul", "output": "2", "call_id": "c2"}),
		iterationComplete(2, "tools"),
		stepStart(3, "model"),
		iterationComplete(3, "model"),
		runEnd(3, events.StatusCompleted),
	}
	tests := []struct {
		name  string
		modes graph.Mode
	}{
		{"bridge modes", events.StreamModes},
		{"updates only", graph.ModeUpdates},
		{"every mode", graph.ModeValues | graph.ModeUpdates | graph.ModeCustom | graph.ModeMessages | graph.ModeDebug},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := reactGraph(t, graph.WithCheckpointer(checkpoint.NewMemory()))
			stream := g.Stream(t.Context(), chat{Messages: state.Msgs(state.Human("go"))},
				graph.WithThread("t"), graph.WithStreamModes(tt.modes))
			got, err := bridge(t, t.Context(), stream)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(want, got))
		})
	}
}

func TestBridgePublishesInterrupts(t *testing.T) {
	b := graph.New[chat]()
	b.AddNode("ask", func(ctx context.Context, s chat) (chat, error) {
		answer, err := graph.InterruptAs[string](ctx, "approve?")
		if err != nil {
			return s, err
		}
		s.Messages.Append(state.Human(answer))
		return s, nil
	})
	b.AddEdge(graph.Start, "ask")
	b.AddEdge("ask", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)

	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{}, graph.WithThread("t"), graph.WithStreamModes(events.StreamModes)))
	intr, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)
	want := []events.Event{
		stepStart(1, "ask"),
		bev(events.KindHumanCheckRequired, 1, map[string]any{"interrupt_id": intr.Interrupts[0].ID, "node": "ask", "value": "approve?"}),
		runEnd(1, events.StatusInterrupted),
	}
	require.Empty(t, cmp.Diff(want, got))

	// The resumed run goes on from the next iteration.
	got, err = bridge(t, t.Context(), g.StreamResume(t.Context(), graph.Command[chat]{Resume: "yes"}, graph.WithThread("t")))
	require.NoError(t, err)
	want = []events.Event{stepStart(1, "ask"), iterationComplete(1, "ask"), runEnd(1, events.StatusCompleted)}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgePublishesBreakpoints(t *testing.T) {
	g := reactGraph(t, graph.WithCheckpointer(checkpoint.NewMemory()), graph.InterruptBefore("tools"))
	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{Messages: state.Msgs(state.Human("go"))}, graph.WithThread("t")))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)
	kinds := make([]events.Kind, len(got))
	for i, e := range got {
		kinds[i] = e.Kind
	}
	require.Equal(t, []events.Kind{events.KindStepStart, events.KindToolCall, events.KindToolCall,
		events.KindIterationComplete, events.KindHumanCheckRequired, events.KindRunEnd}, kinds)
	require.Equal(t, map[string]any{"node": "tools", "breakpoint": "before"}, got[4].Payload)
	require.Equal(t, events.StatusInterrupted, got[5].Payload["status"])
}

func TestBridgePublishesFailures(t *testing.T) {
	boom := errors.New("boom")
	b := graph.New[chat]()
	b.AddNode("bad", func(ctx context.Context, s chat) (chat, error) { return s, boom })
	b.AddEdge(graph.Start, "bad")
	b.AddEdge("bad", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{}, graph.WithStreamModes(events.StreamModes)))
	require.ErrorIs(t, err, boom)
	want := []events.Event{
		stepStart(1, "bad"),
		bev(events.KindError, 1, map[string]any{"error": err.Error()}),
		runEnd(1, events.StatusFailed, "error", err.Error()),
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgePublishesCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := graph.New[chat]()
	b.AddNode("stop", func(ctx context.Context, s chat) (chat, error) {
		cancel()
		<-ctx.Done()
		return s, ctx.Err()
	})
	b.AddEdge(graph.Start, "stop")
	b.AddEdge("stop", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	got, err := bridge(t, ctx, g.Stream(ctx, chat{}, graph.WithStreamModes(events.StreamModes)))
	require.ErrorIs(t, err, context.Canceled)
	want := []events.Event{stepStart(1, "stop"), runEnd(1, events.StatusCancelled, "error", err.Error())}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgeIgnoresReplacedMessages(t *testing.T) {
	b := graph.New[chat]()
	b.AddNode("edit", func(ctx context.Context, s chat) (chat, error) {
		first := s.Messages.List()[0]
		first.Parts = state.AI("", state.ToolCall("c9", "x", `{}`)).Parts // same ID: a replacement
		s.Messages.Append(first)
		return s, nil
	})
	b.AddEdge(graph.Start, "edit")
	b.AddEdge("edit", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	in := state.AI("", state.ToolCall("c1", "x", `{}`))
	in.ID = "m1"
	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{Messages: state.Msgs(in)}))
	require.NoError(t, err)
	want := []events.Event{stepStart(1, "edit"), iterationComplete(1, "edit"), runEnd(1, events.StatusCompleted)}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgeNeedsABus(t *testing.T) {
	err := events.Bridge(t.Context(), nil, "r", func(func(graph.Event, error) bool) {
		t.Fatal("the stream must not be consumed")
	})
	require.EqualError(t, err, "events: Bridge needs a bus")
}

func ExampleBridge() {
	b := graph.New[chat]()
	b.AddNode("model", func(ctx context.Context, s chat) (chat, error) {
		return chat{Messages: state.Msgs(state.AI("", state.ToolCall("c1", "search", `{"q":"go"}`)))}, nil
	})
	b.AddEdge(graph.Start, "model")
	b.AddEdge("model", graph.End)
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	bus := events.NewBus()
	sub := bus.Subscribe(ctx)
	stream := g.Stream(ctx, chat{}, graph.WithStreamModes(events.StreamModes))
	if err := events.Bridge(ctx, bus, "run-1", stream); err != nil {
		fmt.Println(err)
	}
	bus.Close()
	for ev := range sub.Events() {
		fmt.Println(ev.Iteration, ev.Kind, ev.Payload["node"], ev.Payload["tool"])
	}
	// Output:
	// 1 step_start model <nil>
	// 1 tool_call model search
	// 1 iteration_complete <nil> <nil>
	// 1 run_end <nil> <nil>
}
