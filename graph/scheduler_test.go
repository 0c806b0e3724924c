package graph

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

func TestSchedulerRunsEveryJobAndReturnsNil(t *testing.T) {
	for _, n := range []int{1, 2, 50} {
		s := newScheduler(t.Context())
		var ran atomic.Int64
		for range n {
			s.Go(func(context.Context) error { ran.Add(1); return nil })
		}
		require.NoError(t, s.Wait())
		require.EqualValues(t, n, ran.Load())
	}
}

func TestSchedulerStartsJobsInTheOrderOfGo(t *testing.T) {
	s := newScheduler(t.Context())
	s.SetLimit(1)
	var order []int
	for i := range 10 {
		s.Go(func(context.Context) error { order = append(order, i); return nil })
	}
	require.NoError(t, s.Wait())
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order)
}

func TestSchedulerFirstErrorCancelsTheOthersWithItAsCause(t *testing.T) {
	boom := errors.New("boom")
	s := newScheduler(t.Context())
	started := make(chan struct{})
	var cause error
	s.Go(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	s.Go(func(context.Context) error {
		<-started
		return boom
	})
	require.ErrorIs(t, s.Wait(), boom)
	require.ErrorIs(t, cause, boom)
}

func TestSchedulerStartsNoJobAfterAFailure(t *testing.T) {
	s := newScheduler(t.Context())
	s.SetLimit(1)
	var later atomic.Bool
	s.Go(func(context.Context) error { return errors.New("first") })
	s.Go(func(context.Context) error { later.Store(true); return nil })
	require.EqualError(t, s.Wait(), "first")
	require.False(t, later.Load())
}

func TestSchedulerCancelledBeforeItStartsReportsTheContextsError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := newScheduler(ctx)
	var ran atomic.Bool
	s.Go(func(context.Context) error { ran.Store(true); return nil })
	require.ErrorIs(t, s.Wait(), context.Canceled)
	require.False(t, ran.Load())
}

func TestSchedulerHoldsToItsLimit(t *testing.T) {
	const limit = 3
	s := newScheduler(t.Context())
	s.SetLimit(limit)
	var running, most atomic.Int64
	var mu sync.Mutex
	block := make(chan struct{})
	for range 12 {
		s.Go(func(context.Context) error {
			n := running.Add(1)
			mu.Lock()
			most.Store(max(most.Load(), n))
			mu.Unlock()
			<-block // blocked workers make the supervisor add goroutines
			running.Add(-1)
			return nil
		})
	}
	go func() {
		for most.Load() < limit {
			runtime.Gosched()
		}
		close(block)
	}()
	require.NoError(t, s.Wait())
	require.EqualValues(t, limit, most.Load())
}

func TestSchedulerRunsBlockedJobsConcurrently(t *testing.T) {
	// Every job waits for all the others to have started: only a
	// goroutine per job finishes it.
	const n = 8
	s := newScheduler(t.Context())
	var wg sync.WaitGroup
	wg.Add(n)
	for range n {
		s.Go(func(context.Context) error {
			wg.Done()
			wg.Wait()
			return nil
		})
	}
	require.NoError(t, s.Wait())
}

// A scheduler parked after its Wait and reused (as a loop does from one
// concurrent step to the next) runs its new jobs as a new one would: its
// supervisor, timer included, works again (blocked jobs each get a
// goroutine), a failure of one round does not carry into the next, every
// round's context is a new one, and a context kept from an earlier round
// stays cancelled.
func TestSchedulerReusedRunsEachRoundAsANewOne(t *testing.T) {
	const n = 8
	s := newScheduler(t.Context())
	var kept []context.Context
	for round := range 50 {
		if round > 0 {
			s.park()
			s.reuse(t.Context())
		}
		var jobCtx context.Context
		if round%5 == 4 {
			s.Go(func(ctx context.Context) error { jobCtx = ctx; return errors.New("round " + strconv.Itoa(round)) })
			require.EqualError(t, s.Wait(), "round "+strconv.Itoa(round))
		} else {
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				s.Go(func(ctx context.Context) error {
					if i == 0 {
						jobCtx = ctx
					}
					wg.Done()
					wg.Wait() // only a goroutine per job finishes the round
					return nil
				})
			}
			require.NoError(t, s.Wait(), "round %d", round)
		}
		for _, k := range kept {
			require.NotSame(t, k, jobCtx, "round %d shares an earlier round's context", round)
			require.Error(t, k.Err(), "a kept context stays cancelled")
		}
		kept = append(kept, jobCtx)
	}
}

func TestSchedulerJobCallingGoexitFailsTheOthers(t *testing.T) {
	s := newScheduler(t.Context())
	s.SetLimit(2)
	var cause error
	release := make(chan struct{})
	s.Go(func(ctx context.Context) error {
		close(release)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	})
	s.Go(func(context.Context) error {
		<-release
		runtime.Goexit()
		return nil
	})
	require.ErrorIs(t, s.Wait(), errSchedulerGoexit)
	require.ErrorIs(t, cause, errSchedulerGoexit)
}

// BenchmarkScheduler measures a step's worth of jobs on the scheduler and
// on errgroup: trivial jobs (where the scheduler's workers avoid a
// goroutine per job) and jobs that block a little (where both need one).
func BenchmarkScheduler(b *testing.B) {
	for _, jobs := range []int{2, 50, 1000} {
		trivial := func(context.Context) error { return nil }
		b.Run("scheduler/trivial/"+strconv.Itoa(jobs), func(b *testing.B) {
			for b.Loop() {
				s := newScheduler(context.Background())
				for range jobs {
					s.Go(trivial)
				}
				_ = s.Wait()
			}
		})
		b.Run("errgroup/trivial/"+strconv.Itoa(jobs), func(b *testing.B) {
			for b.Loop() {
				g, ctx := errgroup.WithContext(context.Background())
				for range jobs {
					g.Go(func() error { return trivial(ctx) })
				}
				_ = g.Wait()
			}
		})
	}
}
