package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/backoff"
)

func TestDelayDoublesWithEqualJitterUpToTheCap(t *testing.T) {
	tests := []struct {
		attempt      int
		initial, max time.Duration
		lo, hi       time.Duration
	}{
		{1, time.Second, time.Minute, 500 * time.Millisecond, time.Second},
		{2, time.Second, time.Minute, time.Second, 2 * time.Second},
		{4, time.Second, time.Minute, 4 * time.Second, 8 * time.Second},
		{10, time.Second, 5 * time.Second, 2500 * time.Millisecond, 5 * time.Second},
		{3, 0, time.Minute, 0, 0},
	}
	for _, tt := range tests {
		for range 50 {
			d := backoff.Delay(tt.attempt, tt.initial, tt.max)
			require.GreaterOrEqual(t, d, tt.lo, "attempt %d", tt.attempt)
			require.LessOrEqual(t, d, tt.hi, "attempt %d", tt.attempt)
		}
	}
}

func TestSleepReturnsTheContextsErrorWhenItEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, backoff.Sleep(ctx, time.Hour), context.Canceled)
	require.ErrorIs(t, backoff.Sleep(ctx, 0), context.Canceled)
	require.NoError(t, backoff.Sleep(t.Context(), time.Nanosecond))
}
