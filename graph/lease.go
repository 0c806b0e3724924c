package graph

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// DefaultLeaseTTL is how long a run's thread lease lasts without renewal
// unless [WithLeaseTTL] says otherwise: the time a thread whose run died
// stays locked before it can be resumed.
const DefaultLeaseTTL = 30 * time.Second

// leaseHolder describes this process to other holders of a thread lease.
var leaseHolder = func() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown host"
	}
	return fmt.Sprintf("pid %d on %s", os.Getpid(), host)
}()

// threadLease is a thread's lease held by a run: a timer renews it every
// third of its time to live until release.
type threadLease struct {
	leaser checkpoint.Leaser
	ttl    time.Duration
	lost   atomic.Pointer[lostLease]

	mu       sync.Mutex // held while renewing, so release waits for a renewal
	lease    checkpoint.Lease
	timer    *time.Timer
	released bool
}

// acquireLease takes the thread's lease when the graph's saver can lease
// and leasing is on. It returns a nil lease otherwise.
//
// A lost lease does not cancel the run's context (a cancellable context
// would make every node run on a goroutine of its own): the run stops at
// its next checkpoint instead (see lostErr). A run that did not see its
// lease lost — paused past its time to live, it woke up after another
// process took the thread over — writes under its lease (see fenced), and
// the saver refuses its next write with a
// *checkpoint.FencedError: the run ends with it, and nothing it computed
// since becomes visible.
func (g *Graph[S]) acquireLease(ctx context.Context, saver checkpoint.Saver, cfg *runConfig) (*threadLease, error) {
	thread, runID, ttl := cfg.thread, cfg.runID, g.leaseTTL
	if cfg.leaseTTL != nil {
		ttl = max(*cfg.leaseTTL, 0)
	}
	leaser, ok := saver.(checkpoint.Leaser)
	if !ok || ttl <= 0 || thread == "" {
		return nil, nil
	}
	holder := leaseHolder
	if runID != "" {
		holder = "run " + runID + " (" + leaseHolder + ")"
	}
	lease, err := leaser.AcquireLease(ctx, thread, holder, ttl)
	if err != nil {
		var held *checkpoint.LeaseHeldError
		if errors.As(err, &held) {
			return nil, err
		}
		return nil, &SaverError{Op: opLease, Thread: thread, Err: err}
	}
	tl := &threadLease{leaser: leaser, ttl: ttl, lease: lease}
	// Under mu: renew reads tl.timer, and the race detector (rightly) sees
	// no order between this write and the timer's goroutine otherwise.
	tl.mu.Lock()
	tl.timer = time.AfterFunc(tl.ttl/3, tl.renew)
	tl.mu.Unlock()
	return tl, nil
}

// fenced returns saver as the holder of tl writes to it, and ctx
// carrying tl's lease: each write carries the lease (see
// [checkpoint.Fenced]), so that a saver that leases refuses it once
// another process took the thread over or the lease was released. A saver
// wrapped by another stays fenced as long as the wrapper passes the
// write's context on. The writes the run makes with the context it gets
// carry the lease already, so the view does not make a context for each
// of them; the run gives that context to its saver calls only, not to its
// nodes.
func (tl *threadLease) fenced(ctx context.Context, saver checkpoint.Saver) (context.Context, checkpoint.Saver) {
	tl.mu.Lock()
	lease := tl.lease
	tl.mu.Unlock()
	return checkpoint.WithLease(ctx, lease), checkpoint.Fenced(saver, lease)
}

// renew extends the lease and schedules the next renewal. A renewal that
// fails for another reason than a lost lease is tried again at the next
// period; a lost lease is reported by lostErr.
func (tl *threadLease) renew() {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.released {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tl.ttl/3)
	l, err := tl.leaser.RenewLease(ctx, tl.lease, tl.ttl)
	cancel()
	switch {
	case err == nil:
		tl.lease = l
	case errors.Is(err, checkpoint.ErrLeaseLost):
		tl.lost.Store(&lostLease{fmt.Errorf("graph: thread %q: %w", tl.lease.ThreadID, err)})
		if testHookLeaseLost != nil {
			testHookLeaseLost()
		}
		return
	}
	tl.timer.Reset(tl.ttl / 3)
}

// testHookLeaseLost, when set by a test, is called once a renewal found
// the lease lost and the run will see it.
var testHookLeaseLost func()

type lostLease struct{ err error }

// lostErr returns the error that lost the lease, nil while it is held. It
// costs one atomic load: the loop calls it before every checkpoint.
func (tl *threadLease) lostErr() error {
	if l := tl.lost.Load(); l != nil {
		return l.err
	}
	return nil
}

// release stops the renewals and gives the lease up. It reports the error
// that lost the lease, if it was lost. A lease that cannot be released
// expires after its time to live.
func (tl *threadLease) release(ctx context.Context) error {
	tl.timer.Stop()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.released = true
	if err := tl.lostErr(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(tl.ttl/3, time.Second))
	defer cancel()
	_ = tl.leaser.ReleaseLease(ctx, tl.lease)
	return nil
}
