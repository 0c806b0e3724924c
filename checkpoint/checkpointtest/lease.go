package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// The lease cases run only for savers that implement [checkpoint.Leaser].
// They assert no timing thresholds: a lease with longTTL is never expected
// to expire during a case, and one with shortTTL is only expected to
// expire eventually (polled for up to expiryDeadline).
const (
	longTTL        = time.Hour
	shortTTL       = 100 * time.Millisecond
	expiryDeadline = 30 * time.Second
)

var leaseCases = []testCase{
	{
		name:        "lease-acquire",
		explanation: "AcquireLease of a thread nobody holds returns a lease naming the thread and the holder, with a token and an expiry",
		run: func(e *env) {
			l := e.acquire(e.leaser(), "t1", "alice", longTTL)
			require.Equal(e.t, "t1", l.ThreadID)
			require.Equal(e.t, "alice", l.Holder)
			require.NotEmpty(e.t, l.Token)
			require.False(e.t, l.Expires.IsZero())
		},
	},
	{
		name:        "lease-held",
		explanation: "AcquireLease of a thread whose lease is held fails, for another holder and for the same one, with an error reaching (errors.As) a *checkpoint.LeaseHeldError that names the thread, the holder and the lease's expiry",
		run: func(e *env) {
			s := e.leaser()
			l := e.acquire(s, "t1", "alice", longTTL)
			for _, holder := range []string{"bob", "alice"} {
				held := e.requireHeld(s, "t1", holder)
				require.Equal(e.t, "t1", held.ThreadID)
				require.Equal(e.t, "alice", held.Holder)
				require.True(e.t, held.Expires.Equal(l.Expires), "LeaseHeldError.Expires %v, lease expires %v", held.Expires, l.Expires)
				require.Contains(e.t, held.Error(), "alice")
			}
		},
	},
	{
		name:        "lease-threads-independent",
		explanation: "the leases of different threads are independent: holding one does not keep another from being taken or released",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", longTTL)
			b := e.acquire(s, "t2", "bob", longTTL)
			require.NotEqual(e.t, a.Token, b.Token)
			require.NoError(e.t, s.ReleaseLease(e.ctx, b))
			require.Equal(e.t, "alice", e.requireHeld(s, "t1", "carol").Holder)
			e.acquire(s, "t2", "carol", longTTL)
		},
	},
	{
		name:        "lease-release-acquire",
		explanation: "after ReleaseLease, another holder takes the thread at once, with a new token",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", longTTL)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			b := e.acquire(s, "t1", "bob", longTTL)
			require.NotEqual(e.t, a.Token, b.Token)
			require.Equal(e.t, "bob", e.requireHeld(s, "t1", "alice").Holder)
		},
	},
	{
		name:        "lease-renew-extends",
		explanation: "RenewLease of a held lease returns the same lease (thread, holder, token) with a later expiry, which the thread's LeaseHeldError then reports",
		run: func(e *env) {
			s := e.leaser()
			l := e.acquire(s, "t1", "alice", longTTL)
			r, err := s.RenewLease(e.ctx, l, 2*longTTL)
			require.NoError(e.t, err)
			require.Equal(e.t, l.ThreadID, r.ThreadID)
			require.Equal(e.t, l.Holder, r.Holder)
			require.Equal(e.t, l.Token, r.Token)
			require.True(e.t, r.Expires.After(l.Expires), "renewed lease expires %v, not after %v", r.Expires, l.Expires)
			held := e.requireHeld(s, "t1", "bob")
			require.True(e.t, held.Expires.Equal(r.Expires), "LeaseHeldError.Expires %v, renewed lease expires %v", held.Expires, r.Expires)
			// The renewed lease is the same lease: releasing it frees the
			// thread.
			require.NoError(e.t, s.ReleaseLease(e.ctx, r))
			e.acquire(s, "t1", "bob", longTTL)
		},
	},
	{
		name:        "lease-expires",
		explanation: "a lease that is not renewed expires after its time to live: another holder can then take it",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", shortTTL)
			b := e.acquireEventually(s, "t1", "bob", longTTL)
			require.NotEqual(e.t, a.Token, b.Token)
			require.Equal(e.t, "bob", e.requireHeld(s, "t1", "alice").Holder)
		},
	},
	{
		name:        "lease-renew-after-takeover",
		explanation: "RenewLease of a lease that expired and was taken by another holder fails with an error wrapping checkpoint.ErrLeaseLost; ReleaseLease of it returns nil and leaves the new holder's lease alone",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", shortTTL)
			e.acquireEventually(s, "t1", "bob", longTTL)
			_, err := s.RenewLease(e.ctx, a, longTTL)
			require.ErrorIs(e.t, err, checkpoint.ErrLeaseLost)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			require.Equal(e.t, "bob", e.requireHeld(s, "t1", "carol").Holder)
		},
	},
	{
		name:        "lease-renew-after-release",
		explanation: "RenewLease of a released lease fails with an error wrapping checkpoint.ErrLeaseLost, and does not take the thread again; releasing a released lease returns nil",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", longTTL)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			_, err := s.RenewLease(e.ctx, a, longTTL)
			require.ErrorIs(e.t, err, checkpoint.ErrLeaseLost)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			e.acquire(s, "t1", "bob", longTTL)
		},
	},
	{
		name:        "lease-race",
		explanation: "of several goroutines acquiring one free thread at once, exactly one gets the lease; the others get a LeaseHeldError naming the winner",
		run: func(e *env) {
			s := e.leaser()
			const n = 8
			leases := make([]checkpoint.Lease, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					leases[i], errs[i] = s.AcquireLease(e.ctx, "t1", fmt.Sprintf("racer-%d", i), longTTL)
				})
			}
			close(start)
			wg.Wait()
			e.requireOneWinner(leases, errs)
		},
	},
	{
		name:        "lease-kept-by-delete-thread",
		explanation: "a lease is not part of the thread's data: DeleteThread (when implemented) leaves the lease held",
		run: func(e *env) {
			s := e.leaser()
			d, ok := e.s.(checkpoint.ThreadDeleter)
			if !ok {
				e.t.Skip("saver does not implement checkpoint.ThreadDeleter")
			}
			th := e.thread("t1", "")
			th.put(nil, meta("input", -1), map[string]string{"a": `1`})
			l := e.acquire(s, "t1", "alice", longTTL)
			require.NoError(e.t, d.DeleteThread(e.ctx, "t1"))
			require.Equal(e.t, "alice", e.requireHeld(s, "t1", "bob").Holder)
			_, err := s.RenewLease(e.ctx, l, longTTL)
			require.NoError(e.t, err)
		},
	},
	{
		name:        "lease-invalid-arguments",
		explanation: "AcquireLease and RenewLease fail, without taking or changing a lease, for an empty thread ID or a time to live that is not positive",
		run: func(e *env) {
			s := e.leaser()
			for _, ttl := range []time.Duration{0, -time.Second} {
				_, err := s.AcquireLease(e.ctx, "t1", "alice", ttl)
				require.Error(e.t, err, "ttl %v", ttl)
				require.False(e.t, isHeld(err), "ttl %v: %v", ttl, err)
			}
			_, err := s.AcquireLease(e.ctx, "", "alice", longTTL)
			require.Error(e.t, err)
			require.False(e.t, isHeld(err), "%v", err)
			l := e.acquire(s, "t1", "alice", longTTL)
			_, err = s.RenewLease(e.ctx, l, 0)
			require.Error(e.t, err)
			require.True(e.t, e.requireHeld(s, "t1", "bob").Expires.Equal(l.Expires))
		},
	},
	{
		name:        "lease-context-cancelled",
		explanation: "AcquireLease, RenewLease and ReleaseLease called with a cancelled context return an error wrapping context.Canceled, and change no lease",
		run: func(e *env) {
			s := e.leaser()
			l := e.acquire(s, "t1", "alice", longTTL)
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := s.AcquireLease(ctx, "t2", "alice", longTTL)
			require.ErrorIs(e.t, err, context.Canceled, "AcquireLease")
			_, err = s.RenewLease(ctx, l, 2*longTTL)
			require.ErrorIs(e.t, err, context.Canceled, "RenewLease")
			require.ErrorIs(e.t, s.ReleaseLease(ctx, l), context.Canceled, "ReleaseLease")
			require.True(e.t, e.requireHeld(s, "t1", "bob").Expires.Equal(l.Expires))
			e.acquire(s, "t2", "bob", longTTL)
		},
	},
	{
		name:         "lease-two-instances",
		explanation:  "leases are shared by all instances on one database: a lease taken through one is refused through the other, naming its holder, and can be taken through the other once released",
		twoInstances: true,
		run: func(e *env) {
			s, s2 := e.leaser(), e.leaser2()
			a := e.acquire(s, "t1", "alice", longTTL)
			held := e.requireHeld(s2, "t1", "bob")
			require.Equal(e.t, "alice", held.Holder)
			require.True(e.t, held.Expires.Equal(a.Expires), "LeaseHeldError.Expires %v, lease expires %v", held.Expires, a.Expires)
			a, err := s.RenewLease(e.ctx, a, 2*longTTL)
			require.NoError(e.t, err)
			require.Equal(e.t, "alice", e.requireHeld(s2, "t1", "bob").Holder)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			b := e.acquire(s2, "t1", "bob", longTTL)
			require.Equal(e.t, "bob", e.requireHeld(s, "t1", "alice").Holder)
			// A lease can be renewed and released through any instance.
			b, err = s.RenewLease(e.ctx, b, longTTL)
			require.NoError(e.t, err)
			require.NoError(e.t, s.ReleaseLease(e.ctx, b))
			e.acquire(s2, "t1", "carol", longTTL)
		},
	},
	{
		name:         "lease-two-instances-expiry",
		explanation:  "a lease taken through one instance and not renewed expires for the other: it takes the thread, and the first holder's RenewLease then fails with an error wrapping checkpoint.ErrLeaseLost",
		twoInstances: true,
		run: func(e *env) {
			s, s2 := e.leaser(), e.leaser2()
			a := e.acquire(s, "t1", "alice", shortTTL)
			e.acquireEventually(s2, "t1", "bob", longTTL)
			_, err := s.RenewLease(e.ctx, a, longTTL)
			require.ErrorIs(e.t, err, checkpoint.ErrLeaseLost)
		},
	},
	{
		name:         "lease-two-instances-race",
		explanation:  "of goroutines acquiring one free thread at once through two instances, exactly one gets the lease; the others get a LeaseHeldError naming the winner",
		twoInstances: true,
		run: func(e *env) {
			instances := []checkpoint.Leaser{e.leaser(), e.leaser2()}
			const n = 8
			leases := make([]checkpoint.Lease, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					leases[i], errs[i] = instances[i%2].AcquireLease(e.ctx, "t1", fmt.Sprintf("racer-%d", i), longTTL)
				})
			}
			close(start)
			wg.Wait()
			e.requireOneWinner(leases, errs)
		},
	},
}

// leaser returns the saver as a [checkpoint.Leaser], or skips the test.
func (e *env) leaser() checkpoint.Leaser {
	l, ok := e.s.(checkpoint.Leaser)
	if !ok {
		e.t.Skip("saver does not implement checkpoint.Leaser")
	}
	return l
}

// leaser2 returns the second instance as a [checkpoint.Leaser].
func (e *env) leaser2() checkpoint.Leaser {
	l, ok := e.s2.(checkpoint.Leaser)
	require.True(e.t, ok, "the second instance, %T, does not implement checkpoint.Leaser", e.s2)
	return l
}

// acquire takes the lease of thread, which must be free.
func (e *env) acquire(s checkpoint.Leaser, thread, holder string, ttl time.Duration) checkpoint.Lease {
	e.t.Helper()
	l, err := s.AcquireLease(e.ctx, thread, holder, ttl)
	require.NoError(e.t, err, "AcquireLease(%q, %q)", thread, holder)
	return l
}

// requireHeld tries to take the lease of thread for holder and returns
// the LeaseHeldError it must fail with.
func (e *env) requireHeld(s checkpoint.Leaser, thread, holder string) *checkpoint.LeaseHeldError {
	e.t.Helper()
	l, err := s.AcquireLease(e.ctx, thread, holder, longTTL)
	held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
	require.True(e.t, ok, "AcquireLease(%q, %q) of a held lease: got lease %+v, error %v; want a *checkpoint.LeaseHeldError", thread, holder, l, err)
	return held
}

// acquireEventually polls until it takes the lease of thread, which may be
// held until its lease expires.
func (e *env) acquireEventually(s checkpoint.Leaser, thread, holder string, ttl time.Duration) checkpoint.Lease {
	e.t.Helper()
	deadline := time.Now().Add(expiryDeadline)
	for {
		l, err := s.AcquireLease(e.ctx, thread, holder, ttl)
		if err == nil {
			return l
		}
		require.True(e.t, isHeld(err), "AcquireLease(%q, %q): %v", thread, holder, err)
		require.True(e.t, time.Now().Before(deadline), "the lease of %q did not expire within %v: %v", thread, expiryDeadline, err)
		time.Sleep(10 * time.Millisecond)
	}
}

// requireOneWinner checks the outcome of racing acquisitions of one thread:
// exactly one lease, and LeaseHeldErrors naming its holder.
func (e *env) requireOneWinner(leases []checkpoint.Lease, errs []error) {
	e.t.Helper()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				e.t.Fatalf("two leases of one thread: %+v and %+v", leases[winner], leases[i])
			}
			winner = i
		}
	}
	require.NotEqual(e.t, -1, winner, "nobody got the lease: %v", errs)
	for i, err := range errs {
		if i == winner {
			continue
		}
		held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		require.True(e.t, ok, "racer %d: %v; want a *checkpoint.LeaseHeldError", i, err)
		require.Equal(e.t, leases[winner].Holder, held.Holder, "racer %d", i)
	}
}

func isHeld(err error) bool {
	_, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
	return ok
}
