package temporal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// A second answer going on past a breakpoint — by signal or by update —
// is refused with its pause: it never lets the run pass the next
// breakpoint with nobody answering.
func TestSecondAnswerNeverPassesALaterBreakpoint(t *testing.T) {
	b := graph.New[St]()
	for _, n := range []string{"a", "b", "c"} {
		b.AddNode(n, appendNode(n))
	}
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("b", "c"))
	require.NoError(t, err)
	w, env := register(t, g)
	query := func() agtemporal.Status {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		return st
	}
	var updates []string
	env.RegisterDelayedCallback(func() {
		require.Equal(t, []string{"b"}, query().Before)
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{})
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{})
		env.UpdateWorkflow(agtemporal.UpdateResume, "second", &testsuite.TestUpdateCallback{
			OnAccept:   func() { updates = append(updates, "accepted") },
			OnReject:   func(err error) { updates = append(updates, "rejected: "+err.Error()) },
			OnComplete: func(any, error) {},
		}, agtemporal.ResumeSignal{})
	}, time.Hour)
	var second agtemporal.Status
	env.RegisterDelayedCallback(func() {
		second = query()
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{})
	}, 2*time.Hour)
	s := runToEnd(t, env, w)
	require.Equal(t, []string{"a", "b", "c"}, s.Log.Get())
	require.Equal(t, []string{"c"}, second.Before, "a leftover answer passed the breakpoint before c")
	require.Len(t, updates, 1)
	require.Contains(t, updates[0], "rejected: graph: no pending interrupt to answer")
}

// On a Temporal server, a signal and an update answering the same
// interrupt: whichever reaches the workflow first counts, and the other is
// refused — the update with an error of type ErrTypeAnswered, the signal
// dropped.
func TestOneAnswerPerInterruptBySignalOrUpdate(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		first      string // "signal" or "update"
	}{
		{name: "signal then update", first: "signal", want: "ask1 got signal"},
		{name: "update then signal", first: "update", want: "ask1 got update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := newITest(t, 1)
			g, err := askGraph("ask1", "ask2")(it.saver)
			require.NoError(t, err)
			w, err := agtemporal.New("asktest", g)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			thread := "answer-" + it.queue
			run, err := w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
			require.NoError(t, err)
			ids := pausedIDs(ctx, t, it.c, thread)

			var updateErr error
			switch tc.first {
			case "signal":
				require.NoError(t, agtemporal.Answer(ctx, it.c, thread, ids["ask1"], "signal"))
				updateErr = agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask1"], "update")
				var app *sdktemporal.ApplicationError
				require.True(t, errors.As(updateErr, &app), "the update was not refused: %v", updateErr)
				require.Equal(t, agtemporal.ErrTypeAnswered, app.Type())
			case "update":
				require.NoError(t, agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask1"], "update"))
				require.NoError(t, agtemporal.Answer(ctx, it.c, thread, ids["ask1"], "signal"))
			}
			require.NoError(t, agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask2"], "two"))
			var st agtemporal.Status
			require.NoError(t, run.Get(ctx, &st))
			s, err := w.Values(ctx, st)
			require.NoError(t, err)
			require.Equal(t, []string{"before", tc.want, "ask2 got two", "after"}, s.Log.Get())
		})
	}
}

// pausedIDs waits until the run of thread pauses and returns its
// interrupts' IDs by node.
func pausedIDs(ctx context.Context, t *testing.T, c client.Client, thread string) map[string]string {
	t.Helper()
	var st agtemporal.Status
	for !st.Paused() {
		require.NoError(t, ctx.Err(), "the run never paused")
		var err error
		st, err = agtemporal.Query(ctx, c, thread)
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	ids := map[string]string{}
	for _, in := range st.Interrupts {
		ids[in.Node] = in.ID
	}
	return ids
}
