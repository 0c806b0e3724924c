package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Tests of LangGraph's contract where users porting code meet it: streams
// of interrupts, what a snapshot says about its tasks, routers returning
// several nodes, and the pause a node must not swallow.

type askState struct {
	Log     state.Append[string]
	Answers state.Map[string, string]
}

// askingNode interrupts with its own name and records the answer.
func askingNode(name string) graph.NodeFunc[askState] {
	return func(ctx context.Context, s askState) (askState, error) {
		v, err := graph.InterruptAs[string](ctx, "question from "+name)
		if err != nil {
			return s, err
		}
		var out askState
		out.Answers.Put(name, v)
		return out, nil
	}
}

// parallelAsk runs "a" and "b" in one step, both interrupting.
func parallelAsk(t *testing.T) *graph.Graph[askState] {
	t.Helper()
	b := graph.New[askState]()
	b.AddNode("a", askingNode("a"))
	b.AddNode("b", askingNode("b"))
	b.AddEdge(graph.Start, "a").AddEdge(graph.Start, "b")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	return g
}

func TestParallelInterruptsStreamOneEventPerTaskAsItInterrupts(t *testing.T) {
	g := parallelAsk(t)
	evs, err := dexCollect(g.Stream(t.Context(), askState{}, graph.WithThread("t")))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	type row struct {
		Node   string
		Values []any
	}
	var got []row
	for _, ev := range evs {
		require.NotEqual(t, "", ev.Node, "no event without a node: %v", ev)
		if ev.Mode != graph.ModeInterrupts {
			continue
		}
		r := row{Node: ev.Node}
		for _, in := range ev.Interrupts {
			require.Equal(t, ev.Node, in.Node)
			r.Values = append(r.Values, in.Value)
		}
		require.NotEmpty(t, ev.TaskID)
		got = append(got, r)
	}
	slices.SortFunc(got, func(x, y row) int { return strings.Compare(x.Node, y.Node) })
	require.Empty(t, cmp.Diff([]row{{"a", []any{"question from a"}}, {"b", []any{"question from b"}}}, got))
}

func TestInterruptEventsComeWithUpdatesOrValuesOnly(t *testing.T) {
	tests := []struct {
		modes graph.Mode
		want  bool
	}{
		{graph.ModeUpdates, true},
		{graph.ModeValues, true},
		{graph.ModeInterrupts, true},
		{graph.ModeCustom, false},
		{graph.ModeTasks | graph.ModeCheckpoints, false},
	}
	for _, tt := range tests {
		t.Run(tt.modes.String(), func(t *testing.T) {
			g := parallelAsk(t)
			evs, _ := dexCollect(g.Stream(t.Context(), askState{}, graph.WithThread("t"), graph.WithStreamModes(tt.modes)))
			n := 0
			for _, ev := range evs {
				if ev.Mode == graph.ModeInterrupts {
					n++
				}
			}
			if tt.want {
				require.Equal(t, 2, n)
			} else {
				require.Zero(t, n)
			}
		})
	}
}

func TestABreakpointStreamsItsOwnInterruptEvent(t *testing.T) {
	b := graph.New[deadEndState]()
	b.AddNode("a", logNode("a"))
	b.AddNode("b", logNode("b"))
	b.AddEdge(graph.Start, "a").AddEdge("a", "b")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	for _, tt := range []struct {
		opt  graph.RunOption
		want graph.Breakpoint
	}{
		{graph.WithInterruptBefore("b"), graph.Breakpoint{Nodes: []string{"b"}}},
		{graph.WithInterruptAfter("a"), graph.Breakpoint{Nodes: []string{"a"}, After: true}},
	} {
		evs, err := dexCollect(g.Stream(t.Context(), deadEndState{}, graph.WithThread(tt.want.Nodes[0]), tt.opt))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		last := evs[len(evs)-1]
		require.Equal(t, graph.ModeInterrupts, last.Mode)
		require.Equal(t, tt.want, last.Payload)
		for _, ev := range evs[:len(evs)-1] {
			require.NotEqual(t, "", ev.Node, "no updates event without a node: %v", ev)
		}
	}
}

func TestGetStateKeepsAnAnsweredInterruptOnItsTaskUntilTheStepCompletes(t *testing.T) {
	g := parallelAsk(t)
	th := graph.WithThread("t")
	_, err := g.Invoke(t.Context(), askState{}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	ids := map[string]string{}
	for _, in := range intr.Interrupts {
		ids[in.Node] = in.ID
	}

	_, err = g.Resume(t.Context(), graph.Command[askState]{ResumeMap: map[string]any{ids["a"]: "yes"}}, th)
	require.ErrorAs(t, err, &intr, "b is still pending")
	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)

	byName := map[string]graph.TaskInfo{}
	for _, tk := range snap.Tasks {
		byName[tk.Name] = tk
	}
	a, b := byName["a"], byName["b"]
	require.True(t, a.Done)
	require.Len(t, a.Interrupts, 1, "the answered task still shows its interrupt")
	require.Equal(t, ids["a"], a.Interrupts[0].ID)
	require.Equal(t, graph.Writes{"Answers": []byte(`{"updates":[{"k":"a","v":"yes"}]}`)}, a.Writes, "and what it wrote")
	require.False(t, b.Done)
	require.Len(t, b.Interrupts, 1)
	require.Nil(t, b.Writes)
	require.Equal(t, []string{ids["b"]}, interruptIDs(snap.Interrupts), "only b's interrupt is pending")
	require.Equal(t, []string{"b"}, snap.Next)

	out, err := g.Resume(t.Context(), graph.Command[askState]{ResumeMap: map[string]any{ids["b"]: "no"}}, th)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "yes", "b": "no"}, out.Answers.Get())
	snap, err = g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Empty(t, snap.Tasks, "the step completed")
	require.Empty(t, snap.Interrupts)
}

func interruptIDs(ins []graph.Interruption) []string {
	var ids []string
	for _, in := range ins {
		ids = append(ids, in.ID)
	}
	return ids
}

type writesState struct {
	Name  state.Value[string]
	Items state.Append[int]
	Other state.Value[bool]
}

func TestUpdateEventsAndTaskResultsSayWhatTheNodeWrote(t *testing.T) {
	b := graph.New[writesState]()
	b.AddNode("w", func(ctx context.Context, s writesState) (writesState, error) {
		var out writesState
		out.Name.Set("x")
		out.Items.Append(1, 2)
		return out, nil
	})
	b.AddNode("nothing", func(ctx context.Context, s writesState) (writesState, error) { return s, nil })
	b.AddEdge(graph.Start, "w").AddEdge("w", "nothing")
	g, err := b.Compile()
	require.NoError(t, err)
	evs, err := dexCollect(g.Stream(t.Context(), writesState{}, graph.WithStreamModes(graph.ModeUpdates|graph.ModeTasks)))
	require.NoError(t, err)

	want := graph.Writes{"Items": []byte(`{"updates":[1,2]}`), "Name": []byte(`"x"`)}
	var update graph.Event
	var result graph.TaskResult
	var nothing graph.Writes
	for _, ev := range evs {
		switch {
		case ev.Mode == graph.ModeUpdates && ev.Node == "w":
			update = ev
		case ev.Mode == graph.ModeUpdates && ev.Node == "nothing":
			nothing = ev.Writes
		case ev.Mode == graph.ModeTasks && ev.Node == "w":
			if r, ok := ev.Payload.(graph.TaskResult); ok {
				result = r
			}
		}
	}
	require.Equal(t, want, update.Writes)
	require.Equal(t, []string{"Items", "Name"}, update.Writes.Fields())
	require.Equal(t, want, result.Writes)
	require.IsType(t, writesState{}, result.Output)
	require.Equal(t, graph.Writes{}, nothing, "a node that wrote nothing has empty writes, not none")
	require.Equal(t, `{Items: {"updates":[1,2]}, Name: "x"}`, update.Writes.String())
	require.Equal(t, `updates step=1 node=w writes={Items: {"updates":[1,2]}, Name: "x"}`, update.String())
}

func TestAMultiRouterRunsEveryNodeItReturns(t *testing.T) {
	tests := []struct {
		name   string
		choose []string
		opts   []graph.BranchOption
		want   []string
	}{
		{"two nodes", []string{"x", "y"}, nil, []string{"r", "x", "y"}},
		{"none", nil, nil, []string{"r"}},
		{"end among them", []string{"x", graph.End}, nil, []string{"r", "x"}},
		{"path map keys", []string{"first", "second"}, []graph.BranchOption{graph.WithPathMap(map[string]string{"first": "x", "second": "y"})}, []string{"r", "x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := graph.New[deadEndState]()
			b.AddNode("r", logNode("r"))
			b.AddNode("x", logNode("x"))
			b.AddNode("y", logNode("y"))
			b.AddEdge(graph.Start, "r")
			b.AddMultiConditionalEdges("r", func(context.Context, deadEndState) ([]string, error) { return tt.choose, nil }, tt.opts...)
			g, err := b.Compile()
			require.NoError(t, err)
			out, err := g.Invoke(t.Context(), deadEndState{})
			require.NoError(t, err)
			require.Equal(t, tt.want, out.Log.Get())
		})
	}
}

func TestAMultiRouterIsHeldToItsDeclaredDestinations(t *testing.T) {
	b := graph.New[deadEndState]()
	b.AddNode("r", logNode("r"))
	b.AddNode("x", logNode("x"))
	b.AddNode("y", logNode("y"))
	b.AddEdge(graph.Start, "r").AddEdge("x", "y")
	b.AddMultiConditionalEdges("r", func(context.Context, deadEndState) ([]string, error) { return []string{"x", "y"}, nil }, graph.WithDestinations("x"))
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), deadEndState{})
	var ud *graph.UndeclaredDestinationError
	require.ErrorAs(t, err, &ud)
	require.Equal(t, "y", ud.Destination)
}

func TestANodeThatSwallowsItsInterruptFailsLoudly(t *testing.T) {
	ran := false
	b := graph.New[askState]()
	b.AddNode("ask", func(ctx context.Context, s askState) (askState, error) {
		v, _ := graph.InterruptAs[string](ctx, "delete everything?") // error dropped
		ran = true
		var out askState
		out.Answers.Put("ask", v)
		return out, nil
	})
	b.AddEdge(graph.Start, "ask")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("t")
	_, err = g.Invoke(t.Context(), askState{}, th)
	require.ErrorIs(t, err, graph.ErrInterruptIgnored)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "ask", ne.Node)
	var intr *graph.Interrupted
	require.False(t, errors.As(err, &intr), "the run does not pretend to pause")
	require.True(t, ran)

	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Empty(t, snap.Interrupts, "no interrupt is left pending")
	require.Len(t, snap.Tasks, 1)
	require.Contains(t, snap.Tasks[0].Error, "returned a nil error")
}

func TestAnErrorReturnedAfterAnInterruptDecidesTheTask(t *testing.T) {
	mine := errors.New("mine")
	tests := []struct {
		name   string
		ret    func(interruptErr error) error
		pauses bool
	}{
		{"Interrupt's error", func(e error) error { return e }, true},
		{"Interrupt's error wrapped", func(e error) error { return fmt.Errorf("asking: %w", e) }, true},
		{"an error of its own", func(error) error { return mine }, false},
		{"Interrupt's text, not its error", func(e error) error { return errors.New("asking: " + e.Error()) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := graph.New[askState]()
			b.AddNode("ask", func(ctx context.Context, s askState) (askState, error) {
				if _, err := graph.Interrupt(ctx, "ok?"); err != nil {
					return s, tt.ret(err)
				}
				return s, nil
			})
			b.AddEdge(graph.Start, "ask")
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), askState{}, graph.WithThread("t"))
			var intr *graph.Interrupted
			require.Equal(t, tt.pauses, errors.As(err, &intr), "err: %v", err)
			if !tt.pauses {
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne, "the node's own error fails its task, as in LangGraph")
				snap, err := g.GetState(t.Context(), graph.WithThread("t"))
				require.NoError(t, err)
				require.Empty(t, snap.Interrupts, "and no interrupt is left pending")
			}
		})
	}
}

func TestEveryDurabilityModeStreamsEachCheckpointItSaves(t *testing.T) {
	for _, d := range []struct {
		name string
		mode graph.Durability
	}{{"sync", graph.DurabilitySync}, {"async", graph.DurabilityAsync}, {"exit", graph.DurabilityExit}} {
		t.Run(d.name, func(t *testing.T) {
			saver := checkpoint.NewMemory()
			b := graph.New[deadEndState]()
			b.AddNode("a", logNode("a"))
			b.AddNode("b", logNode("b"))
			b.AddEdge(graph.Start, "a").AddEdge("a", "b")
			g, err := b.Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			evs, err := dexCollect(g.Stream(t.Context(), deadEndState{}, graph.WithThread("t"),
				graph.WithDurability(d.mode), graph.WithStreamModes(graph.ModeCheckpoints)))
			require.NoError(t, err)
			var streamed []string
			for _, ev := range evs {
				streamed = append(streamed, ev.Payload.(graph.CheckpointInfo).ID)
			}
			var saved []string
			for s, err := range g.History(t.Context(), "t") {
				require.NoError(t, err)
				saved = append(saved, s.CheckpointID)
			}
			slices.Reverse(saved)
			require.NotEmpty(t, saved)
			require.Equal(t, saved, streamed)
		})
	}
}

func TestAnAnswerThatReachesNoQuestionIsRefused(t *testing.T) {
	g := parallelAsk(t)
	th := graph.WithThread("t")
	_, err := g.Invoke(t.Context(), askState{}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)

	_, err = g.Resume(t.Context(), graph.Command[askState]{ResumeMap: map[string]any{"no-such-id": "yes"}}, th)
	require.ErrorIs(t, err, graph.ErrNotInterrupted, "a resume map naming no pending interrupt")
	require.ErrorContains(t, err, "no-such-id")

	answers := map[string]any{}
	for _, in := range intr.Interrupts {
		answers[in.ID] = "yes"
	}
	_, err = g.Resume(t.Context(), graph.Command[askState]{Resume: "yes", ResumeMap: answers}, th)
	require.ErrorContains(t, err, "not both")
	_, err = g.Resume(t.Context(), graph.Command[askState]{ResumeMap: answers}, th)
	require.NoError(t, err)

	// A second process answering the same question after the first: the
	// thread finished, the answer is refused rather than dropped.
	_, err = g.Resume(t.Context(), graph.Command[askState]{Resume: "yes"}, th)
	require.ErrorIs(t, err, graph.ErrNotInterrupted)
	_, err = g.Resume(t.Context(), graph.Command[askState]{ResumeMap: answers}, th)
	require.ErrorIs(t, err, graph.ErrNotInterrupted)
}

func TestAnInterruptPayloadDecodesAfterACheckpointRoundTrip(t *testing.T) {
	type question struct {
		Text    string   `json:"text"`
		Options []string `json:"options"`
	}
	saver := checkpoint.NewMemory()
	build := func() *graph.Graph[askState] {
		b := graph.New[askState]()
		b.AddNode("ask", func(ctx context.Context, s askState) (askState, error) {
			if _, err := graph.Interrupt(ctx, question{Text: "ship?", Options: []string{"yes", "no"}}); err != nil {
				return s, err
			}
			return s, nil
		})
		b.AddEdge(graph.Start, "ask")
		g, err := b.Compile(graph.WithCheckpointer(saver))
		require.NoError(t, err)
		return g
	}
	_, err := build().Invoke(t.Context(), askState{}, graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	var live question
	require.NoError(t, intr.Interrupts[0].Decode(&live))

	snap, err := build().GetState(t.Context(), graph.WithThread("t")) // as another process would
	require.NoError(t, err)
	require.IsType(t, map[string]any{}, snap.Interrupts[0].Value)
	var read question
	require.NoError(t, snap.Interrupts[0].Decode(&read))
	require.Equal(t, question{Text: "ship?", Options: []string{"yes", "no"}}, read)
	require.Equal(t, read, live)

	var wrong int
	require.ErrorContains(t, snap.Interrupts[0].Decode(&wrong), "cannot be read as *int")
	var other struct {
		Y string `json:"y"`
	}
	require.ErrorContains(t, snap.Interrupts[0].Decode(&other), "unknown field", "a payload of another struct type is refused")
	require.Error(t, snap.Interrupts[0].Decode(nil))
}
