package graph_test

// Tests of thread leases: one live run per thread, in this process, for
// every entry point that writes a thread.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type leaseState struct {
	N state.Value[int]
}

// blockingGraph has one node that signals entered, then waits for release.
func blockingGraph(t *testing.T, saver checkpoint.Saver, entered chan<- struct{}, release <-chan struct{}, opts ...graph.CompileOption) *graph.Graph[leaseState] {
	t.Helper()
	b := graph.New[leaseState]()
	b.AddNode("work", func(ctx context.Context, s leaseState) (leaseState, error) {
		if entered != nil {
			entered <- struct{}{}
		}
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return s, ctx.Err()
			}
		}
		s.N.Set(s.N.Get() + 1)
		return s, nil
	})
	b.AddEdge(graph.Start, "work")
	b.AddEdge("work", graph.End)
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	require.NoError(t, err)
	return g
}

// liveRun starts a run of g on thread and returns once its node runs, with
// a function that lets the node finish and returns the run's error.
func liveRun(t *testing.T, g *graph.Graph[leaseState], entered chan struct{}, release chan struct{}, thread string) func() error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(t.Context(), leaseState{}, graph.WithThread(thread), graph.WithRunID("first"))
		done <- err
	}()
	<-entered
	return func() error {
		close(release)
		return <-done
	}
}

func TestSecondRunOfALiveThreadIsRefusedAtOnce(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	g := blockingGraph(t, checkpoint.NewMemory(), entered, release)
	finish := liveRun(t, g, entered, release, "t1")

	calls := []struct {
		name string
		call func() error
	}{
		{"Invoke", func() error { _, err := g.Invoke(t.Context(), leaseState{}, graph.WithThread("t1")); return err }},
		{"Resume", func() error {
			_, err := g.Resume(t.Context(), graph.Command[leaseState]{}, graph.WithThread("t1"))
			return err
		}},
		{"Stream", func() error {
			for _, err := range g.Stream(t.Context(), leaseState{}, graph.WithThread("t1")) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"UpdateState", func() error {
			var s leaseState
			s.N.Set(7)
			_, err := g.UpdateState(t.Context(), s, "work", graph.WithThread("t1"))
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			var held *checkpoint.LeaseHeldError
			require.ErrorAs(t, err, &held)
			require.Equal(t, "t1", held.ThreadID)
			require.Contains(t, held.Holder, "run first")
		})
	}
	require.NoError(t, finish())
	snap, err := g.GetState(t.Context(), graph.WithThread("t1"))
	require.NoError(t, err)
	require.Equal(t, 1, snap.Values.N.Get(), "the refused calls wrote nothing")
}

func TestOtherThreadsRunWhileOneIsLeased(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	g := blockingGraph(t, checkpoint.NewMemory(), entered, release)
	finish := liveRun(t, g, entered, release, "t1")
	g2 := blockingGraph(t, checkpoint.NewMemory(), nil, nil)
	_, err := g2.Invoke(t.Context(), leaseState{}, graph.WithThread("t2"))
	require.NoError(t, err)
	require.NoError(t, finish())
}

func TestLeaseIsReleasedHoweverTheRunEnds(t *testing.T) {
	saver := checkpoint.NewMemory()
	b := graph.New[leaseState]()
	fail := true
	b.AddNode("work", func(ctx context.Context, s leaseState) (leaseState, error) {
		if fail {
			fail = false
			return s, errors.New("boom")
		}
		if _, err := graph.Interrupt(ctx, "ok?"); err != nil {
			return s, err
		}
		s.N.Set(1)
		return s, nil
	})
	b.AddEdge(graph.Start, "work")
	b.AddEdge("work", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), leaseState{}, graph.WithThread("t"))
	require.ErrorContains(t, err, "boom")
	_, err = g.Resume(t.Context(), graph.Command[leaseState]{}, graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr, "a failed run released the lease")
	out, err := g.Resume(t.Context(), graph.Command[leaseState]{Resume: true}, graph.WithThread("t"))
	require.NoError(t, err, "a paused run released the lease")
	require.Equal(t, 1, out.N.Get())

	entered := make(chan struct{}, 1)
	blocked := blockingGraph(t, saver, entered, make(chan struct{}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	_, err = blocked.Invoke(ctx, leaseState{}, graph.WithThread("t"))
	require.ErrorIs(t, err, context.Canceled)
	_, err = g.Invoke(t.Context(), leaseState{}, graph.WithThread("t"))
	require.ErrorAs(t, err, &intr, "a cancelled run released the lease")
}

func TestLeaseTTLZeroTurnsLeasingOff(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	saver := checkpoint.NewMemory()
	g := blockingGraph(t, saver, entered, release, graph.WithLeaseTTL(0))
	finish := liveRun(t, g, entered, release, "t1")
	var s leaseState
	s.N.Set(7)
	_, err := g.UpdateState(t.Context(), s, "work", graph.WithThread("t1"))
	require.NoError(t, err, "with leasing off, nothing refuses a second writer")
	// The parent check still refuses the live run's next checkpoint, which
	// no longer follows the thread's latest: no silent fork.
	require.ErrorIs(t, finish(), checkpoint.ErrConflict)
}

// stealingSaver is a real memory saver that remembers the last lease it
// handed out, so a test can take it over as another process would after
// the holder missed its renewals, and reports failed renewals.
type stealingSaver struct {
	*checkpoint.Memory
	leases chan checkpoint.Lease
	lost   chan error
}

func (s *stealingSaver) AcquireLease(ctx context.Context, thread, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := s.Memory.AcquireLease(ctx, thread, holder, ttl)
	if err == nil {
		s.leases <- l
	}
	return l, err
}

func (s *stealingSaver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := s.Memory.RenewLease(ctx, lease, ttl)
	if err != nil {
		s.lost <- err
	}
	return l, err
}

func TestRunThatLosesItsLeaseStopsBeforeItWritesAgain(t *testing.T) {
	saver := &stealingSaver{Memory: checkpoint.NewMemory(), leases: make(chan checkpoint.Lease, 2), lost: make(chan error, 1)}
	seen := make(chan struct{}, 1)
	t.Cleanup(graph.SetLeaseLostHook(func() { seen <- struct{}{} }))
	entered, release := make(chan struct{}, 1), make(chan struct{})
	g := blockingGraph(t, saver, entered, release, graph.WithLeaseTTL(30*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(t.Context(), leaseState{}, graph.WithThread("t1"))
		done <- err
	}()
	<-entered
	held := <-saver.leases
	// Another holder takes the thread over: the run's next renewal fails.
	require.NoError(t, saver.Memory.ReleaseLease(t.Context(), held))
	_, err := saver.Memory.AcquireLease(t.Context(), "t1", "the other process", time.Hour)
	require.NoError(t, err)
	require.ErrorIs(t, <-saver.lost, checkpoint.ErrLeaseLost)
	<-seen // the run knows
	close(release)
	err = <-done
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
	snap, err := g.GetState(t.Context(), graph.WithThread("t1"))
	require.NoError(t, err)
	require.Zero(t, snap.Values.N.Get(), "the step's result was not written after the lease was lost")
}

// renewingSaver reports each successful renewal.
type renewingSaver struct {
	*checkpoint.Memory
	renewed chan struct{}
}

func (s *renewingSaver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := s.Memory.RenewLease(ctx, lease, ttl)
	if err == nil {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
	return l, err
}

// A run that outlives a third of its lease's time to live renews it, again
// and again (under -race this also checks the renewal timer's handoff).
func TestALongRunRenewsItsLease(t *testing.T) {
	saver := &renewingSaver{Memory: checkpoint.NewMemory(), renewed: make(chan struct{}, 1)}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	g := blockingGraph(t, saver, entered, release, graph.WithLeaseTTL(30*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(t.Context(), leaseState{}, graph.WithThread("t1"))
		done <- err
	}()
	<-entered
	for range 2 {
		<-saver.renewed
	}
	close(release)
	require.NoError(t, <-done)
}

// unrenewingSaver cannot renew its leases (a transient error each time):
// its holder is as good as paused, and does not learn that it lost its
// lease.
type unrenewingSaver struct {
	*checkpoint.Memory
}

func (s unrenewingSaver) RenewLease(context.Context, checkpoint.Lease, time.Duration) (checkpoint.Lease, error) {
	return checkpoint.Lease{}, errors.New("renewal did not reach the saver")
}

// A run that wakes up after its thread was taken over — it could not
// renew, so it never saw its lease lost — is refused at its next write
// with a *checkpoint.FencedError, and ends with it; nothing it computed
// lands, and the new holder's run succeeded (no ConflictError).
func TestPausedHolderIsFencedAndTheNewHolderRunsOn(t *testing.T) {
	mem := checkpoint.NewMemory()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	paused := blockingGraph(t, unrenewingSaver{mem}, entered, release, graph.WithLeaseTTL(50*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := paused.Invoke(t.Context(), leaseState{}, graph.WithThread("t1"), graph.WithRunID("paused"))
		done <- err
	}()
	<-entered

	// Its lease expires; another process takes the thread over and runs.
	other := blockingGraph(t, mem, nil, nil, graph.WithLeaseTTL(time.Hour))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := other.Invoke(t.Context(), leaseState{}, graph.WithThread("t1"), graph.WithRunID("other"))
		if err == nil {
			break
		}
		_, held := errors.AsType[*checkpoint.LeaseHeldError](err)
		require.True(t, held, "the new holder's run: %v", err)
		require.True(t, time.Now().Before(deadline), "the paused holder's lease never expired")
		time.Sleep(5 * time.Millisecond)
	}

	close(release) // the paused holder wakes up
	err := <-done
	fe, ok := errors.AsType[*checkpoint.FencedError](err)
	require.True(t, ok, "the paused holder's run: %v; want a *checkpoint.FencedError", err)
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
	require.Empty(t, fe.Holder, "the new holder's run ended and released the thread")
	require.Greater(t, fe.Current, fe.Fence, "the thread was leased again since")

	snap, err := other.GetState(t.Context(), graph.WithThread("t1"))
	require.NoError(t, err)
	require.Equal(t, 1, snap.Values.N.Get(), "only the new holder's step counted")
	require.Equal(t, "other", snap.Metadata.RunID, "the latest checkpoint is the new holder's")
	// What the paused run wrote before it lost its lease comes first;
	// its task's writes, made after, are nowhere.
	var firstOther string
	var pausedIDs []string
	for tup, err := range mem.List(t.Context(), "t1", checkpoint.ListOptions{}) {
		require.NoError(t, err)
		switch tup.Metadata.RunID {
		case "other":
			firstOther = tup.ID // newest first: ends at the oldest
		case "paused":
			pausedIDs = append(pausedIDs, tup.ID)
			require.Empty(t, tup.PendingWrites, "pending writes against the paused run's checkpoint %s", tup.ID)
		default:
			t.Fatalf("checkpoint %s of run %q", tup.ID, tup.Metadata.RunID)
		}
	}
	require.NotEmpty(t, pausedIDs)
	for _, id := range pausedIDs {
		require.Less(t, id, firstOther, "a checkpoint of the paused run after the takeover")
	}
}

// ttlSaver is a real memory saver that reports the time to live of every
// lease taken from it.
type ttlSaver struct {
	*checkpoint.Memory
	ttls []time.Duration
}

func (s *ttlSaver) AcquireLease(ctx context.Context, thread, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	s.ttls = append(s.ttls, ttl)
	return s.Memory.AcquireLease(ctx, thread, holder, ttl)
}

func TestARunsLeaseTTLOverridesTheGraphs(t *testing.T) {
	cases := []struct {
		name          string
		compiled, run []graph.LeaseTTLOption
		want          []time.Duration
	}{
		{"graph's default", nil, nil, []time.Duration{graph.DefaultLeaseTTL}},
		{"run's shorter", nil, []graph.LeaseTTLOption{graph.WithLeaseTTL(2 * time.Second)}, []time.Duration{2 * time.Second}},
		{"run turns it on", []graph.LeaseTTLOption{graph.WithLeaseTTL(0)}, []graph.LeaseTTLOption{graph.WithLeaseTTL(time.Minute)}, []time.Duration{time.Minute}},
		{"run turns it off", []graph.LeaseTTLOption{graph.WithLeaseTTL(time.Minute)}, []graph.LeaseTTLOption{graph.WithLeaseTTL(0)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saver := &ttlSaver{Memory: checkpoint.NewMemory()}
			var copts []graph.CompileOption
			for _, o := range c.compiled {
				copts = append(copts, o)
			}
			ropts := []graph.RunOption{graph.WithThread("t1")}
			for _, o := range c.run {
				ropts = append(ropts, o)
			}
			g := blockingGraph(t, saver, nil, nil, copts...)
			_, err := g.Invoke(t.Context(), leaseState{}, ropts...)
			require.NoError(t, err)
			require.Equal(t, c.want, saver.ttls)
		})
	}
}

// TestAGraphWithItsOwnSaverIsNotFencedByTheRunsLease: a run's lease
// fences the run's own writes only. A subgraph compiled with a saver of
// its own, or a graph a node invokes with its own saver, on the same
// thread ID, writes to another store, where the run's lease means
// nothing: its writes are not refused as those of a lost lease.
func TestAGraphWithItsOwnSaverIsNotFencedByTheRunsLease(t *testing.T) {
	inner := func(t *testing.T) *graph.Graph[threadState] {
		b := graph.New[threadState]()
		b.AddNode("inner", func(ctx context.Context, s threadState) (threadState, error) {
			return threadState{Seen: state.Items("inner")}, nil
		})
		b.AddEdge(graph.Start, "inner")
		b.AddEdge("inner", graph.End)
		g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		return g
	}
	cases := []struct {
		name  string
		outer func(t *testing.T, b *graph.Builder[threadState])
	}{
		{"a subgraph", func(t *testing.T, b *graph.Builder[threadState]) {
			b.AddCommandNode("outer", graph.Subgraph[threadState, threadState](inner(t), nil, nil))
		}},
		{"a graph a node invokes", func(t *testing.T, b *graph.Builder[threadState]) {
			other := inner(t)
			b.AddNode("outer", func(ctx context.Context, s threadState) (threadState, error) {
				_, err := other.Invoke(ctx, threadState{}, graph.WithThread(graph.ThreadID(ctx)))
				return threadState{}, err
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := graph.New[threadState]()
			c.outer(t, b)
			b.AddEdge(graph.Start, "outer")
			b.AddEdge("outer", graph.End)
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), threadState{}, graph.WithThread("t1"))
			require.NoError(t, err)
		})
	}
}
