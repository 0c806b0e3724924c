package checkpoint

import (
	"context"
	"fmt"
	"iter"
)

// Fencing: a holder that lost its thread's lease — paused past its time to
// live (a stop-the-world pause, SIGSTOP, a suspended VM) while another
// process took the thread over — must never write to the thread again,
// whatever it believes about its lease when it wakes up.
//
// A write made under a lease carries it in its context ([WithLease]). A
// [Leaser] saver checks, in the transaction that makes the write (not by a
// check before it), that the lease of the context is still the current
// lease of the written thread, and refuses the write with a [*FencedError]
// otherwise: once the thread was taken over or the lease released, nothing
// written under the old lease lands. A lease that expired but was not taken
// over is still current (as for [Leaser.RenewLease]). Put, PutWrites and
// DeleteThread are fenced; a write to another thread than the lease's is
// not. Each write is checked on its own, so a saver that commits several
// writes in one transaction can refuse one of them and keep the others.
//
// The lease travels in the context rather than as an argument so that a
// saver wrapped by another (for metrics, faults, logging) stays fenced as
// long as the wrapper passes the context on.

type leaseKey struct{}

// WithLease returns a copy of ctx that carries lease: the writes to
// lease.ThreadID made with it are fenced by lease (see [Fenced]).
func WithLease(ctx context.Context, lease Lease) context.Context {
	return withLease(ctx, &lease)
}

func withLease(ctx context.Context, lease *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, lease)
}

// LeaseFrom returns the lease ctx carries for writes to thread, if any: a
// [Leaser] saver fences the write with it. It is for saver
// implementations.
func LeaseFrom(ctx context.Context, thread string) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(*Lease)
	if !ok || l.ThreadID != thread {
		return Lease{}, false
	}
	return *l, true
}

// CheckFence returns a [*FencedError] for a write made under lease unless
// token, the thread's current lease token as the saver read it in the
// write's transaction, is lease's; holder and current are the thread's
// current holder and fencing token, for the error. It is for [Leaser]
// saver implementations.
func CheckFence(lease Lease, token, holder string, current int64) error {
	if token == "" || token != lease.Token {
		return &FencedError{ThreadID: lease.ThreadID, Fence: lease.Fence, Holder: holder, Current: current}
	}
	return nil
}

// Fenced returns a view of s for the holder of lease: its reads are s's,
// and its writes are made with [WithLease], so a [Leaser] saver refuses
// them with a [*FencedError] once lease is no longer the thread's current
// lease. A write to another thread through the view fails. The view
// implements [ThreadDeleter] when s does, so [CopyThread] into the leased
// thread through it is fenced too, and [Batcher] when s does.
func Fenced(s Saver, lease Lease) Saver {
	f := fencedSaver{s, &lease}
	d, deletes := s.(ThreadDeleter)
	b, batches := s.(Batcher)
	switch {
	case deletes && batches:
		return fencedDeleteBatcher{fencedDeleter{f, d}, b}
	case deletes:
		return fencedDeleter{f, d}
	case batches:
		return fencedBatcher{f, b}
	}
	return f
}

// FencedError is returned by a write made under a lease (see [WithLease])
// that is no longer the thread's current lease: the thread was taken over,
// or the lease released, since the lease was acquired. It matches
// [ErrLeaseLost] with [errors.Is].
type FencedError struct {
	ThreadID string
	// Fence is the fencing token of the refused write's lease.
	Fence int64
	// Holder holds the thread's lease now, "" when nobody does (the lease
	// was released); Current is the thread's latest fencing token.
	Holder  string
	Current int64
}

func (e *FencedError) Error() string {
	switch {
	case e.Holder == "":
		return fmt.Sprintf("checkpoint: thread %q: write refused: its lease (fence %d) was released or taken over since, and nobody holds the thread now (fence %d)", e.ThreadID, e.Fence, e.Current)
	case e.Current > e.Fence:
		return fmt.Sprintf("checkpoint: thread %q: write refused: its lease (fence %d) was taken over by %s (fence %d)", e.ThreadID, e.Fence, e.Holder, e.Current)
	}
	// Fences grow with every acquisition: a lease whose fence is not
	// below the current one was not taken over; it is not a lease this
	// saver issued for the thread.
	return fmt.Sprintf("checkpoint: thread %q: write refused: its lease (fence %d) is not one this saver issued for the thread (another database's, or its token altered); %s holds the thread (fence %d)", e.ThreadID, e.Fence, e.Holder, e.Current)
}

// Is reports whether target is [ErrLeaseLost].
func (e *FencedError) Is(target error) bool { return target == ErrLeaseLost }

// fencedSaver is the view [Fenced] returns.
type fencedSaver struct {
	s     Saver
	lease *Lease // made once: a write's context holds it without a copy
}

func (f fencedSaver) Get(ctx context.Context, ref Ref) (*Tuple, error) { return f.s.Get(ctx, ref) }

func (f fencedSaver) List(ctx context.Context, threadID string, opts ListOptions) iter.Seq2[*Tuple, error] {
	return f.s.List(ctx, threadID, opts)
}

func (f fencedSaver) Put(ctx context.Context, cp *Checkpoint) error {
	if err := f.check(cp.ThreadID); err != nil {
		return err
	}
	return f.s.Put(f.leased(ctx), cp)
}

func (f fencedSaver) PutWrites(ctx context.Context, ref Ref, writes []Write) error {
	if err := f.check(ref.ThreadID); err != nil {
		return err
	}
	return f.s.PutWrites(f.leased(ctx), ref, writes)
}

// leased returns ctx carrying f's lease. A context that carries it
// already — a run puts its lease in its context once (see [WithLease]) —
// is returned as it is, so that its writes do not each allocate a context.
func (f fencedSaver) leased(ctx context.Context) context.Context {
	if l, ok := ctx.Value(leaseKey{}).(*Lease); ok && (l == f.lease || l.ThreadID == f.lease.ThreadID && l.Token == f.lease.Token) {
		return ctx
	}
	return withLease(ctx, f.lease)
}

func (f fencedSaver) check(thread string) error {
	if thread == f.lease.ThreadID {
		return nil
	}
	return fmt.Errorf("checkpoint: a write to thread %q through the lease of thread %q", thread, f.lease.ThreadID)
}

type fencedDeleter struct {
	fencedSaver
	d ThreadDeleter
}

func (f fencedDeleter) DeleteThread(ctx context.Context, threadID string) error {
	if err := f.check(threadID); err != nil {
		return err
	}
	return f.d.DeleteThread(f.leased(ctx), threadID)
}

type fencedBatcher struct {
	fencedSaver
	b Batcher
}

func (f fencedBatcher) PutBatch(ctx context.Context, ops []Op) error {
	return f.putBatch(ctx, f.b, ops)
}

type fencedDeleteBatcher struct {
	fencedDeleter
	b Batcher
}

func (f fencedDeleteBatcher) PutBatch(ctx context.Context, ops []Op) error {
	return f.putBatch(ctx, f.b, ops)
}

func (f fencedSaver) putBatch(ctx context.Context, b Batcher, ops []Op) error {
	for _, op := range ops {
		if err := f.check(op.ThreadID()); err != nil {
			return err
		}
	}
	return b.PutBatch(f.leased(ctx), ops)
}

// fenced runs write, a write to thread made with ctx, under the lock of
// m's leases, first checking the lease ctx carries for thread, if any.
func (m *Memory) fenced(ctx context.Context, thread string, write func() error) error {
	lease, ok := LeaseFrom(ctx, thread)
	if !ok {
		return write()
	}
	t := &m.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.m[thread]
	if err := CheckFence(lease, cur.token, cur.holder, cur.fence); err != nil {
		return err
	}
	return write()
}
