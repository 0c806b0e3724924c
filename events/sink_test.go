package events_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// loopGraph calls a tool n times, one superstep each: a run with many
// events.
func loopGraph(t *testing.T, n int) *graph.Graph[chat] {
	t.Helper()
	b := graph.New[chat]()
	b.AddNode("model", func(ctx context.Context, s chat) (chat, error) {
		id := state.NewID()
		graph.StreamWriter(ctx)(events.ModelCall{Model: "m", ToolCalls: 1, TotalTokens: 10})
		return chat{Messages: state.Msgs(state.AI("", state.ToolCall(id, "echo", `{"text":"`+strings.Repeat("x", 200)+`"}`)))}, nil
	})
	b.AddNode("tools", func(ctx context.Context, s chat) (chat, error) {
		last, _ := s.Messages.Last()
		c := last.ToolCalls()[0]
		return chat{Messages: state.Msgs(state.Tool(c.ID, "echo", c.FunctionCall.Arguments))}, nil
	})
	b.AddEdge(graph.Start, "model")
	b.AddEdge("model", "tools")
	b.AddConditionalEdges("tools", func(ctx context.Context, s chat) (string, error) {
		if len(s.Messages.List()) >= 2*n {
			return graph.End, nil
		}
		return "model", nil
	}, graph.WithDestinations("model", graph.End))
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

func TestJSONLSinkHasEveryEventOfTheRunOnceClosed(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	all := bus.Subscribe(t.Context(), events.QueueSize(1<<16)) // what the run published

	path := filepath.Join(t.TempDir(), "run.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	// Buffered: the file has the last events only if the sink flushes.
	sink := events.NewJSONLSink(bus, bufio.NewWriterSize(f, 1<<16))

	ctx := t.Context()
	stream := loopGraph(t, 100).Stream(ctx, chat{}, graph.WithStreamModes(events.StreamModes))
	require.NoError(t, events.Bridge(ctx, bus, "run-1", stream))
	require.NoError(t, sink.Close())

	select {
	case <-sink.Done():
	default:
		t.Fatal("the sink's goroutine is still running after Close")
	}
	require.Equal(t, 1, bus.Subscribers(), "the sink unsubscribed")

	bus.Close()
	want := drain(t, all)
	require.Len(t, want, 2+7*100, "per call: a node start, model call, tool call and node end, then a node start, tool result and node end")
	require.Equal(t, events.KindRunEnded, want[len(want)-1].Ev.Kind())
	disk, err := os.ReadFile(path)
	require.NoError(t, err)
	got, errs := readAll(t, bytes.NewReader(disk))
	require.Empty(t, errs)
	require.Empty(t, cmp.Diff(want, got), "every event of the run is on disk, in order")
}

func TestJSONLSinkIgnoresEventsPublishedAfterClose(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	var buf bytes.Buffer
	sink := events.NewJSONLSink(bus, &buf)
	bus.Publish(ev(events.KindCustom, "r", 1))
	require.NoError(t, sink.Close())
	bus.Publish(ev(events.KindCustom, "r", 2))

	got, errs := readAll(t, &buf)
	require.Empty(t, errs)
	require.Empty(t, cmp.Diff(delivered(evs(1)...), got))
}

func TestSinkCloseIsIdempotent(t *testing.T) {
	boom := errors.New("disk full")
	bus := events.NewBus()
	defer bus.Close()
	sink := events.NewJSONLSink(bus, failingWriter{boom})
	bus.Publish(ev(events.KindCustom, "r", 1))
	require.ErrorIs(t, sink.Close(), boom)
	require.ErrorIs(t, sink.Close(), boom, "a second Close returns the same error")
}

func TestJSONLSinkStopsOnItsFirstWriteError(t *testing.T) {
	boom := errors.New("disk full")
	bus := events.NewBus()
	defer bus.Close()
	sink := events.NewJSONLSink(bus, failingWriter{boom})
	bus.Publish(ev(events.KindCustom, "r", 1))

	<-sink.Done() // without Close: the error stops it
	require.Zero(t, bus.Subscribers())
	require.ErrorIs(t, sink.Close(), boom)
}

func TestSinkStopsWhenTheBusIsClosed(t *testing.T) {
	bus := events.NewBus()
	var buf bytes.Buffer
	sink := events.NewJSONLSink(bus, &buf)
	bus.Publish(ev(events.KindCustom, "r", 1))
	bus.Close()

	<-sink.Done() // without Close: the bus's end ends it
	require.NoError(t, sink.Close())
	got, errs := readAll(t, &buf)
	require.Empty(t, errs)
	require.Empty(t, cmp.Diff(delivered(evs(1)...), got))
}

func TestJSONLSinkFilters(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	var buf bytes.Buffer
	sink := events.NewJSONLSink(bus, &buf, events.FilterRunIDs("b"))
	bus.Publish(ev(events.KindCustom, "a", 1))
	bus.Publish(ev(events.KindCustom, "b", 2))
	require.NoError(t, sink.Close())

	got, errs := readAll(t, &buf)
	require.Empty(t, errs)
	require.Empty(t, cmp.Diff(delivered(ev(events.KindCustom, "b", 2)), got))
}

func TestLogSinkLogsEveryEventOnceClosed(t *testing.T) {
	bus := events.NewBus()
	defer bus.Close()
	var buf bytes.Buffer
	sink := events.NewLogSink(bus, slog.New(slog.NewJSONHandler(&buf, nil)))
	for _, e := range evs(1, 2, 3) {
		bus.Publish(e)
	}
	require.NoError(t, sink.Close())
	require.Equal(t, 3, strings.Count(buf.String(), `"msg":"`+events.LogMessage+`"`))
}
