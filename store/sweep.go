package store

import (
	"context"
	"fmt"
	"time"
)

// SweepEvery calls s.Sweep once every interval until ctx is done, then
// returns ctx's error. It passes the result of each sweep to report,
// which may be nil; a failed sweep does not stop it. This is LangGraph's
// TTL sweeper thread as a goroutine:
//
//	go store.SweepEvery(ctx, s, 5*time.Minute, func(n int, err error) {
//		if err != nil {
//			slog.Warn("store sweep", "err", err)
//		}
//	})
func SweepEvery(ctx context.Context, s Sweeper, interval time.Duration, report func(deleted int, err error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: sweep interval %v is not positive", ErrInvalidOption, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			n, err := s.Sweep(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if report != nil {
				report(n, err)
			}
		}
	}
}
