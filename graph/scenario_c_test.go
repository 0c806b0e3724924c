package graph_test

// Ports of LangGraph behavioural scenarios, section C of
// the project's LangGraph behavioural specification (not shipped) §7 (Command, Send, parent
// command, subgraphs).

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// ---------------------------------------------------------------------------
// S25 test_command_goto_with_static_breakpoints.

func TestS25CommandGotoWithStaticBreakpoints(t *testing.T) {
	type S struct {
		Foo state.Reduced[string, dexConcat]
	}
	node := func(suffix string) graph.NodeFunc[S] {
		return func(context.Context, S) (S, error) {
			var u S
			u.Foo.Update(suffix)
			return u, nil
		}
	}
	g, err := graph.New[S]().
		AddNode("node1", node("|node-1")).AddNode("node2", node("|node-2")).
		AddEdge(graph.Start, "node1").AddEdge("node1", "node2").AddEdge("node2", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("node1"))
	require.NoError(t, err)
	ctx := dexCtx(t)
	var in S
	in.Foo.Update("abc")
	out, err := g.Invoke(ctx, in, graph.WithThread("1"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Equal(t, []string{"node1"}, intr.Before)
	require.Equal(t, "abc", out.Foo.Get())

	out, err = g.Resume(ctx, graph.Command[S]{Goto: []string{"node2"}}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, "abc|node-1|node-2|node-2", out.Foo.Get())
}

// ---------------------------------------------------------------------------
// S26 test_command_with_static_breakpoints.

func TestS26CommandWithStaticBreakpoints(t *testing.T) {
	type S struct{ Foo state.Value[string] }
	node := func(suffix string) graph.NodeFunc[S] {
		return func(_ context.Context, s S) (S, error) {
			return S{Foo: state.Set(s.Foo.Get() + suffix)}, nil
		}
	}
	g, err := graph.New[S]().
		AddNode("node1", node("|node-1")).AddNode("node2", node("|node-2")).
		AddEdge(graph.Start, "node1").AddEdge("node1", "node2").AddEdge("node2", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("node1"))
	require.NoError(t, err)
	ctx := dexCtx(t)
	_, err = g.Invoke(ctx, S{Foo: state.Set("abc")}, graph.WithThread("1"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	// A resume value is accepted (and unused) at a static breakpoint.
	out, err := g.Resume(ctx, graph.Command[S]{Resume: "node1"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, "abc|node-1|node-2", out.Foo.Get())
}

// ---------------------------------------------------------------------------
// S27 test_multistep_plan.

// Python's heterogeneous plan ["step1", ["step2", "step3"], "step4"] is a
// [][]string (each element is one goto).
func TestS27MultistepPlan(t *testing.T) {
	type S struct {
		Messages state.Messages
		Plan     state.Value[[][]string]
	}
	var plannerRuns atomic.Int32
	b := graph.New[S]().
		AddCommandNode("planner", func(_ context.Context, s S) (graph.Command[S], error) {
			plannerRuns.Add(1)
			plan := s.Plan.Get()
			if !s.Plan.HasValue() {
				plan = [][]string{{"step1"}, {"step2", "step3"}, {"step4"}}
			}
			if len(plan) == 0 {
				return graph.Command[S]{}, nil // the end of the plan
			}
			return graph.Command[S]{Goto: plan[0], Update: S{Plan: state.Set(plan[1:])}}, nil
		}).
		AddEdge(graph.Start, "planner")
	for _, step := range []string{"step1", "step2", "step3", "step4"} {
		b.AddCommandNode(step, func(context.Context, S) (graph.Command[S], error) {
			return graph.Command[S]{Goto: []string{"planner"}, Update: S{Messages: state.Msgs(state.Human(step))}}, nil
		}, graph.WithDestinations("planner"))
	}
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), S{Messages: state.Msgs(state.Human("start"))})
	require.NoError(t, err)
	require.Equal(t, []string{"start", "step1", "step2", "step3", "step4"}, abcfTexts(out.Messages.List()))
	require.True(t, out.Plan.HasValue())
	require.Empty(t, out.Plan.Get())
	require.EqualValues(t, 4, plannerRuns.Load(), "step2 and step3 both go to planner, which runs once")
}

// §1.9: a Command's goto adds destinations; it does not replace static
// edges.
func TestABCFCommandGotoAddsToStaticEdges(t *testing.T) {
	type S struct{ L state.Append[string] }
	leaf := func(name string) graph.NodeFunc[S] {
		return func(context.Context, S) (S, error) { return S{L: state.Items(name)}, nil }
	}
	g, err := graph.New[S]().
		AddCommandNode("a", func(context.Context, S) (graph.Command[S], error) {
			return graph.Command[S]{Update: S{L: state.Items("a")}, Goto: []string{"x"}}, nil
		}, graph.WithDestinations("x")).
		AddNode("x", leaf("x")).AddNode("y", leaf("y")).
		AddEdge(graph.Start, "a").AddEdge("a", "y").AddEdge("x", graph.End).AddEdge("y", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), S{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "x", "y"}, out.L.Get())
}

// ---------------------------------------------------------------------------
// S28 test_parent_command_goto.

func TestS28ParentCommandGoto(t *testing.T) {
	type S struct{ DialogState state.Append[string] }
	child, err := graph.New[S]().
		AddNode("node_a_child", func(context.Context, S) (S, error) {
			return S{DialogState: state.Items("a_child_state")}, nil
		}).
		AddCommandNode("node_b_child", func(context.Context, S) (graph.Command[S], error) {
			return graph.Command[S]{
				Parent: true,
				Goto:   []string{"node_b_parent"},
				Update: S{DialogState: state.Items("b_child_state")},
			}, nil
		}).
		AddEdge(graph.Start, "node_a_child").AddEdge("node_a_child", "node_b_child").
		Compile()
	require.NoError(t, err)
	g, err := graph.New[S]().
		AddCommandNode("subgraph_node", graph.Subgraph[S, S](child, nil, nil), graph.WithDestinations("node_b_parent")).
		AddNode("node_b_parent", func(context.Context, S) (S, error) {
			return S{DialogState: state.Items("node_b_parent")}, nil
		}).
		AddEdge(graph.Start, "subgraph_node").AddEdge("node_b_parent", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), S{DialogState: state.Items("init_state")})
	require.NoError(t, err)
	require.Equal(t, []string{"init_state", "b_child_state", "node_b_parent"}, out.DialogState.Get())
}

// ---------------------------------------------------------------------------
// S29 test_parent_command.

func TestS29ParentCommand(t *testing.T) {
	type S struct {
		Messages state.Messages
		UserName state.Value[string]
	}
	child, err := graph.New[S]().
		AddCommandNode("tool", func(context.Context, S) (graph.Command[S], error) {
			return graph.Command[S]{Parent: true, Update: S{UserName: state.Set("Meow")}}, nil
		}).
		AddEdge(graph.Start, "tool").
		Compile()
	require.NoError(t, err)
	g, err := graph.New[S]().
		AddCommandNode("alice", graph.Subgraph[S, S](child, nil, nil)).
		AddEdge(graph.Start, "alice").
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	out, err := g.Invoke(ctx, S{Messages: state.Msgs(state.Human("get user name"))}, graph.WithThread("1"), graph.WithDurability(graph.DurabilityExit))
	require.NoError(t, err)
	require.Equal(t, []string{"get user name"}, abcfTexts(out.Messages.List()))
	require.Equal(t, "Meow", out.UserName.Get())

	snap, err := g.GetState(ctx, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, "Meow", snap.Values.UserName.Get())
	require.Empty(t, snap.Next)
	require.Equal(t, "loop", snap.Metadata.Source)
	require.Empty(t, snap.Metadata.Parents)
	require.Equal(t, 1, snap.Metadata.Step)
}

// ---------------------------------------------------------------------------
// S30 test_stream_subgraphs_during_execution.

// Python orders the events with sleeps (inner_2 0.5 s, outer_1 0.2 s);
// here outer_1 waits until inner_1's update was streamed and inner_2 until
// outer_1's.
func TestS30StreamSubgraphsDuringExecution(t *testing.T) {
	type P struct {
		MyKey state.Reduced[string, dexConcat]
	}
	type C struct {
		MyKey      state.Reduced[string, dexConcat]
		MyOtherKey state.Value[string]
	}
	seen := newAbcfSeen()
	child, err := graph.New[C]().
		AddNode("inner_1", func(_ context.Context, s C) (C, error) {
			var u C
			u.MyKey.Update("got here")
			u.MyOtherKey.Set(s.MyKey.Get())
			return u, nil
		}).
		AddNode("inner_2", func(ctx context.Context, s C) (C, error) {
			if err := seen.wait(ctx, "outer_1", 1); err != nil {
				return s, err
			}
			var u C
			u.MyKey.Update(" and there")
			u.MyOtherKey.Set(s.MyKey.Get())
			return u, nil
		}).
		AddEdge(graph.Start, "inner_1").AddEdge("inner_1", "inner_2").AddEdge("inner_2", graph.End).
		Compile()
	require.NoError(t, err)
	in := func(p P) C {
		var c C
		c.MyKey.Update(p.MyKey.Get())
		return c
	}
	out := func(c C) P {
		var p P
		p.MyKey.Update(c.MyKey.Get())
		return p
	}
	g, err := graph.New[P]().
		AddCommandNode("inner", graph.Subgraph(child, in, out)).
		AddNode("outer_1", func(ctx context.Context, s P) (P, error) {
			if err := seen.wait(ctx, "inner_1", 1); err != nil {
				return s, err
			}
			var u P
			u.MyKey.Update(" and parallel")
			return u, nil
		}).
		AddNode("outer_2", func(context.Context, P) (P, error) {
			var u P
			u.MyKey.Update(" and back again")
			return u, nil
		}).
		AddEdge(graph.Start, "inner").AddEdge(graph.Start, "outer_1").
		AddJoin([]string{"inner", "outer_1"}, "outer_2").AddEdge("outer_2", graph.End).
		Compile()
	require.NoError(t, err)

	var ups []abcfUpdate
	var innerTask string
	var final P
	var p0 P
	p0.MyKey.Update("")
	for ev, err := range g.Stream(dexCtx(t), p0, graph.WithSubgraphs(), graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues)) {
		require.NoError(t, err)
		if ev.Mode == graph.ModeValues {
			if ev.Namespace == "" {
				final = ev.Payload.(P)
			}
			continue
		}
		if ev.Node == "" {
			continue
		}
		seen.mark(ev.Node)
		if ev.Namespace == "" && ev.Node == "inner" {
			innerTask = ev.TaskID
		}
		ups = append(ups, abcfUpdate{NS: ev.Namespace, Node: ev.Node, Writes: abcfWrites(t, ev.Writes)})
	}
	require.NotEmpty(t, innerTask)
	ns := "inner:" + innerTask
	require.Equal(t, []abcfUpdate{
		{NS: ns, Node: "inner_1", Writes: map[string]any{"MyKey": []any{"got here"}, "MyOtherKey": ""}},
		{NS: "", Node: "outer_1", Writes: map[string]any{"MyKey": []any{" and parallel"}}},
		{NS: ns, Node: "inner_2", Writes: map[string]any{"MyKey": []any{" and there"}, "MyOtherKey": "got here"}},
		{NS: "", Node: "inner", Writes: map[string]any{"MyKey": []any{"got here and there"}}},
		{NS: "", Node: "outer_2", Writes: map[string]any{"MyKey": []any{" and back again"}}},
	}, ups)
	require.Equal(t, "got here and there and parallel and back again", final.MyKey.Get())

	// Without WithSubgraphs only the root graph's updates are streamed
	// (the gates are already open).
	evs, err := dexCollect(g.Stream(dexCtx(t), p0))
	require.NoError(t, err)
	var nodes []string
	for _, u := range abcfUpdates(t, evs) {
		require.Empty(t, u.NS)
		nodes = append(nodes, u.Node)
	}
	require.ElementsMatch(t, []string{"inner", "outer_1", "outer_2"}, nodes)
}

// ---------------------------------------------------------------------------
// S31 test_nested_graph_state.

// get_state(subgraphs=True) has no Go equivalent; the subgraph's checkpoint
// is read from the saver instead. Python runs with durability="exit"; the
// test also runs with the default (sync) durability.
func TestS31NestedGraphState(t *testing.T) {
	type P struct{ MyKey state.Value[string] }
	type C struct{ MyKey, MyOtherKey state.Value[string] }
	for _, tc := range []struct {
		name string
		dur  graph.Durability
	}{{"exit", graph.DurabilityExit}, {"sync", graph.DurabilitySync}} {
		t.Run(tc.name, func(t *testing.T) {
			var inner1Runs atomic.Int32
			child, err := graph.New[C]().
				AddNode("inner_1", func(_ context.Context, s C) (C, error) {
					inner1Runs.Add(1)
					return C{MyKey: state.Set(s.MyKey.Get() + " here"), MyOtherKey: state.Set(s.MyKey.Get())}, nil
				}).
				AddNode("inner_2", func(_ context.Context, s C) (C, error) {
					return C{MyKey: state.Set(s.MyKey.Get() + " and there"), MyOtherKey: state.Set(s.MyKey.Get())}, nil
				}).
				AddEdge(graph.Start, "inner_1").AddEdge("inner_1", "inner_2").AddEdge("inner_2", graph.End).
				Compile(graph.WithInterruptBefore("inner_2"))
			require.NoError(t, err)
			saver := checkpoint.NewMemory()
			g, err := graph.New[P]().
				AddNode("outer_1", func(_ context.Context, s P) (P, error) {
					return P{MyKey: state.Set("hi " + s.MyKey.Get())}, nil
				}).
				AddCommandNode("inner", graph.Subgraph(child,
					func(p P) C { return C{MyKey: state.Set(p.MyKey.Get())} },
					func(c C) P { return P{MyKey: state.Set(c.MyKey.Get())} })).
				AddNode("outer_2", func(_ context.Context, s P) (P, error) {
					return P{MyKey: state.Set(s.MyKey.Get() + " and back again")}, nil
				}).
				AddEdge(graph.Start, "outer_1").AddEdge("outer_1", "inner").AddEdge("inner", "outer_2").AddEdge("outer_2", graph.End).
				Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			ctx := dexCtx(t)
			thread, dur := graph.WithThread("1"), graph.WithDurability(tc.dur)

			_, err = g.Invoke(ctx, P{MyKey: state.Set("my value")}, thread, dur)
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			require.Empty(t, intr.Interrupts, "a static breakpoint carries no interrupt payload")

			snap, err := g.GetState(ctx, thread)
			require.NoError(t, err)
			require.Equal(t, "hi my value", snap.Values.MyKey.Get())
			require.Equal(t, []string{"inner"}, snap.Next)
			require.Len(t, snap.Tasks, 1)
			require.Equal(t, "inner", snap.Tasks[0].Name)
			require.Empty(t, snap.Interrupts)
			require.Equal(t, "loop", snap.Metadata.Source)
			require.Empty(t, snap.Metadata.Parents)
			require.Equal(t, 1, snap.Metadata.Step)

			var hist []*graph.Snapshot[P]
			for s, err := range g.History(ctx, "1") {
				require.NoError(t, err)
				hist = append(hist, s)
			}
			require.Equal(t, snap.CheckpointID, hist[0].CheckpointID)
			if tc.dur == graph.DurabilityExit {
				require.Len(t, hist, 1, "durability exit writes one checkpoint")
			}

			// The subgraph's latest checkpoint, in namespace inner:<task id>.
			ns := "inner:" + snap.Tasks[0].ID
			var sub *checkpoint.Tuple
			for tp, err := range saver.List(ctx, "1", checkpoint.ListOptions{Namespace: &ns, Limit: 1}) {
				require.NoError(t, err)
				sub = tp
			}
			require.NotNil(t, sub, "the subgraph checkpoints under inner:<task id>")
			var myKey, myOther string
			require.NoError(t, json.Unmarshal(sub.Value("MyKey"), &myKey))
			require.NoError(t, json.Unmarshal(sub.Value("MyOtherKey"), &myOther))
			require.Equal(t, "hi my value here", myKey)
			require.Equal(t, "hi my value", myOther)
			require.Equal(t, "loop", sub.Metadata.Source)
			require.Equal(t, 1, sub.Metadata.Step)
			require.Equal(t, map[string]string{"": snap.CheckpointID}, sub.Metadata.Parents, "a fresh subgraph run's checkpoints name the parent's")

			out, err := g.Resume(ctx, graph.Command[P]{}, thread, dur)
			require.NoError(t, err)
			require.Equal(t, "hi my value here and there and back again", out.MyKey.Get())
			require.EqualValues(t, 1, inner1Runs.Load(), "the subgraph resumed, it did not restart")
			snap, err = g.GetState(ctx, thread)
			require.NoError(t, err)
			require.Equal(t, 3, snap.Metadata.Step)
			require.Empty(t, snap.Next)
		})
	}
}

// ---------------------------------------------------------------------------
// S32 test_stateless_interrupt_resume (+ :85, state does not persist across
// parent invocations). The checkpointer=True half (a persistent subgraph
// namespace) has no Go API and is not ported.

func TestS32StatelessSubgraphInterruptResume(t *testing.T) {
	type P struct{ Result state.Value[string] }
	type C struct {
		Result state.Value[string]
		Seen   state.Append[string]
	}
	var childSaw [][]string
	child, err := graph.New[C]().
		AddNode("process", func(ctx context.Context, s C) (C, error) {
			v, err := graph.Interrupt(ctx, "continue?")
			if err != nil {
				return s, err
			}
			childSaw = append(childSaw, s.Seen.Get())
			if v != true {
				return s, errors.New("unexpected resume value")
			}
			return C{Result: state.Set("Done"), Seen: state.Items("visit")}, nil
		}).
		AddEdge(graph.Start, "process").AddEdge("process", graph.End).
		Compile()
	require.NoError(t, err)
	sub := graph.Subgraph(child,
		func(p P) C { return C{Result: state.Set(p.Result.Get())} },
		func(c C) P { return P{Result: state.Set(c.Result.Get())} })
	g, err := graph.New[P]().
		AddNode("parent", func(ctx context.Context, s P) (P, error) {
			// The subgraph is invoked inside the parent node's function.
			cmd, err := sub(ctx, s)
			return cmd.Update, err
		}).
		AddEdge(graph.Start, "parent").AddEdge("parent", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)

	for round := range 2 {
		out, err := g.Invoke(ctx, P{Result: state.Set("")}, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr, "round %d", round)
		require.Len(t, intr.Interrupts, 1)
		require.Equal(t, "continue?", intr.Interrupts[0].Value)
		require.Equal(t, "", out.Result.Get())

		out, err = g.Resume(ctx, graph.Command[P]{Resume: true}, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, "Done", out.Result.Get())
	}
	// Each parent invocation started the subgraph afresh.
	require.Equal(t, [][]string{nil, nil}, childSaw)
}
