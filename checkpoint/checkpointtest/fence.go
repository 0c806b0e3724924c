package checkpointtest

import (
	"context"
	"errors"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// The fencing cases run for savers that implement [checkpoint.Leaser]:
// a Leaser must fence the writes made under a lease (see
// [checkpoint.WithLease]). They write through [checkpoint.Fenced] views.
var fenceCases = []testCase{
	{
		name:        "fence-grows",
		explanation: "a lease's Fence grows with every acquisition of its thread — after a release and after an expiry — so a later holder always has a greater one",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", longTTL)
			require.NoError(e.t, s.ReleaseLease(e.ctx, a))
			b := e.acquire(s, "t1", "bob", shortTTL)
			c := e.acquireEventually(s, "t1", "carol", longTTL)
			require.Less(e.t, a.Fence, b.Fence, "fence after a release")
			require.Less(e.t, b.Fence, c.Fence, "fence after an expiry")
		},
	},
	{
		name:        "fence-holder-writes",
		explanation: "the holder of a thread's lease writes through its fenced view as through the saver: Put, PutWrites and DeleteThread succeed and read back",
		run: func(e *env) {
			s := e.leaser()
			f := e.fence(e.acquire(s, "t1", "alice", longTTL))
			th := e.thread("t1", "")
			a := th.putOn(f, nil, false, meta("input", -1), map[string]string{"x": `1`})
			b := th.putOn(f, a, false, meta("loop", 0), map[string]string{"x": `2`})
			w := checkpoint.Write{TaskID: "t", Idx: 0, Channel: "x", Value: []byte(`3`)}
			require.NoError(e.t, f.PutWrites(e.ctx, ref(b), []checkpoint.Write{w}))
			got := e.get(ref(b))
			e.requireTuple(withWrites(th.want(b), w), got)
			if d, ok := f.(checkpoint.ThreadDeleter); ok {
				require.NoError(e.t, d.DeleteThread(e.ctx, "t1"))
				_, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "t1"})
				require.ErrorIs(e.t, err, checkpoint.ErrNotFound)
			}
		},
	},
	{
		name:        "fence-stale-after-takeover",
		explanation: "once a thread's expired lease was taken over, every write through the old holder's fenced view — Put, a fork, PutWrites, DeleteThread, CopyThread into the thread — fails with a *checkpoint.FencedError (matching checkpoint.ErrLeaseLost) naming the new holder and its fence, and changes nothing; the new holder's writes go on as if the old one had never woken up",
		run: func(e *env) {
			e.requireStaleRefused(e.leaser(), e.leaser())
		},
	},
	{
		name:         "fence-stale-two-instances",
		explanation:  "a holder on one instance whose lease expired and was taken over through another instance (another process) is refused, with a *checkpoint.FencedError naming the new holder, on every write; the new holder's writes go on",
		twoInstances: true,
		run: func(e *env) {
			e.requireStaleRefused(e.leaser(), e.leaser2())
		},
	},
	{
		name:        "fence-view-lease-wins",
		explanation: "a fenced view judges its writes by its own lease, whatever lease their context carries: a stale holder's view is refused with the stale lease in the context (as a run puts it there) and with the current holder's, and the current holder's view writes with either",
		run: func(e *env) {
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", shortTTL)
			fa := e.fence(a)
			th := e.thread("t1", "")
			first := th.putOn(fa, nil, false, meta("input", -1), map[string]string{"x": `1`})
			b := e.acquireEventually(s, "t1", "bob", longTTL)
			fb := e.fence(b)

			next, _ := th.next(first, meta("loop", 0), map[string]string{"x": `"stale"`})
			requireFenced(e, fa.Put(checkpoint.WithLease(e.ctx, a), next), a)
			requireFenced(e, fa.Put(checkpoint.WithLease(e.ctx, b), next), a)
			requireFenced(e, fa.PutWrites(checkpoint.WithLease(e.ctx, b), ref(first), []checkpoint.Write{{TaskID: "stale", Idx: 0, Channel: "x", Value: []byte(`"stale"`)}}), a)
			e.requireTuple(th.want(first), e.get(checkpoint.Ref{ThreadID: "t1"}))

			second := th.putOn(ctxLease{fb, a}, first, false, meta("loop", 0), map[string]string{"x": `2`})
			third := th.putOn(ctxLease{fb, b}, second, false, meta("loop", 1), map[string]string{"x": `3`})
			e.requireTuple(th.want(third), e.get(checkpoint.Ref{ThreadID: "t1"}))
		},
	},
	{
		name:        "fence-after-release",
		explanation: "a write through the fenced view of a released lease fails with a *checkpoint.FencedError naming no holder, and changes nothing",
		run: func(e *env) {
			s := e.leaser()
			l := e.acquire(s, "t1", "alice", longTTL)
			f := e.fence(l)
			th := e.thread("t1", "")
			a := th.putOn(f, nil, false, meta("input", -1), map[string]string{"x": `1`})
			require.NoError(e.t, s.ReleaseLease(e.ctx, l))
			cp, _ := th.next(a, meta("loop", 0), map[string]string{"x": `2`})
			fe := requireFenced(e, f.Put(e.ctx, cp), l)
			require.Empty(e.t, fe.Holder)
			e.requireTuple(th.want(a), e.get(checkpoint.Ref{ThreadID: "t1"}))

			// CopyThread into a thread through the view of its released
			// lease copies nothing.
			l3 := e.acquire(s, "t3", "alice", longTTL)
			f3 := e.fence(l3)
			require.NoError(e.t, s.ReleaseLease(e.ctx, l3))
			require.ErrorIs(e.t, checkpoint.CopyThread(e.ctx, f3, "t1", "t3"), checkpoint.ErrLeaseLost)
			require.Empty(e.t, e.list("t3", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "fence-other-thread",
		explanation: "a fenced view writes only to its lease's thread: a Put or PutWrites to another thread fails and stores nothing",
		run: func(e *env) {
			f := e.fence(e.acquire(e.leaser(), "t1", "alice", longTTL))
			cp, _ := e.thread("t2", "").next(nil, meta("input", -1), map[string]string{"x": `1`})
			require.Error(e.t, f.Put(e.ctx, cp))
			require.Error(e.t, f.PutWrites(e.ctx, checkpoint.Ref{ThreadID: "t2", ID: cp.ID}, []checkpoint.Write{{TaskID: "t", Channel: "x", Value: []byte(`1`)}}))
			_, err := e.s.Get(e.ctx, checkpoint.Ref{ThreadID: "t2"})
			require.ErrorIs(e.t, err, checkpoint.ErrNotFound)
		},
	},
}

// ctxLease is a saver whose writes put lease in their context before
// handing them on.
type ctxLease struct {
	checkpoint.Saver
	lease checkpoint.Lease
}

func (c ctxLease) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	return c.Saver.Put(checkpoint.WithLease(ctx, c.lease), cp)
}

// fence returns the saver as seen by the holder of lease.
func (e *env) fence(lease checkpoint.Lease) checkpoint.Saver { return checkpoint.Fenced(e.s, lease) }

// requireStaleRefused: alice takes t1 through old, writes, and lets her
// lease expire; bob takes it over through cur and writes; every write of
// alice's is then refused and changes nothing, and bob writes on.
func (e *env) requireStaleRefused(old, cur checkpoint.Leaser) {
	e.t.Helper()
	a := e.acquire(old, "t1", "alice", shortTTL)
	fa := checkpoint.Fenced(old.(checkpoint.Saver), a)
	th := e.thread("t1", "")
	first := th.putOn(fa, nil, false, meta("input", -1), map[string]string{"x": `1`})

	b := e.acquireEventually(cur, "t1", "bob", longTTL)
	fb := checkpoint.Fenced(cur.(checkpoint.Saver), b)
	second := th.putOn(fb, first, false, meta("loop", 0), map[string]string{"x": `2`})
	before := e.list("t1", checkpoint.ListOptions{})

	// Alice wakes up: a checkpoint following the latest one (which a
	// parent check alone would accept), a fork, pending writes, a delete,
	// a copy into the thread.
	next, _ := th.next(second, meta("loop", 1), map[string]string{"x": `"stale"`})
	fe := requireFenced(e, fa.Put(e.ctx, next), a)
	require.Equal(e.t, "bob", fe.Holder)
	require.Equal(e.t, b.Fence, fe.Current)
	require.Greater(e.t, fe.Current, fe.Fence)
	require.Contains(e.t, fe.Error(), "bob")
	fork, _ := th.next(first, meta("fork", 0), map[string]string{"x": `"stale fork"`})
	fork.Fork = true
	requireFenced(e, fa.Put(e.ctx, fork), a)
	requireFenced(e, fa.PutWrites(e.ctx, ref(second), []checkpoint.Write{{TaskID: "stale", Idx: 0, Channel: "x", Value: []byte(`"stale"`)}}), a)
	if d, ok := fa.(checkpoint.ThreadDeleter); ok {
		requireFenced(e, d.DeleteThread(e.ctx, "t1"), a)
	}
	e.requireTuples(before, e.list("t1", checkpoint.ListOptions{}))
	require.Empty(e.t, e.get(ref(second)).PendingWrites)

	// Bob goes on: his next checkpoint follows his own.
	third := th.putOn(fb, second, false, meta("loop", 1), map[string]string{"x": `3`})
	e.requireTuple(th.want(third), e.get(checkpoint.Ref{ThreadID: "t1"}))
}

// requireFenced checks that err is a *checkpoint.FencedError of lease l
// that matches checkpoint.ErrLeaseLost, and returns it.
func requireFenced(e *env, err error, l checkpoint.Lease) *checkpoint.FencedError {
	e.t.Helper()
	fe, ok := errors.AsType[*checkpoint.FencedError](err)
	require.True(e.t, ok, "write through a stale lease: %v; want a *checkpoint.FencedError", err)
	require.ErrorIs(e.t, err, checkpoint.ErrLeaseLost)
	require.Equal(e.t, l.ThreadID, fe.ThreadID)
	require.Equal(e.t, l.Fence, fe.Fence)
	return fe
}

// withWrites returns t with ws as its pending writes.
func withWrites(t *checkpoint.Tuple, ws ...checkpoint.Write) *checkpoint.Tuple {
	t.PendingWrites = ws
	return t
}
