package graph

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// errSchedulerGoexit is the cause a scheduler's context is cancelled with
// when a job called runtime.Goexit instead of returning.
var errSchedulerGoexit = errors.New("graph: a job called runtime.Goexit")

// scheduler runs the tasks of a concurrent step. Its face is errgroup's —
// Go adds a job, Wait runs them all and returns the first error, the
// first error cancels the context the jobs get (with that error as its
// cause), SetLimit bounds how many run at once — and so it can be
// measured against errgroup (BenchmarkScheduler). Its inside is not: jobs
// start in the order they were added, claimed by index by workers, and
// the first worker is the goroutine calling Wait. A supervisor (a runtime
// timer, not a goroutine) adds workers up to GOMAXPROCS when the jobs take
// longer than spawnDelay, and gives every waiting job a goroutine of its
// own when no job was claimed during a whole spawnDelay (the workers are
// blocked, on I/O or on each other). A step of trivial tasks so runs
// without a goroutine per task, a CPU-bound one on every core, and every
// task of a blocking step still runs concurrently with the others.
//
// A scheduler runs once: Go may not be called after Wait.
type scheduler struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	limit  int64
	jobs   []func(context.Context) error
	// n jobs run as do(ctx, i), i in [0, n): the jobs of Go, or those of
	// Each.
	n  int64
	do func(ctx context.Context, i int) error

	next    atomic.Int64 // the next job to claim
	workers atomic.Int64
	wg      sync.WaitGroup
	timer   atomic.Pointer[time.Timer]
	errOnce sync.Once
	err     error

	// The supervisor's settings (see supervise): how many jobs may run
	// at once, GOMAXPROCS, and the jobs claimed at its last tick.
	width, procs int64
	seen         atomic.Int64
	// tm is the supervisor's timer, made by the first Wait that needs
	// one and re-armed by the Waits of a reused scheduler (see reuse) in
	// the same run (dropped when the run ends: see endRun).
	tm *time.Timer
}

// newScheduler returns a scheduler whose jobs get a context derived from
// ctx, cancelled when a job fails and when Wait returns.
func newScheduler(ctx context.Context) *scheduler {
	ctx, cancel := context.WithCancelCause(ctx)
	return &scheduler{ctx: ctx, cancel: cancel}
}

// park empties s, whose Wait returned, to be kept for reuse: it keeps
// only its timer and its buffer of jobs, so that a kept scheduler holds
// on to no context, job or task. Wait returned only once every worker and
// every tick of the supervisor was done (each holds a place in wg), so
// nothing else uses s.
func (s *scheduler) park() {
	tm, jobs := s.tm, s.jobs[:0]
	clear(s.jobs[:cap(s.jobs)])
	*s = scheduler{tm: tm, jobs: jobs}
}

// endRun drops the timer of a parked s when the run that used it ends:
// the scheduler's next run may be in another testing/synctest bubble, or
// out of one, and the runtime ends the program at a timer made in a
// bubble used outside it. The steps of one run share the timer.
func (s *scheduler) endRun() { s.tm = nil }

// reuse readies a parked s for a new set of jobs whose context derives
// from ctx, as newScheduler would. The context is always a new one: the
// jobs of the previous Wait may have kept theirs, cancelled for good.
func (s *scheduler) reuse(ctx context.Context) {
	s.ctx, s.cancel = context.WithCancelCause(ctx)
}

// SetLimit bounds the number of jobs running at once; n <= 0 means no
// bound.
func (s *scheduler) SetLimit(n int) { s.limit = int64(n) }

// Go adds a job. It runs when Wait is called, in the order of Go.
func (s *scheduler) Go(job func(ctx context.Context) error) { s.jobs = append(s.jobs, job) }

// Each adds n jobs, do(ctx, 0) to do(ctx, n-1), at the cost of one
// function however many they are (the tasks of a step). A scheduler runs
// the jobs of Go or those of Each, not both.
func (s *scheduler) Each(n int, do func(ctx context.Context, i int) error) {
	s.n, s.do = int64(n), do
}

// Wait runs the jobs and returns the first error one returned (a job
// unwound by runtime.Goexit counts as failed). Jobs not yet started when
// one fails do not start. A job calling runtime.Goexit on the calling
// goroutine ends it, after the other workers finished.
func (s *scheduler) Wait() error {
	defer s.cancel(context.Canceled)
	if s.do == nil {
		s.n, s.do = int64(len(s.jobs)), func(ctx context.Context, i int) error { return s.jobs[i](ctx) }
	}
	n := s.n
	limit := n
	if s.limit > 0 && s.limit < limit {
		limit = s.limit
	}
	if limit > 1 {
		s.supervise(n, limit)
	}
	s.workers.Add(1) // the calling goroutine
	returned := false
	defer func() {
		if !returned {
			// A job called runtime.Goexit on this goroutine, which ends:
			// the other workers finish first, so that none runs on while
			// the caller unwinds.
			s.wg.Wait()
		}
	}()
	s.work(n)
	returned = true
	s.wg.Wait()
	return s.err
}

// fail records the first error and cancels the jobs' context with it.
func (s *scheduler) fail(err error) {
	s.errOnce.Do(func() {
		s.err = err
		s.cancel(err)
	})
}

// work claims and runs jobs until none is left or one failed.
func (s *scheduler) work(n int64) {
	running := false
	defer func() {
		if running {
			s.fail(errSchedulerGoexit) // unwound by runtime.Goexit
		}
	}()
	for {
		i := s.next.Add(1) - 1
		if i >= n {
			return
		}
		if i == n-1 {
			s.claimedAll()
		}
		if s.ctx.Err() != nil {
			s.fail(context.Cause(s.ctx)) // the caller's, unless a job failed first
			return
		}
		running = true
		err := s.do(s.ctx, int(i))
		running = false
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// spawn starts k more workers.
func (s *scheduler) spawn(n, k int64) {
	for range k {
		s.workers.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.work(n)
		}()
	}
}

// claimedAll stops the supervisor once no job waits; its timer holds a
// place in wg until it has fired or been stopped.
func (s *scheduler) claimedAll() {
	if t := s.timer.Load(); t != nil && t.Stop() {
		s.wg.Done()
	}
}

// supervise arms the supervisor: every spawnDelay while jobs wait, if none
// was claimed during the whole period, every waiting job gets a goroutine;
// otherwise the jobs take time, and workers are added up to GOMAXPROCS.
func (s *scheduler) supervise(n, limit int64) {
	s.procs, s.width = int64(runtime.GOMAXPROCS(0)), limit
	s.seen.Store(-1)
	s.wg.Add(1)
	t := s.tm
	if t == nil {
		t = time.AfterFunc(time.Hour, s.tick) // armed once published
		s.tm = t
	}
	s.timer.Store(t)
	t.Reset(spawnDelay)
}

// tick is the supervisor's timer function (see supervise). It holds a
// place of its own in wg until it returns: once it re-armed the timer,
// the timer's place may be given back (by claimedAll) while it still
// reads s, and a Wait returning then would let s and its timer be reused
// under it.
func (s *scheduler) tick() {
	s.wg.Add(1) // the timer's place is still held: wg is not zero
	defer s.wg.Done()
	n, limit := s.n, s.width
	claimed := min(s.next.Load(), n)
	if claimed == n || s.ctx.Err() != nil {
		s.wg.Done()
		return
	}
	t := s.timer.Load()
	if claimed == s.seen.Load() || t == nil {
		s.spawn(n, min(n-claimed, limit-s.workers.Load()))
		s.wg.Done()
		return
	}
	s.seen.Store(claimed)
	if w, most := s.workers.Load(), min(s.procs, limit); w < most {
		s.spawn(n, most-w)
	}
	t.Reset(spawnDelay)
	// claimedAll may have missed the timer while this ran.
	if s.next.Load() >= n && t.Stop() {
		s.wg.Done()
	}
}

// spawnDelay is how long a step's tasks may wait for a worker before
// workers are added (see scheduler).
const spawnDelay = 100 * time.Microsecond
