package temporal_test

// Deploys: a graph changed while runs are open, in place (the runs carry
// on under the new graph when their checkpoints allow it) and side by side
// (each version registered under its own workflow name).

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// askReviewGraph is askGraph("ask") with a node added between ask and
// after: the next version of that graph.
func askReviewGraph(saver checkpoint.Saver) (*graph.Graph[St], error) {
	b := graph.New[St]()
	b.AddNode("before", appendNode("before"))
	b.AddNode("ask", func(ctx context.Context, s St) (St, error) {
		v, err := graph.InterruptAs[string](ctx, "approve ask?")
		if err != nil {
			return s, err
		}
		var o St
		o.Log.Append("ask got " + v)
		return o, nil
	})
	b.AddNode("review", appendNode("review"))
	b.AddNode("after", appendNode("after"))
	b.AddEdge(graph.Start, "before").AddEdge("before", "ask").AddEdge("ask", "review").
		AddEdge("review", "after").AddEdge("after", graph.End)
	return b.Compile(graph.WithCheckpointer(saver))
}

// noAskGraph is askGraph("ask") without ask: a version that cannot carry
// on a run paused in ask.
func noAskGraph(saver checkpoint.Saver) (*graph.Graph[St], error) {
	return graph.New[St]().
		AddNode("before", appendNode("before")).AddNode("after", appendNode("after")).
		AddEdge(graph.Start, "before").AddEdge("before", "after").AddEdge("after", graph.End).
		Compile(graph.WithCheckpointer(saver))
}

// pauseInProcess runs askGraph("ask") on thread t of saver until it pauses
// in ask, and returns the interrupt's ID.
func pauseInProcess(t *testing.T, saver checkpoint.Saver) string {
	t.Helper()
	g, err := askGraph("ask")(saver)
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), St{}, graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	return intr.Interrupts[0].ID
}

// A thread paused on a human by one version of a graph is carried on by a
// workflow of the next version, which added a node after the paused one.
func TestNewGraphVersionCarriesOnAPausedThread(t *testing.T) {
	saver := checkpoint.NewMemory()
	id := pauseInProcess(t, saver)
	g2, err := askReviewGraph(saver)
	require.NoError(t, err)
	w, env := register(t, g2)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: id, Value: json.RawMessage(`"yes"`)})
	}, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t", Continue: true})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"before", "ask got yes", "review", "after"}, finalState(t, env, w).Log.Get())
}

// A version without the node a thread is paused in fails the run for good
// with a graph error naming that node.
func TestNewGraphVersionWithoutThePausedNodeFailsTheRun(t *testing.T) {
	saver := checkpoint.NewMemory()
	pauseInProcess(t, saver)
	g2, err := noAskGraph(saver)
	require.NoError(t, err)
	w, env := register(t, g2)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t", Continue: true})
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, agtemporal.ErrTypeGraph, app.Type())
	require.True(t, app.NonRetryable())
	require.Contains(t, app.Error(), "ask")
}

// Before a deploy, the new version's GetState on the thread of each open
// run tells which runs it could not carry on: the check fails for the
// breaking version and passes for the compatible one.
func TestGetStateFindsTheRunsANewVersionCannotCarryOn(t *testing.T) {
	saver := checkpoint.NewMemory()
	pauseInProcess(t, saver)
	compatible, err := askReviewGraph(saver)
	require.NoError(t, err)
	_, err = compatible.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	breaking, err := noAskGraph(saver)
	require.NoError(t, err)
	_, err = breaking.GetState(t.Context(), graph.WithThread("t"))
	var sm *graph.ShapeMismatchError
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []string{"ask"}, sm.Nodes)
}

// The dev-server tests below run their workers in this process: a worker
// stopped and another started with the next version of the graph is a
// deploy.

// startWorker starts a worker on it's queue with the workflows ws; it is
// stopped when the test ends, or by the function returned.
func startWorker(t *testing.T, it *itest, ws ...*agtemporal.Workflow[St]) (stop func()) {
	t.Helper()
	wk := worker.New(it.c, it.queue, worker.Options{})
	for _, w := range ws {
		w.Register(wk)
	}
	require.NoError(t, wk.Start())
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			wk.Stop()
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitPaused polls the run on thread until it waits for an answer, and
// returns its status.
func waitPaused(ctx context.Context, t *testing.T, c client.Client, thread string) agtemporal.Status {
	t.Helper()
	for {
		st, err := agtemporal.Query(ctx, c, thread)
		if err == nil && st.Paused() {
			return st
		}
		require.NoError(t, ctx.Err(), "the run never paused")
		time.Sleep(50 * time.Millisecond)
	}
}

// A run paused on a human; its worker stopped and one with the next
// version of the graph (a node added) started: the answer finishes the run
// on the new version. The same deploy with the paused node removed fails
// the run with a graph error naming it.
func TestDeployInPlaceWhileARunIsPaused(t *testing.T) {
	for _, tc := range []struct {
		name string
		v2   func(checkpoint.Saver) (*graph.Graph[St], error)
		log  []string // the final log, nil when the run fails
	}{
		{"node added", askReviewGraph, []string{"before", "ask got yes", "review", "after"}},
		{"paused node removed", noAskGraph, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := newITest(t, 0)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			g1, err := askGraph("ask")(it.saver)
			require.NoError(t, err)
			w1, err := agtemporal.New("deploy", g1)
			require.NoError(t, err)
			stop := startWorker(t, it, w1)
			thread := "deploy-" + it.queue
			run, err := w1.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
			require.NoError(t, err)
			st := waitPaused(ctx, t, it.c, thread)
			stop()

			g2, err := tc.v2(it.saver)
			require.NoError(t, err)
			w2, err := agtemporal.New("deploy", g2)
			require.NoError(t, err)
			startWorker(t, it, w2)
			require.NoError(t, agtemporal.Answer(ctx, it.c, thread, st.Interrupts[0].ID, "yes"))
			err = run.Get(ctx, &st)
			if tc.log == nil {
				var app *sdktemporal.ApplicationError
				require.ErrorAs(t, err, &app)
				require.Equal(t, agtemporal.ErrTypeGraph, app.Type())
				require.Contains(t, app.Error(), "ask")
				return
			}
			require.NoError(t, err)
			s, err := w2.Values(ctx, st)
			require.NoError(t, err)
			require.Equal(t, tc.log, s.Log.Get())
		})
	}
}

// Two versions of a graph, each registered under its own workflow name,
// served by one worker: a run started on each, both paused, both answered
// — each finishes on the version it started with.
func TestTwoGraphVersionsServedSideBySide(t *testing.T) {
	it := newITest(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	g1, err := askGraph("ask")(it.saver)
	require.NoError(t, err)
	w1, err := agtemporal.New("review.v1", g1)
	require.NoError(t, err)
	g2, err := askReviewGraph(it.saver)
	require.NoError(t, err)
	w2, err := agtemporal.New("review.v2", g2)
	require.NoError(t, err)
	startWorker(t, it, w1, w2)

	runs := map[string]client.WorkflowRun{}
	for _, w := range []*agtemporal.Workflow[St]{w1, w2} {
		thread := w.Name() + "-" + it.queue
		runs[w.Name()], err = w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
		require.NoError(t, err)
	}
	for _, w := range []*agtemporal.Workflow[St]{w1, w2} {
		thread := w.Name() + "-" + it.queue
		st := waitPaused(ctx, t, it.c, thread)
		require.NoError(t, agtemporal.Answer(ctx, it.c, thread, st.Interrupts[0].ID, "yes"))
	}
	want := map[string][]string{
		"review.v1": {"before", "ask got yes", "after"},
		"review.v2": {"before", "ask got yes", "review", "after"},
	}
	for _, w := range []*agtemporal.Workflow[St]{w1, w2} {
		var st agtemporal.Status
		require.NoError(t, runs[w.Name()].Get(ctx, &st))
		s, err := w.Values(ctx, st)
		require.NoError(t, err)
		require.Equal(t, want[w.Name()], s.Log.Get(), w.Name())
	}
}
