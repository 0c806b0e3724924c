package graph_test

// Graph evolution: a thread paused by one version of a graph and resumed
// by another compiled on the same saver, as after a deploy.

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// evoState is the state of the first version of every graph below.
type evoState struct {
	Log  state.Append[string]
	Note state.Value[string]
}

// evoStep is a node that logs its name.
func evoStep(name string) graph.NodeFunc[evoState] {
	return func(ctx context.Context, s evoState) (evoState, error) {
		return evoState{Log: state.Items(name)}, nil
	}
}

// evoAsk is a node that asks a human and logs the answer.
func evoAsk(ctx context.Context, s evoState) (evoState, error) {
	answer, err := graph.Interrupt(ctx, "ok?")
	if err != nil {
		return evoState{}, err
	}
	return evoState{Log: state.Items("ask:" + answer.(string))}, nil
}

// evoSpec describes a graph over evoState: nodes (ask is evoAsk, the
// others evoStep) and edges, the last of each path ending the run.
type evoSpec struct {
	nodes  []string
	edges  [][2]string
	router func(evoState) string // from ask, when set: to its result
	opts   []graph.CompileOption
}

func (sp evoSpec) compile(t *testing.T, saver checkpoint.Saver) *graph.Graph[evoState] {
	t.Helper()
	b := graph.New[evoState]()
	for _, n := range sp.nodes {
		if n == "ask" {
			b.AddNode(n, evoAsk)
		} else {
			b.AddNode(n, evoStep(n))
		}
	}
	for _, e := range sp.edges {
		b.AddEdge(e[0], e[1])
	}
	if sp.router != nil {
		b.AddConditionalEdges("ask", func(ctx context.Context, s evoState) (string, error) { return sp.router(s), nil })
	}
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(saver)}, sp.opts...)...)
	require.NoError(t, err)
	return g
}

// evoSavers are the savers every case runs on.
func evoSavers(t *testing.T) map[string]func(t *testing.T) checkpoint.Saver {
	return map[string]func(t *testing.T) checkpoint.Saver{
		"memory": func(t *testing.T) checkpoint.Saver { return checkpoint.NewMemory() },
		"sqlite": func(t *testing.T) checkpoint.Saver {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "evo.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

// evoPause runs v1 on thread "1" until it pauses.
func evoPause(t *testing.T, v1 *graph.Graph[evoState]) {
	t.Helper()
	_, err := v1.Invoke(t.Context(), evoState{Note: state.Set("kept")}, graph.WithThread("1"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
}

// A paused thread resumed by a graph that changed around the paused node
// finishes: the next steps follow the new graph.
func TestResumeWithChangedGraphFinishes(t *testing.T) {
	v1 := evoSpec{
		nodes: []string{"prep", "ask", "done"},
		edges: [][2]string{{graph.Start, "prep"}, {"prep", "ask"}, {"ask", "done"}, {"done", graph.End}},
	}
	cases := []struct {
		name string
		v2   evoSpec
		want []string
	}{{
		name: "node added after the paused node",
		v2: evoSpec{
			nodes: []string{"prep", "ask", "review", "done"},
			edges: [][2]string{{graph.Start, "prep"}, {"prep", "ask"}, {"ask", "review"}, {"review", "done"}, {"done", graph.End}},
		},
		want: []string{"prep", "ask:yes", "review", "done"},
	}, {
		name: "node added before the paused node",
		v2: evoSpec{
			nodes: []string{"prep", "check", "ask", "done"},
			edges: [][2]string{{graph.Start, "prep"}, {"prep", "check"}, {"check", "ask"}, {"ask", "done"}, {"done", graph.End}},
		},
		want: []string{"prep", "ask:yes", "done"}, // the run is past it
	}, {
		name: "edge changed (to a new node, the old destination removed)",
		v2: evoSpec{
			nodes: []string{"prep", "ask", "other"},
			edges: [][2]string{{graph.Start, "prep"}, {"prep", "ask"}, {"ask", "other"}, {"other", graph.End}},
		},
		want: []string{"prep", "ask:yes", "other"},
	}, {
		name: "router added",
		v2: evoSpec{
			nodes:  []string{"prep", "ask", "done", "other"},
			edges:  [][2]string{{graph.Start, "prep"}, {"prep", "ask"}, {"other", graph.End}, {"done", graph.End}},
			router: func(s evoState) string { return "other" },
		},
		want: []string{"prep", "ask:yes", "other"},
	}, {
		name: "node removed that ran last and has no pending task",
		v2: evoSpec{
			nodes: []string{"ask", "done"},
			edges: [][2]string{{graph.Start, "ask"}, {"ask", "done"}, {"done", graph.End}},
		},
		want: []string{"prep", "ask:yes", "done"},
	}}
	for saverName, newSaver := range evoSavers(t) {
		for _, tc := range cases {
			t.Run(saverName+"/"+tc.name, func(t *testing.T) {
				saver := newSaver(t)
				evoPause(t, v1.compile(t, saver))
				v2 := tc.v2.compile(t, saver)
				out, err := v2.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
				require.NoError(t, err)
				require.Equal(t, tc.want, out.Log.Get())
				require.Equal(t, "kept", out.Note.Get())
				snap, err := v2.GetState(t.Context(), graph.WithThread("1"))
				require.NoError(t, err)
				require.Empty(t, snap.Next, "the run finished")
			})
		}
	}
}

// A router changed between the pause and the answer chooses with its new
// code: routers run when their node finishes.
func TestResumeWithChangedRouterChoosesAnew(t *testing.T) {
	spec := func(to string) evoSpec {
		return evoSpec{
			nodes:  []string{"ask", "a", "b"},
			edges:  [][2]string{{graph.Start, "ask"}, {"a", graph.End}, {"b", graph.End}},
			router: func(evoState) string { return to },
		}
	}
	saver := checkpoint.NewMemory()
	evoPause(t, spec("a").compile(t, saver))
	out, err := spec("b").compile(t, saver).Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"ask:yes", "b"}, out.Log.Get())
}

// A checkpoint with work pending for a node the new graph lacks cannot be
// continued: the resume fails with a ShapeMismatchError naming the node,
// and writes nothing.
func TestResumeWithPendingNodeRemovedFails(t *testing.T) {
	cases := []struct {
		name   string
		v1, v2 evoSpec
		nodes  []string
	}{{
		name: "the node paused by Interrupt",
		v1: evoSpec{
			nodes: []string{"ask", "done"},
			edges: [][2]string{{graph.Start, "ask"}, {"ask", "done"}, {"done", graph.End}},
		},
		v2: evoSpec{
			nodes: []string{"done"},
			edges: [][2]string{{graph.Start, "done"}, {"done", graph.End}},
		},
		nodes: []string{"ask"},
	}, {
		name: "the node paused before by a breakpoint",
		v1: evoSpec{
			nodes: []string{"a", "b"},
			edges: [][2]string{{graph.Start, "a"}, {"a", "b"}, {"b", graph.End}},
			opts:  []graph.CompileOption{graph.WithInterruptBefore("b")},
		},
		v2: evoSpec{
			nodes: []string{"a"},
			edges: [][2]string{{graph.Start, "a"}, {"a", graph.End}},
		},
		nodes: []string{"b"},
	}, {
		name: "the destination chosen by a task that finished in the paused step",
		v1: evoSpec{
			nodes: []string{"fan", "ask", "x", "after"},
			edges: [][2]string{{graph.Start, "fan"}, {graph.Start, "ask"}, {"fan", "after"}, {"ask", "x"}, {"after", graph.End}, {"x", graph.End}},
		},
		v2: evoSpec{
			nodes: []string{"fan", "ask", "x"},
			edges: [][2]string{{graph.Start, "fan"}, {graph.Start, "ask"}, {"fan", graph.End}, {"ask", "x"}, {"x", graph.End}},
		},
		nodes: []string{"after"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			saver := checkpoint.NewMemory()
			v1 := tc.v1.compile(t, saver)
			evoPause(t, v1)
			before, err := v1.GetState(t.Context(), graph.WithThread("1"))
			require.NoError(t, err)

			v2 := tc.v2.compile(t, saver)
			_, err = v2.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
			var sm *graph.ShapeMismatchError
			require.ErrorAs(t, err, &sm)
			require.Equal(t, tc.nodes, sm.Nodes)
			require.Empty(t, sm.Fields)
			require.Equal(t, before.CheckpointID, sm.CheckpointID)
			require.NotEqual(t, sm.Want, sm.Got)
			for _, n := range tc.nodes {
				require.Contains(t, err.Error(), n)
			}
			after, err := v1.GetState(t.Context(), graph.WithThread("1"))
			require.NoError(t, err)
			require.Equal(t, before.CheckpointID, after.CheckpointID, "the refusal wrote nothing")

			// The graph that wrote the thread still resumes it.
			_, err = v1.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
			require.NoError(t, err)
		})
	}
}

// New input on a thread whose pending work the new graph cannot run drops
// that work, as new input always does, and starts again on the stored
// state.
func TestNewInputAfterPendingNodeRemovedStartsOver(t *testing.T) {
	saver := checkpoint.NewMemory()
	evoPause(t, evoSpec{
		nodes: []string{"ask"},
		edges: [][2]string{{graph.Start, "ask"}, {"ask", graph.End}},
	}.compile(t, saver))
	v2 := evoSpec{
		nodes: []string{"done"},
		edges: [][2]string{{graph.Start, "done"}, {"done", graph.End}},
	}.compile(t, saver)
	out, err := v2.Invoke(t.Context(), evoState{}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"done"}, out.Log.Get())
	require.Equal(t, "kept", out.Note.Get())
}

// A paused node that now takes an input of its own cannot be given the
// state it was paused with.
func TestResumeWithPausedNodeNowTakingItsOwnInputFails(t *testing.T) {
	saver := checkpoint.NewMemory()
	evoPause(t, evoSpec{
		nodes: []string{"ask"},
		edges: [][2]string{{graph.Start, "ask"}, {"ask", graph.End}},
	}.compile(t, saver))
	b := graph.New[evoState]().
		AddNode("fan", evoStep("fan")).
		AddEdge(graph.Start, "fan").
		AddBranch("fan", func(ctx context.Context, s evoState) (graph.Route[evoState], error) {
			return graph.Route[evoState]{Sends: []graph.Send[evoState]{graph.SendInput[evoState]("ask", "q")}}, nil
		}, graph.WithDestinations("ask"))
	graph.AddNodeWithInput(b, "ask", func(ctx context.Context, q string) (evoState, error) { return evoState{}, nil })
	g2, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	_, err = g2.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
	var sm *graph.ShapeMismatchError
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []string{"ask"}, sm.Nodes)
}

// A Send pending for a node the new graph lacks cannot be continued.
func TestResumeWithSendToRemovedNodeFails(t *testing.T) {
	saver := checkpoint.NewMemory()
	v1 := graph.New[evoState]().
		AddNode("fan", evoStep("fan")).AddNode("work", evoStep("work")).
		AddEdge(graph.Start, "fan").
		AddBranch("fan", func(ctx context.Context, s evoState) (graph.Route[evoState], error) {
			return graph.Route[evoState]{Sends: []graph.Send[evoState]{{Node: "work", Arg: evoState{Note: state.Set("x")}}}}, nil
		}, graph.WithDestinations("work"))
	g1, err := v1.Compile(graph.WithCheckpointer(saver), graph.WithInterruptAfter("fan"))
	require.NoError(t, err)
	evoPause(t, g1)
	g2, err := graph.New[evoState]().AddNode("fan", evoStep("fan")).AddEdge(graph.Start, "fan").
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	_, err = g2.Resume(t.Context(), graph.Command[evoState]{}, graph.WithThread("1"))
	var sm *graph.ShapeMismatchError
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []string{"work"}, sm.Nodes)
}

// evoAdded is evoState with a field added and one removed.
type evoAdded struct {
	Log   state.Append[string]
	Count state.Value[int]
}

// A field added to the state starts at its zero value; the stored value
// of a field removed from it is dropped, in the state and in the pending
// writes of a task that finished in the paused step.
func TestResumeWithStateFieldsAddedAndRemoved(t *testing.T) {
	saver := checkpoint.NewMemory()
	v1 := graph.New[evoState]().
		AddNode("noter", func(ctx context.Context, s evoState) (evoState, error) {
			return evoState{Log: state.Items("noter"), Note: state.Set("pending")}, nil
		}).
		AddNode("ask", evoAsk).
		AddEdge(graph.Start, "noter").AddEdge(graph.Start, "ask").
		AddEdge("noter", graph.End).AddEdge("ask", graph.End)
	g1, err := v1.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	evoPause(t, g1)

	ask2 := func(ctx context.Context, s evoAdded) (evoAdded, error) {
		answer, err := graph.Interrupt(ctx, "ok?")
		if err != nil {
			return evoAdded{}, err
		}
		return evoAdded{Log: state.Items("ask:" + answer.(string)), Count: state.Set(s.Count.Get() + 1)}, nil
	}
	g2, err := graph.New[evoAdded]().
		AddNode("noter", func(ctx context.Context, s evoAdded) (evoAdded, error) { return evoAdded{}, nil }).
		AddNode("ask", ask2).
		AddEdge(graph.Start, "noter").AddEdge(graph.Start, "ask").
		AddEdge("noter", graph.End).AddEdge("ask", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	out, err := g2.Resume(t.Context(), graph.Command[evoAdded]{Resume: "yes"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"noter", "ask:yes"}, out.Log.Get(), "noter's saved write counts, it does not run again")
	require.Equal(t, 1, out.Count.Get())
}

// evoRetyped is evoState with Note's type changed.
type evoRetyped struct {
	Log  state.Append[string]
	Note state.Value[int]
}

// A stored value that the new graph cannot decode keeps the checkpoint
// from being continued, resumed or started again: the error names the
// field.
func TestResumeWithUndecodableFieldFails(t *testing.T) {
	saver := checkpoint.NewMemory()
	evoPause(t, evoSpec{
		nodes: []string{"ask"},
		edges: [][2]string{{graph.Start, "ask"}, {"ask", graph.End}},
	}.compile(t, saver))
	g2, err := graph.New[evoRetyped]().
		AddNode("ask", func(ctx context.Context, s evoRetyped) (evoRetyped, error) { return evoRetyped{}, nil }).
		AddEdge(graph.Start, "ask").AddEdge("ask", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	var sm *graph.ShapeMismatchError
	_, err = g2.Resume(t.Context(), graph.Command[evoRetyped]{Resume: "yes"}, graph.WithThread("1"))
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []string{"Note"}, sm.Fields)
	require.Empty(t, sm.Nodes)
	_, err = g2.Invoke(t.Context(), evoRetyped{}, graph.WithThread("1"))
	require.ErrorAs(t, err, &sm, "new input keeps the stored state, which cannot be read")
}

// A join whose sources changed keeps the sources already seen when the new
// join to the same target has them: the join still fires.
func TestResumeWithJoinSourcesAddedKeepsProgress(t *testing.T) {
	saver := checkpoint.NewMemory()
	g1, err := graph.New[evoState]().
		AddNode("a", evoStep("a")).AddNode("ask", evoAsk).AddNode("j", evoStep("j")).
		AddEdge(graph.Start, "a").AddEdge("a", "ask").
		AddJoin([]string{"a", "ask"}, "j").AddEdge("j", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	evoPause(t, g1)
	g2, err := graph.New[evoState]().
		AddNode("a", evoStep("a")).AddNode("ask", evoAsk).AddNode("c", evoStep("c")).AddNode("j", evoStep("j")).
		AddEdge(graph.Start, "a").AddEdge("a", "ask").AddEdge("ask", "c").
		AddJoin([]string{"a", "ask", "c"}, "j").AddEdge("j", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	out, err := g2.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "ask:yes", "c", "j"}, out.Log.Get())
}

// A thread paused inside a subgraph is carried on by a parent whose
// subgraph gained a node after the paused one.
func TestResumeWithChangedSubgraphFinishes(t *testing.T) {
	saver := checkpoint.NewMemory()
	parent := func(child evoSpec) *graph.Graph[evoState] {
		b := graph.New[evoState]()
		for _, n := range child.nodes {
			if n == "ask" {
				b.AddNode(n, evoAsk)
			} else {
				b.AddNode(n, evoStep(n))
			}
		}
		for _, e := range child.edges {
			b.AddEdge(e[0], e[1])
		}
		sub, err := b.Compile()
		require.NoError(t, err)
		g, err := graph.New[evoState]().
			AddCommandNode("inner", graph.Subgraph[evoState, evoState](sub, nil, nil)).
			AddNode("outer", evoStep("outer")).
			AddEdge(graph.Start, "inner").AddEdge("inner", "outer").AddEdge("outer", graph.End).
			Compile(graph.WithCheckpointer(saver))
		require.NoError(t, err)
		return g
	}
	v1 := parent(evoSpec{nodes: []string{"ask"}, edges: [][2]string{{graph.Start, "ask"}, {"ask", graph.End}}})
	evoPause(t, v1)
	v2 := parent(evoSpec{nodes: []string{"ask", "more"}, edges: [][2]string{{graph.Start, "ask"}, {"ask", "more"}, {"more", graph.End}}})
	out, err := v2.Resume(t.Context(), graph.Command[evoState]{Resume: "yes"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"ask:yes", "more", "outer"}, out.Log.Get())
}
