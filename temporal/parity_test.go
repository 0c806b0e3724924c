package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// outcome is how a run ended: its final state in JSON, or its node error.
type outcome struct {
	values  string
	nodeErr *graph.NodeError
}

// runInProcess runs c with Invoke, answering its interrupts with Resume.
func runInProcess(t *testing.T, c graphCase) outcome {
	t.Helper()
	ctx := context.Background()
	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	out, err := g.Invoke(ctx, c.input, graph.WithThread("t"))
	for range 10 {
		var intr *graph.Interrupted
		if !errors.As(err, &intr) {
			break
		}
		answers := map[string]any{}
		for _, in := range intr.Interrupts {
			answers[in.ID] = c.answers[in.Node]
		}
		out, err = g.Resume(ctx, graph.Command[St]{ResumeMap: answers}, graph.WithThread("t"))
	}
	var nodeErr *graph.NodeError
	if errors.As(err, &nodeErr) {
		return outcome{nodeErr: nodeErr}
	}
	require.NoError(t, err)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return outcome{values: string(b)}
}

// newEnv returns a quiet test workflow environment.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return s.NewTestWorkflowEnvironment()
}

// runOnTemporal runs c as a workflow of the SDK's test environment,
// answering its interrupts with signals, and returns how it ended and its
// last status.
func runOnTemporal(t *testing.T, c graphCase, opts ...agtemporal.Option) (outcome, agtemporal.Status) {
	t.Helper()
	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g, opts...)
	require.NoError(t, err)
	env := newEnv()
	w.Register(env)
	for round := 1; round <= 3; round++ {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(agtemporal.QueryState)
			require.NoError(t, err)
			var st agtemporal.Status
			require.NoError(t, v.Get(&st))
			for _, in := range st.Interrupts {
				b, err := json.Marshal(c.answers[in.Node])
				require.NoError(t, err)
				env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: in.ID, Value: b})
			}
		}, time.Duration(round)*time.Hour)
	}
	in, err := w.Input("t", c.input)
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		nodeErr, ok := agtemporal.AsNodeError(err)
		require.Truef(t, ok, "the workflow failed with %v, not a node error", err)
		return outcome{nodeErr: nodeErr}, agtemporal.Status{}
	}
	var st agtemporal.Status
	require.NoError(t, env.GetWorkflowResult(&st))
	require.True(t, st.Done)
	vals, err := w.Values(context.Background(), st)
	require.NoError(t, err)
	b, err := json.Marshal(vals)
	require.NoError(t, err)
	return outcome{values: string(b)}, st
}

func requireSameOutcome(t *testing.T, want, got outcome) {
	t.Helper()
	if want.nodeErr != nil {
		require.NotNil(t, got.nodeErr, "in process the run failed with %v", want.nodeErr)
		require.Equal(t, want.nodeErr.Node, got.nodeErr.Node)
		require.Equal(t, want.nodeErr.Attempts, got.nodeErr.Attempts)
		require.Equal(t, want.nodeErr.Err.Error(), got.nodeErr.Err.Error())
		return
	}
	require.Nil(t, got.nodeErr)
	require.JSONEq(t, want.values, got.values)
}

func TestWorkflowEndsInTheStateOfInvoke(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			want := runInProcess(t, c)
			require.Equal(t, c.fails, want.nodeErr != nil)
			for _, answer := range c.answers {
				require.Contains(t, want.values, " got "+answer, "in process, the answer did not reach its node")
			}
			got, _ := runOnTemporal(t, c)
			requireSameOutcome(t, want, got)
		})
	}
}

func TestWorkflowWithStepsAsActivitiesEndsInTheStateOfInvoke(t *testing.T) {
	for _, per := range []int{1, 5} {
		for _, c := range cases() {
			t.Run(fmt.Sprint(per, " steps/", c.name), func(t *testing.T) {
				want := runInProcess(t, c)
				got, _ := runOnTemporal(t, c, agtemporal.WithStepsPerActivity(per))
				requireSameOutcome(t, want, got)
			})
		}
	}
}
