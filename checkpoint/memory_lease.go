package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"
)

var _ Leaser = (*Memory)(nil)

// leaseTable holds the leases of a [Memory] saver. Its zero value is
// empty and ready to use. It has a lock of its own, so that renewing a
// lease never waits for a large Put or List.
type leaseTable struct {
	mu sync.Mutex
	m  map[string]memLease // thread → lease
}

type memLease struct {
	// token is "" once the lease is released; the entry stays, so that
	// fence keeps growing.
	holder, token string
	fence         int64
	// expires carries a monotonic clock reading: wall clock jumps do
	// not move it.
	expires time.Time
}

// AcquireLease implements [Leaser]. Expiry is decided by this process's
// monotonic clock, the only one its holders use.
func (m *Memory) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (Lease, error) {
	if err := CheckLeaseArgs(ctx, threadID, ttl); err != nil {
		return Lease{}, fmt.Errorf("checkpoint: acquire lease: %w", err)
	}
	t := &m.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	cur := t.m[threadID]
	if cur.token != "" && now.Before(cur.expires) {
		return Lease{}, &LeaseHeldError{ThreadID: threadID, Holder: cur.holder, Expires: cur.expires}
	}
	if t.m == nil {
		t.m = make(map[string]memLease)
	}
	l := memLease{holder: holder, token: NewLeaseToken(), fence: cur.fence + 1, expires: now.Add(ttl)}
	t.m[threadID] = l
	return Lease{ThreadID: threadID, Holder: holder, Token: l.token, Fence: l.fence, Expires: l.expires}, nil
}

// RenewLease implements [Leaser].
func (m *Memory) RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	if err := CheckLeaseArgs(ctx, lease.ThreadID, ttl); err != nil {
		return Lease{}, fmt.Errorf("checkpoint: renew lease: %w", err)
	}
	t := &m.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, ok := t.m[lease.ThreadID]
	if !ok || cur.token == "" || cur.token != lease.Token {
		return Lease{}, fmt.Errorf("%w: thread %q was released or taken over since", ErrLeaseLost, lease.ThreadID)
	}
	cur.expires = time.Now().Add(ttl)
	t.m[lease.ThreadID] = cur
	lease.Expires = cur.expires
	return lease, nil
}

// ReleaseLease implements [Leaser].
func (m *Memory) ReleaseLease(ctx context.Context, lease Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := &m.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.m[lease.ThreadID]; ok && cur.token != "" && cur.token == lease.Token {
		t.m[lease.ThreadID] = memLease{fence: cur.fence}
	}
	return nil
}
