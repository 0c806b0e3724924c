package temporal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/agentgraph/agentgraph/checkpoint"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// A step activity that finds the thread's lease held fails with a
// retryable error of type ErrTypeLeaseHeld whose next retry is when the
// lease expires.
func TestStepRetriesWhenTheHeldLeaseExpires(t *testing.T) {
	saver := checkpoint.NewMemory()
	g, err := chain(2)(saver)
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)
	ctx := t.Context()
	lease, err := saver.AcquireLease(ctx, "t", "an attempt on a dead worker", 20*time.Second)
	require.NoError(t, err)
	_, err = w.Step(ctx, agtemporal.StepRequest{Thread: "t", RunID: "run", Start: true, Limit: 1})
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, agtemporal.ErrTypeLeaseHeld, app.Type())
	require.False(t, app.NonRetryable())
	// Set before now, to the expiry and a margin: no earlier than the
	// lease's expiry, and no later than its time to live.
	require.Greater(t, app.NextRetryDelay(), time.Until(lease.Expires))
	require.LessOrEqual(t, app.NextRetryDelay(), 20*time.Second+time.Second)
	var held *checkpoint.LeaseHeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "an attempt on a dead worker", held.Holder)
}
