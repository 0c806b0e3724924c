package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type taskState struct {
	Log   state.Append[string]
	Words state.Value[[]string]
	Word  state.Value[string]
}

// taskGraph is a → {b, c} → d, then one "measure" task per word Sent by d.
// runs counts each node's runs; fail, when set, makes a node fail.
func taskGraph(t *testing.T, saver checkpoint.Saver, runs *sync.Map, fail func(node string) error) *graph.Graph[taskState] {
	t.Helper()
	b := graph.New[taskState]()
	node := func(name string) graph.NodeFunc[taskState] {
		return func(ctx context.Context, s taskState) (taskState, error) {
			n, _ := runs.LoadOrStore(name, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			if fail != nil {
				if err := fail(name); err != nil {
					return taskState{}, err
				}
			}
			if name == "measure" {
				return taskState{Log: state.Items("measure:" + s.Word.Get())}, nil
			}
			return taskState{Log: state.Items(name)}, nil
		}
	}
	for _, n := range []string{"a", "b", "c", "d", "measure"} {
		b.AddNode(n, node(n))
	}
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "b")
	b.AddEdge("a", "c")
	b.AddJoin([]string{"b", "c"}, "d")
	b.AddBranch("d", func(ctx context.Context, s taskState) (graph.Route[taskState], error) {
		var r graph.Route[taskState]
		for _, w := range s.Words.Get() {
			r.Sends = append(r.Sends, graph.Send[taskState]{Node: "measure", Arg: taskState{Word: state.Set(w)}})
		}
		return r, nil
	}, graph.WithDestinations("measure"))
	b.AddEdge("measure", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func taskRuns(runs *sync.Map) map[string]int32 {
	out := map[string]int32{}
	runs.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int32).Load()
		return true
	})
	return out
}

// pendingTasks returns the IDs of the thread's next tasks that have no
// saved writes.
func pendingTasks(t *testing.T, g *graph.Graph[taskState], thread string) []string {
	t.Helper()
	snap, err := g.GetState(t.Context(), graph.WithThread(thread))
	require.NoError(t, err)
	var ids []string
	for _, tk := range snap.Tasks {
		if !tk.Done {
			ids = append(ids, tk.ID)
		}
	}
	return ids
}

// completeStep ends the thread's open step and stops before the next.
func completeStep(t *testing.T, g *graph.Graph[taskState], thread string) (done bool) {
	t.Helper()
	_, err := g.Resume(t.Context(), graph.Command[taskState]{}, graph.WithThread(thread), graph.WithInterruptBefore("*"))
	if err == nil {
		return true
	}
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.NotEmpty(t, intr.Before)
	return false
}

// A run driven task by task — every task of every step in its own
// WithTasks run, each step then completed by a Resume — ends in the state
// Invoke gives, with every node run once.
func TestWithTasksRunsEachTaskApartToTheStateInvokeGives(t *testing.T) {
	input := taskState{Words: state.Set([]string{"go", "graph", "agent"})}
	var inRuns sync.Map
	want, err := taskGraph(t, checkpoint.NewMemory(), &inRuns, nil).Invoke(t.Context(), input, graph.WithThread("t"))
	require.NoError(t, err)

	var runs sync.Map
	g := taskGraph(t, checkpoint.NewMemory(), &runs, nil)
	_, err = g.Invoke(t.Context(), input, graph.WithThread("t"), graph.WithInterruptBefore("*"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	require.Empty(t, taskRuns(&runs), "stopping before the first step runs no node")
	for steps := 0; ; steps++ {
		require.Less(t, steps, 10)
		ids := pendingTasks(t, g, "t")
		for i, id := range ids {
			_, err := g.Resume(t.Context(), graph.Command[taskState]{}, graph.WithThread("t"), graph.WithTasks(id))
			require.NoError(t, err)
			require.Len(t, pendingTasks(t, g, "t"), len(ids)-i-1, "a WithTasks run runs only its task and ends no step")
		}
		if completeStep(t, g, "t") {
			break
		}
	}
	got, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, want.Log.Get(), got.Values.Log.Get())
	require.Empty(t, got.Next)
	require.Equal(t, taskRuns(&inRuns), taskRuns(&runs))
	require.Equal(t, map[string]int32{"a": 1, "b": 1, "c": 1, "d": 1, "measure": 3}, taskRuns(&runs))
}

// Several WithTasks runs of one step may run at once (they take no thread
// lease), even two of the same task; the step merges its writes once.
func TestWithTasksRunsOfOneStepRunAtOnce(t *testing.T) {
	var runs sync.Map
	g := taskGraph(t, checkpoint.NewMemory(), &runs, nil)
	_, err := g.Invoke(t.Context(), taskState{}, graph.WithThread("t"), graph.WithInterruptBefore("b", "c"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	ids := pendingTasks(t, g, "t")
	require.Len(t, ids, 2)
	ids = append(ids, ids...)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, errs[i] = g.Resume(context.Background(), graph.Command[taskState]{}, graph.WithThread("t"), graph.WithTasks(id))
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, pendingTasks(t, g, "t"))
	before := taskRuns(&runs)
	require.True(t, completeStep(t, g, "t") == false)
	require.Equal(t, before, taskRuns(&runs), "completing the step runs none of its tasks again")
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, snap.Values.Log.Get())
}

// A task that interrupts saves its interrupt; answered in a WithTasks run
// of its own, it finishes, and the step completes with its answer.
func TestWithTasksInterruptIsAnsweredByTask(t *testing.T) {
	b := graph.New[taskState]()
	b.AddNode("ask", func(ctx context.Context, s taskState) (taskState, error) {
		v, err := graph.Interrupt(ctx, "ok?")
		if err != nil {
			return s, err
		}
		return taskState{Log: state.Items(fmt.Sprint("answer:", v))}, nil
	})
	b.AddNode("other", func(ctx context.Context, s taskState) (taskState, error) {
		return taskState{Log: state.Items("other")}, nil
	})
	b.AddEdge(graph.Start, "ask")
	b.AddEdge(graph.Start, "other")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx, thread := t.Context(), graph.WithThread("t")
	_, err = g.Invoke(ctx, taskState{}, thread, graph.WithInterruptBefore("*"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	snap, err := g.GetState(ctx, thread)
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
	askID := snap.Tasks[slices.IndexFunc(snap.Tasks, func(ti graph.TaskInfo) bool { return ti.Name == "ask" })].ID

	_, err = g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(askID))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Len(t, intr.Interrupts, 1)
	require.Equal(t, "ok?", intr.Interrupts[0].Value)
	snap, err = g.GetState(ctx, thread)
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the interrupt is saved, pending")

	_, err = g.Resume(ctx, graph.Command[taskState]{ResumeMap: map[string]any{intr.Interrupts[0].ID: "yes"}}, thread, graph.WithTasks(askID))
	require.NoError(t, err)
	for _, id := range pendingTasks(t, g, "t") {
		_, err = g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(id))
		require.NoError(t, err)
	}
	out, err := g.Resume(ctx, graph.Command[taskState]{}, thread)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"answer:yes", "other"}, out.Log.Get())
}

// A task that fails returns its NodeError and leaves the step open; once
// the cause is gone, the task runs again and the step completes.
func TestWithTasksFailedTaskLeavesTheStepOpen(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	var runs sync.Map
	g := taskGraph(t, checkpoint.NewMemory(), &runs, func(node string) error {
		if node == "c" && broken.Load() {
			return errors.New("service down")
		}
		return nil
	})
	ctx, thread := t.Context(), graph.WithThread("t")
	_, err := g.Invoke(ctx, taskState{}, thread, graph.WithInterruptBefore("b", "c"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	snap, err := g.GetState(ctx, thread)
	require.NoError(t, err)
	cID := snap.Tasks[slices.IndexFunc(snap.Tasks, func(ti graph.TaskInfo) bool { return ti.Name == "c" })].ID

	_, err = g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(cID))
	var nerr *graph.NodeError
	require.ErrorAs(t, err, &nerr)
	require.Equal(t, "c", nerr.Node)
	snap, err = g.GetState(ctx, thread)
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
	for _, tk := range snap.Tasks {
		require.False(t, tk.Done)
		if tk.Name == "c" {
			require.Contains(t, tk.Error, "service down")
		}
	}

	broken.Store(false)
	_, err = g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(cID))
	require.NoError(t, err)
	out, err := g.Resume(ctx, graph.Command[taskState]{}, thread)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "d"}, out.Log.Get())
	require.Equal(t, int32(2), taskRuns(&runs)["c"])
	require.Equal(t, int32(1), taskRuns(&runs)["b"])
}

// IDs of a step that has been completed since name no task: the run
// refuses them instead of running a task twice.
func TestWithTasksRefusesATaskOfACompletedStep(t *testing.T) {
	var runs sync.Map
	g := taskGraph(t, checkpoint.NewMemory(), &runs, nil)
	ctx, thread := t.Context(), graph.WithThread("t")
	_, err := g.Invoke(ctx, taskState{}, thread, graph.WithInterruptBefore("b", "c"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	stale := pendingTasks(t, g, "t")
	_, err = g.Resume(ctx, graph.Command[taskState]{}, thread)
	require.NoError(t, err)
	before := taskRuns(&runs)
	_, err = g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(stale[0]))
	require.ErrorIs(t, err, graph.ErrUnknownTask)
	require.ErrorContains(t, err, stale[0])
	require.Equal(t, before, taskRuns(&runs))
}

// WithTasks is refused where it could not leave the step open.
func TestWithTasksRefusesRunsThatWouldEndTheStep(t *testing.T) {
	var runs sync.Map
	g := taskGraph(t, checkpoint.NewMemory(), &runs, nil)
	ctx, thread := t.Context(), graph.WithThread("t")
	_, err := g.Invoke(ctx, taskState{}, thread, graph.WithInterruptBefore("b"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	snap, err := g.GetState(ctx, thread)
	require.NoError(t, err)
	id := snap.Tasks[0].ID

	b := graph.New[taskState]()
	b.AddNode("a", func(ctx context.Context, s taskState) (taskState, error) { return s, nil })
	b.AddEdge(graph.Start, "a")
	noSaver, err := b.Compile()
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"Invoke", func() error {
			_, err := g.Invoke(ctx, taskState{}, thread, graph.WithTasks(id))
			return err
		}, "use Resume"},
		{"an update", func() error {
			_, err := g.Resume(ctx, graph.Command[taskState]{Update: taskState{Log: state.Items("x")}}, thread, graph.WithTasks(id))
			return err
		}, "without Update"},
		{"a goto", func() error {
			_, err := g.Resume(ctx, graph.Command[taskState]{Goto: []string{"d"}}, thread, graph.WithTasks(id))
			return err
		}, "without Update"},
		{"a checkpoint ID", func() error {
			_, err := g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks(id), graph.WithCheckpointID(snap.CheckpointID))
			return err
		}, "would fork"},
		{"no ID", func() error {
			_, err := g.Resume(ctx, graph.Command[taskState]{}, thread, graph.WithTasks())
			return err
		}, "names no task"},
		{"no checkpointer", func() error {
			_, err := noSaver.Resume(ctx, graph.Command[taskState]{}, graph.WithTasks(id))
			return err
		}, "checkpointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.run(), tc.want)
		})
	}
	require.Equal(t, map[string]int32{"a": 1}, taskRuns(&runs), "no refused run ran a task")
}

// Breakpoints lists the compiled breakpoints, "*" expanded.
func TestBreakpointsListsTheCompiledBreakpoints(t *testing.T) {
	for _, tc := range []struct {
		name          string
		opts          []graph.CompileOption
		before, after []string
	}{
		{"none", nil, nil, nil},
		{"named", []graph.CompileOption{graph.WithInterruptBefore("c", "b"), graph.WithInterruptAfter("d")}, []string{"b", "c"}, []string{"d"}},
		{"every node", []graph.CompileOption{graph.WithInterruptAfter("*")}, nil, []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := graph.New[taskState]()
			for _, n := range []string{"a", "b", "c", "d"} {
				b.AddNode(n, func(ctx context.Context, s taskState) (taskState, error) { return s, nil })
			}
			b.AddEdge(graph.Start, "a")
			b.AddEdge("a", "b")
			b.AddEdge("b", "c")
			b.AddEdge("c", "d")
			g, err := b.Compile(append(tc.opts, graph.WithCheckpointer(checkpoint.NewMemory()))...)
			require.NoError(t, err)
			before, after := g.Breakpoints()
			require.Equal(t, tc.before, before)
			require.Equal(t, tc.after, after)
		})
	}
}

// MaxConcurrency reports the bound given with the run defaults.
func TestMaxConcurrencyReportsTheRunDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []graph.CompileOption
		want int
	}{
		{"none", nil, 0},
		{"one", []graph.CompileOption{graph.WithRunDefaults(graph.WithMaxConcurrency(1))}, 1},
		{"the last given", []graph.CompileOption{graph.WithRunDefaults(graph.WithMaxConcurrency(4), graph.WithMaxConcurrency(2))}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := graph.New[taskState]()
			b.AddNode("a", func(ctx context.Context, s taskState) (taskState, error) { return s, nil })
			b.AddEdge(graph.Start, "a")
			g, err := b.Compile(tc.opts...)
			require.NoError(t, err)
			require.Equal(t, tc.want, g.MaxConcurrency())
		})
	}
}
