// Package backoff computes retry delays and waits them out, for the
// packages that retry calls (llm's provider calls, agent/middleware's
// model and tool calls).
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay returns the wait before attempt+1 after attempt (from 1) failed:
// exponential from initial, capped at maxDelay (no cap when it is 0),
// with "equal jitter" — half fixed, half random — so that concurrent
// callers spread out. It is 0 when initial is not positive.
func Delay(attempt int, initial, maxDelay time.Duration) time.Duration {
	if initial <= 0 {
		return 0
	}
	d := initial
	for i := 1; i < attempt && (maxDelay <= 0 || d < maxDelay); i++ {
		d *= 2
	}
	if maxDelay > 0 && d > maxDelay {
		d = maxDelay
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Sleep waits for d or until ctx is done, whichever comes first; it
// returns ctx's error in the second case (also for d ≤ 0 with ctx done).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
