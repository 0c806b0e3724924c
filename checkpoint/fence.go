package checkpoint

import (
	"context"
	"fmt"
	"iter"
)

// Fencer is implemented by [Leaser] savers that fence writes with a lease:
// a holder that lost its thread's lease — paused past its time to live (a
// stop-the-world pause, SIGSTOP, a suspended VM) while another process took
// the thread over — can never write to the thread again, whatever it
// believes about its lease when it wakes up.
//
// Fence returns a view of the saver for the holder of lease. Its reads are
// the saver's. Each of its writes to the lease's thread — Put, PutWrites
// and, when the saver implements [ThreadDeleter], DeleteThread — checks, in
// the transaction that makes the write (not by a check before it), that
// lease is still the thread's current lease, and is refused with a
// [*FencedError] otherwise: once the thread was taken over or the lease
// released, nothing written through the view lands. A lease that expired
// but was not taken over is still current (as for [Leaser.RenewLease]).
// A write to another thread through the view is refused too. Because each
// write is checked on its own, a saver that commits several writes in one
// transaction can refuse one of them and keep the others.
//
// The view implements [ThreadDeleter] when the saver does, so
// [CopyThread] into the leased thread is fenced as well.
type Fencer interface {
	Fence(lease Lease) Saver
}

// FencedError is returned by the writes of a [Fencer]'s view whose lease is
// no longer the thread's current lease: the thread was taken over, or the
// lease released, since the lease was acquired. It matches [ErrLeaseLost]
// with [errors.Is].
type FencedError struct {
	ThreadID string
	// Fence is the fencing token of the refused write's lease.
	Fence int64
	// Holder holds the thread's lease now, "" when nobody does (the lease
	// was released); Current is its fencing token.
	Holder  string
	Current int64
}

func (e *FencedError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("checkpoint: thread %q: write refused: its lease (fence %d) was released or taken over, and nobody holds the thread now", e.ThreadID, e.Fence)
	}
	return fmt.Sprintf("checkpoint: thread %q: write refused: its lease (fence %d) was taken over by %s (fence %d)", e.ThreadID, e.Fence, e.Holder, e.Current)
}

// Is reports whether target is [ErrLeaseLost].
func (e *FencedError) Is(target error) bool { return target == ErrLeaseLost }

// FenceThreadError returns the error of a write to thread through the
// fence of lease when the two threads differ (nil when they do not): a
// Fencer's view writes to its lease's thread only. It is for [Fencer]
// implementations.
func FenceThreadError(lease Lease, thread string) error {
	if thread == lease.ThreadID {
		return nil
	}
	return fmt.Errorf("checkpoint: a write to thread %q through the lease of thread %q", thread, lease.ThreadID)
}

// fenced is the view that [Memory.Fence] returns.
type fenced struct {
	m     *Memory
	lease Lease
}

var (
	_ Fencer        = (*Memory)(nil)
	_ ThreadDeleter = fenced{}
)

// Fence implements [Fencer]. The lease check and the write are made under
// the lock of the saver's leases, so no lease changes hands between them.
func (m *Memory) Fence(lease Lease) Saver { return fenced{m, lease} }

func (f fenced) Get(ctx context.Context, ref Ref) (*Tuple, error) { return f.m.Get(ctx, ref) }

func (f fenced) List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error] {
	return f.m.List(ctx, threadID, opts)
}

func (f fenced) Put(ctx context.Context, cp *Checkpoint) error {
	return f.under(cp.ThreadID, func() error { return f.m.Put(ctx, cp) })
}

func (f fenced) PutWrites(ctx context.Context, ref Ref, writes []Write) error {
	return f.under(ref.ThreadID, func() error { return f.m.PutWrites(ctx, ref, writes) })
}

func (f fenced) DeleteThread(ctx context.Context, threadID string) error {
	return f.under(threadID, func() error { return f.m.DeleteThread(ctx, threadID) })
}

// under runs write, a write to thread, if f's lease is the thread's
// current one, holding the leases' lock while it runs.
func (f fenced) under(thread string, write func() error) error {
	if err := FenceThreadError(f.lease, thread); err != nil {
		return err
	}
	t := &f.m.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.m[thread]
	if cur.token == "" || cur.token != f.lease.Token {
		return &FencedError{ThreadID: thread, Fence: f.lease.Fence, Holder: cur.holder, Current: cur.fence}
	}
	return write()
}
