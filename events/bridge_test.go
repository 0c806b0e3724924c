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
	}, graph.WithDestinations("tools", graph.End))
	b.AddEdge("tools", "model")
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// bridge runs Bridge over stream and returns what it published, with
// task IDs checked and replaced by "T" and writes by their fields.
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
		if e.Node != "" && e.Kind() != events.KindInterrupt {
			require.NotEmpty(t, e.Task, "%+v", e)
			e.Task = "T"
		}
		if end, ok := e.Data.(events.NodeEnded); ok && end.Writes != nil {
			fields := graph.Writes{}
			for _, f := range end.Writes.Fields() {
				require.NotEmpty(t, end.Writes[f])
				fields[f] = nil
			}
			end.Writes = fields
			e.Data = end
		}
		got = append(got, e)
	}
	return got, err
}

// run is an event of the run at step.
func run(step int, data events.Payload) events.Event {
	return events.Event{RunID: "run-1", Step: step, Time: t0, Data: data}
}

// task is an event of a task of node at step.
func task(step int, node string, data events.Payload) events.Event {
	return events.Event{RunID: "run-1", Step: step, Node: node, Task: "T", Time: t0, Data: data}
}

// wrote is the end of a task that wrote fields.
func wrote(fields ...string) events.NodeEnded {
	w := graph.Writes{}
	for _, f := range fields {
		w[f] = nil
	}
	return events.NodeEnded{Writes: w}
}

func TestBridgePublishesTheRunWhateverTheStreamModes(t *testing.T) {
	want := []events.Event{
		run(0, events.RunStarted{}),
		task(1, "model", events.NodeStarted{}),
		task(1, "model", events.ToolCall{ID: "c1", Name: "add", Args: `{"a":1}`}),
		task(1, "model", events.ToolCall{ID: "c2", Name: "mul", Args: `{"a":2}`}),
		task(1, "model", wrote("Messages")),
		task(2, "tools", events.NodeStarted{}),
		task(2, "tools", events.ToolResult{ID: "c1", Name: "add", Result: "1"}),
		task(2, "tools", events.ToolResult{ID: "c2", Name: "mul", Result: "2"}),
		task(2, "tools", wrote("Messages")),
		task(3, "model", events.NodeStarted{}),
		task(3, "model", wrote("Messages")),
		run(3, events.RunEnded{Status: events.StatusCompleted}),
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
		run(0, events.RunStarted{}),
		task(1, "ask", events.NodeStarted{}),
		{RunID: "run-1", Step: 1, Node: "ask", Task: got[2].Task, Time: t0, Data: events.Interrupt{ID: intr.Interrupts[0].ID, Value: "approve?"}},
		task(1, "ask", events.NodeEnded{Interrupted: true}),
		run(1, events.RunEnded{Status: events.StatusInterrupted}),
	}
	require.Empty(t, cmp.Diff(want, got))
	require.NotEmpty(t, got[2].Task, "the interrupt names its task")

	// The resumed run runs the node again, in the same superstep.
	got, err = bridge(t, t.Context(), g.StreamResume(t.Context(), graph.Command[chat]{Resume: "yes"}, graph.WithThread("t")))
	require.NoError(t, err)
	want = []events.Event{
		run(0, events.RunStarted{}),
		task(1, "ask", events.NodeStarted{}),
		task(1, "ask", wrote("Messages")),
		run(1, events.RunEnded{Status: events.StatusCompleted}),
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgePublishesAnInterruptOfASubgraphOnce(t *testing.T) {
	inner := graph.New[chat]()
	inner.AddNode("ask", func(ctx context.Context, s chat) (chat, error) {
		_, err := graph.Interrupt(ctx, "approve?")
		return s, err
	})
	inner.AddEdge(graph.Start, "ask")
	inner.AddEdge("ask", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	outer := graph.New[chat]()
	outer.AddCommandNode("sub", graph.Subgraph[chat, chat](sub, nil, nil))
	outer.AddEdge(graph.Start, "sub")
	outer.AddEdge("sub", graph.End)
	g, err := outer.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)

	tests := []struct {
		name string
		opts []graph.RunOption
	}{
		{"without the subgraph's events", nil},
		{"with the subgraph's events", []graph.RunOption{graph.WithSubgraphs()}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]graph.RunOption{graph.WithThread(fmt.Sprint(i)), graph.WithStreamModes(events.StreamModes)}, tt.opts...)
			got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{}, opts...))
			intr, ok := errors.AsType[*graph.Interrupted](err)
			require.True(t, ok, "got %v", err)
			var interrupts []events.Event
			for _, e := range got {
				if e.Kind() == events.KindInterrupt {
					interrupts = append(interrupts, e)
				}
			}
			require.Len(t, interrupts, 1)
			require.Equal(t, "ask", interrupts[0].Node)
			require.Equal(t, intr.Interrupts[0].Namespace, interrupts[0].Namespace)
			require.NotEmpty(t, interrupts[0].Namespace)
			require.Equal(t, events.Interrupt{ID: intr.Interrupts[0].ID, Value: "approve?"}, interrupts[0].Data)
		})
	}
}

func TestBridgePublishesAMessageOfASubgraphOnce(t *testing.T) {
	inner := graph.New[chat]()
	inner.AddNode("model", func(ctx context.Context, s chat) (chat, error) {
		return chat{Messages: state.Msgs(state.AI("", state.ToolCall("c1", "add", `{}`)))}, nil
	})
	inner.AddEdge(graph.Start, "model")
	inner.AddEdge("model", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	outer := graph.New[chat]()
	outer.AddCommandNode("sub", graph.Subgraph[chat, chat](sub, nil, nil))
	outer.AddEdge(graph.Start, "sub")
	outer.AddEdge("sub", graph.End)
	g, err := outer.Compile()
	require.NoError(t, err)

	tests := []struct {
		name     string
		opts     []graph.RunOption
		wantNode string // the node the tool call is published from
	}{
		{"without the subgraph's events", nil, "sub"},
		{"with the subgraph's events", []graph.RunOption{graph.WithSubgraphs()}, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]graph.RunOption{graph.WithStreamModes(events.StreamModes)}, tt.opts...)
			got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{}, opts...))
			require.NoError(t, err)
			var calls []events.Event
			for _, e := range got {
				if e.Kind() == events.KindToolCall {
					calls = append(calls, e)
				}
			}
			require.Len(t, calls, 1)
			require.Equal(t, tt.wantNode, calls[0].Node)
			require.Equal(t, events.ToolCall{ID: "c1", Name: "add", Args: `{}`}, calls[0].Data)
		})
	}
}

func TestBridgePublishesBreakpoints(t *testing.T) {
	g := reactGraph(t, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("tools"))
	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{Messages: state.Msgs(state.Human("go"))}, graph.WithThread("t")))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, []events.Event{
		{RunID: "run-1", Step: 2, Node: "tools", Time: t0, Data: events.Interrupt{Breakpoint: events.BreakpointBefore}},
		run(2, events.RunEnded{Status: events.StatusInterrupted}),
	}, got[len(got)-2:])
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
	require.Len(t, got, 5)
	failed, ok := got[2].Data.(events.NodeEnded)
	require.True(t, ok, "%+v", got[2])
	require.Contains(t, failed.Error, "boom")
	want := []events.Event{
		run(0, events.RunStarted{}),
		task(1, "bad", events.NodeStarted{}),
		task(1, "bad", events.NodeEnded{Error: failed.Error}),
		run(1, events.Error{Message: err.Error()}),
		run(1, events.RunEnded{Status: events.StatusFailed, Error: err.Error()}),
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
	want := []events.Event{
		run(0, events.RunStarted{}),
		task(1, "stop", events.NodeStarted{}),
		run(1, events.RunEnded{Status: events.StatusCancelled, Error: err.Error()}),
	}
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
	want := []events.Event{
		run(0, events.RunStarted{}),
		task(1, "edit", events.NodeStarted{}),
		task(1, "edit", wrote("Messages")),
		run(1, events.RunEnded{Status: events.StatusCompleted}),
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgePublishesWhatNodesWrite(t *testing.T) {
	b := graph.New[chat]()
	b.AddNode("work", func(ctx context.Context, s chat) (chat, error) {
		write := graph.StreamWriter(ctx)
		write(events.ModelCall{Model: "m", TotalTokens: 7})
		write(checked{Passed: 3})
		write("plain text")
		return s, nil
	})
	b.AddEdge(graph.Start, "work")
	b.AddEdge("work", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)

	got, err := bridge(t, t.Context(), g.Stream(t.Context(), chat{}, graph.WithStreamModes(events.StreamModes)))
	require.NoError(t, err)
	want := []events.Event{
		run(0, events.RunStarted{}),
		task(1, "work", events.NodeStarted{}),
		task(1, "work", events.ModelCall{Model: "m", TotalTokens: 7}),
		task(1, "work", checked{Passed: 3}),
		task(1, "work", events.Custom{Value: "plain text"}),
		task(1, "work", events.NodeEnded{}),
		run(1, events.RunEnded{Status: events.StatusCompleted}),
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestBridgeNeedsAPublisher(t *testing.T) {
	err := events.Bridge(t.Context(), nil, "r", func(func(graph.Event, error) bool) {
		t.Fatal("the stream must not be consumed")
	})
	require.ErrorIs(t, err, events.ErrNoPublisher)
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
		switch p := ev.Data.(type) {
		case events.ToolCall:
			fmt.Println(ev.Step, ev.Node, "calls", p.Name, p.Args)
		case events.RunEnded:
			fmt.Println(ev.Step, "run", p.Status)
		default:
			fmt.Println(ev.Step, ev.Node, ev.Kind())
		}
	}
	// Output:
	// 0  run_started
	// 1 model node_started
	// 1 model calls search {"q":"go"}
	// 1 model node_ended
	// 1 run completed
}
