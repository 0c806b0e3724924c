package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// Every task of a step with several runs in an activity of its own —
// the five Send tasks of a fan-out in five — with its node's activity
// options (a task queue of its own here).
func TestEachTaskRunsInAnActivityWithItsNodesOptions(t *testing.T) {
	c := caseNamed(t, "send fan-out")
	want := runInProcess(t, c)
	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	gpu := workflow.ActivityOptions{TaskQueue: "gpu", StartToCloseTimeout: time.Minute}
	w, env := register(t, g, agtemporal.WithNodeActivityOptions("work", gpu))
	var mu sync.Mutex
	started := map[string][]string{} // activity type → task queues
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		started[info.ActivityType.Name] = append(started[info.ActivityType.Name], info.TaskQueue)
	})
	in, err := w.Input("t", c.input)
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	var st agtemporal.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	got, err := w.Values(t.Context(), st)
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	requireSameOutcome(t, want, outcome{values: string(b)})

	require.Equal(t, []string{"gpu", "gpu", "gpu", "gpu", "gpu"}, started["graph.task"], "one task activity per Send, on the node's queue")
	// Step activities: the plan of the first step, then the end of each
	// step — split's (its lone task running in it), the fan-out's, and
	// collect's (its lone task in it; nothing is next).
	require.Len(t, started["graph.step"], 4)
	require.Equal(t, 9, st.Activities)
}

// A task activity that runs again — its worker died after the node
// returned — finds the task's writes saved and does not run the node
// again; one of a step that has been ended is refused.
func TestTaskActivityRunsItsNodeOnce(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	b := graph.New[St]()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, func(ctx context.Context, s St) (St, error) {
			mu.Lock()
			runs[n]++
			mu.Unlock()
			return St{Log: state.Items(n)}, nil
		})
	}
	b.AddEdge(graph.Start, "a")
	b.AddEdge(graph.Start, "b")
	b.AddEdge("a", "c")
	b.AddEdge("b", "c")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = g.Invoke(ctx, St{}, graph.WithThread("t"), graph.WithInterruptBefore("a", "b"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	snap, err := g.GetState(ctx, graph.WithThread("t"))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
	req := agtemporal.TaskRequest{Thread: "t", RunID: "r", From: snap.CheckpointID, ID: snap.Tasks[0].ID, Node: snap.Tasks[0].Name}
	for range 2 {
		res, err := w.Task(ctx, req)
		require.NoError(t, err)
		require.Empty(t, res.Interrupts)
	}
	require.Equal(t, map[string]int{snap.Tasks[0].Name: 1}, runs)

	_, err = g.Resume(ctx, graph.Command[St]{}, graph.WithThread("t"))
	require.NoError(t, err)
	_, err = w.Task(ctx, req)
	require.ErrorContains(t, err, "has moved on")
	require.Equal(t, 1, runs[snap.Tasks[0].Name])
}

// The graph's compiled breakpoints pause the workflow where they pause
// Invoke, and a signal with no interrupt ID goes on past each.
func TestCompiledBreakpointsPauseTheWorkflowAsInProcess(t *testing.T) {
	build := func(saver checkpoint.Saver) (*graph.Graph[St], error) {
		b := graph.New[St]()
		for _, n := range []string{"a", "b", "c", "d"} {
			b.AddNode(n, appendNode(n))
		}
		b.AddEdge(graph.Start, "a")
		b.AddEdge("a", "b")
		b.AddEdge("a", "c")
		b.AddJoin([]string{"b", "c"}, "d")
		return b.Compile(graph.WithCheckpointer(saver), graph.WithInterruptBefore("b"), graph.WithInterruptAfter("c", "d"))
	}
	type pause struct {
		Before, After []string
		Log           []string
	}
	ctx := t.Context()
	g, err := build(checkpoint.NewMemory())
	require.NoError(t, err)
	var want []pause
	out, err := g.Invoke(ctx, St{}, graph.WithThread("t"))
	for range 5 {
		var intr *graph.Interrupted
		if !errors.As(err, &intr) {
			break
		}
		want = append(want, pause{intr.Before, intr.After, out.Log.Get()})
		out, err = g.Resume(ctx, graph.Command[St]{}, graph.WithThread("t"))
	}
	require.NoError(t, err)
	require.Len(t, want, 3, "in process: before b, after c, after d")

	g, err = build(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	pauses := goOnPastPauses(t, env, 4)
	s := runToEnd(t, env, w)
	var got []pause
	for _, st := range *pauses {
		at, err := w.Values(ctx, st)
		require.NoError(t, err)
		got = append(got, pause{st.Before, st.After, at.Log.Get()})
	}
	require.Equal(t, want, got)
	require.Equal(t, out.Log.Get(), s.Log.Get())
}

// A graph whose runs run one task at a time (WithMaxConcurrency(1) in its
// run defaults: tool calls that must run in call order, say) runs its task
// activities one after the other, in the step's order.
func TestTaskActivitiesKeepToTheGraphsMaxConcurrency(t *testing.T) {
	var mu sync.Mutex
	var trace []string
	b := graph.New[St]()
	b.AddNode("split", appendNode("split"))
	b.AddNode("work", func(ctx context.Context, s St) (St, error) {
		mu.Lock()
		trace = append(trace, "start "+s.Mode.Get())
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a sibling running meanwhile would interleave
		mu.Lock()
		trace = append(trace, "end "+s.Mode.Get())
		mu.Unlock()
		return St{Log: state.Items(s.Mode.Get())}, nil
	})
	b.AddEdge(graph.Start, "split")
	b.AddBranch("split", func(ctx context.Context, s St) (graph.Route[St], error) {
		var r graph.Route[St]
		for _, w := range []string{"patch", "test", "commit"} {
			r.Sends = append(r.Sends, graph.Send[St]{Node: "work", Arg: St{Mode: state.Set(w)}})
		}
		return r, nil
	}, graph.WithDestinations("work"))
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithRunDefaults(graph.WithMaxConcurrency(1)))
	require.NoError(t, err)
	env := executeOnTemporal(t, g)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"start patch", "end patch", "start test", "end test", "start commit", "end commit"}, trace)
}

// Going on past a breakpoint after a step passes one before the next
// step too, as Resume does.
func TestBreakpointAfterAStepPassesTheOneBeforeTheNext(t *testing.T) {
	b := graph.New[St]()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, appendNode(n))
	}
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "b")
	b.AddEdge("a", "c")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("a"), graph.WithInterruptBefore("b"))
	require.NoError(t, err)
	w, env := register(t, g)
	pauses := goOnPastPauses(t, env, 3)
	runToEnd(t, env, w)
	require.Len(t, *pauses, 1, "Invoke pauses once, after a")
	require.Equal(t, []string{"a"}, (*pauses)[0].After)
}

// A breakpoint compiled into a subgraph pauses its task; the run goes on
// past it when answered with no interrupt ID.
func TestSubgraphBreakpointPausesItsTask(t *testing.T) {
	sb := graph.New[St]()
	sb.AddNode("one", appendNode("s.one"))
	sb.AddNode("two", appendNode("s.two"))
	sb.AddEdge(graph.Start, "one")
	sb.AddEdge("one", "two")
	sub, err := sb.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("two"))
	require.NoError(t, err)
	b := graph.New[St]()
	b.AddNode("p", appendNode("p"))
	b.AddCommandNode("sub", graph.Subgraph[St, St](sub, nil, nil))
	b.AddEdge(graph.Start, "p")
	b.AddEdge(graph.Start, "sub")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, env := register(t, g)
	pauses := goOnPastPauses(t, env, 3)
	s := runToEnd(t, env, w)
	require.Len(t, *pauses, 1)
	require.Equal(t, []string{"sub"}, (*pauses)[0].Before)
	require.Equal(t, []string{"p", "s.one", "s.two"}, s.Log.Get())
}

// A task that fails for good ends the step at once, as in process: the
// workflow does not wait for a sibling still running.
func TestFailedTaskDoesNotWaitForItsSiblings(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var finished atomic.Bool
	b := graph.New[St]()
	b.AddNode("boom", func(ctx context.Context, s St) (St, error) { return St{}, errors.New("boom") })
	b.AddNode("slow", func(ctx context.Context, s St) (St, error) {
		select {
		case <-ctx.Done():
			return St{}, ctx.Err()
		case <-release:
		}
		finished.Store(true)
		return St{}, nil
	})
	b.AddEdge(graph.Start, "boom")
	b.AddEdge(graph.Start, "slow")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	env := executeOnTemporal(t, g)
	nodeErr, ok := agtemporal.AsNodeError(env.GetWorkflowError())
	require.True(t, ok)
	require.Equal(t, "boom", nodeErr.Node)
	require.False(t, finished.Load(), "the workflow waited for slow")
}

// A task activity given a task that is not one of the step's fails
// without a retry.
func TestTaskActivityRefusesAnUnknownTaskForGood(t *testing.T) {
	g, err := chain(2)(checkpoint.NewMemory())
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), St{}, graph.WithThread("t"), graph.WithInterruptBefore("n01"))
	require.ErrorAs(t, err, new(*graph.Interrupted))
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	_, err = w.Task(t.Context(), agtemporal.TaskRequest{Thread: "t", RunID: "r", From: snap.CheckpointID, ID: "no-such-task", Node: "n01"})
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.True(t, app.NonRetryable())
	require.ErrorContains(t, err, "no such task")
}

// goOnPastPauses answers, at each of rounds delayed callbacks, a run
// paused at a breakpoint with a signal that goes on past it, and records
// the status it was paused with.
func goOnPastPauses(t *testing.T, env *testsuite.TestWorkflowEnvironment, rounds int) *[]agtemporal.Status {
	t.Helper()
	var pauses []agtemporal.Status
	for round := 1; round <= rounds; round++ {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(agtemporal.QueryState)
			require.NoError(t, err)
			var st agtemporal.Status
			require.NoError(t, v.Get(&st))
			if st.Paused() {
				pauses = append(pauses, st)
				env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{})
			}
		}, time.Duration(round)*time.Hour)
	}
	return &pauses
}

// runToEnd runs w on an empty input in env and returns its final state.
func runToEnd(t *testing.T, env *testsuite.TestWorkflowEnvironment, w *agtemporal.Workflow[St]) St {
	t.Helper()
	in, err := w.Input("t", St{})
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	return finalState(t, env, w)
}

// finalState returns the final state of the run that ended in env.
func finalState(t *testing.T, env *testsuite.TestWorkflowEnvironment, w *agtemporal.Workflow[St]) St {
	t.Helper()
	var st agtemporal.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	s, err := w.Values(t.Context(), st)
	require.NoError(t, err)
	return s
}

// executeOnTemporal runs g's workflow on an empty input in a new test
// environment, which it returns once the run ended.
func executeOnTemporal(t *testing.T, g *graph.Graph[St]) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	w, env := register(t, g)
	in, err := w.Input("t", St{})
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	return env
}

// register returns g's workflow, registered with a new test environment.
func register(t *testing.T, g *graph.Graph[St], opts ...agtemporal.Option) (*agtemporal.Workflow[St], *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	w, err := agtemporal.New("graph", g, opts...)
	require.NoError(t, err)
	env := newEnv()
	w.Register(env)
	return w, env
}
