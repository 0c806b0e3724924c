package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a Commit that records its batches and can hold one in
// flight: a batch whose first write is hold waits for release.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	hold    string
	held    chan struct{} // closed when the held batch started
	release chan struct{}
	fail    string // this write gets failErr
}

var failErr = errors.New("refused")

func (r *recorder) commit(batch []*Write[string]) {
	if batch[0].Op == r.hold {
		close(r.held)
		<-r.release
	}
	var ops []string
	for _, w := range batch {
		ops = append(ops, w.Op)
		w.Err = nil
		if w.Op == r.fail {
			w.Err = failErr
		}
	}
	r.mu.Lock()
	r.batches = append(r.batches, ops)
	r.mu.Unlock()
}

func newGroup(r *recorder) *Group[string] {
	return &Group[string]{Commit: r.commit, MaxBatch: 3, Closed: errors.New("closed")}
}

// queueBehind starts writes ops, one goroutine each, in order: each is in
// the queue before the next starts. It returns their errors once done.
func queueBehind(t *testing.T, g *Group[string], ctx context.Context, ops ...string) func() []error {
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		n := g.Queued()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Do(ctx, op)
		}()
		for g.Queued() == n { // until it is queued (the held batch keeps the group busy)
			runtime.Gosched()
		}
	}
	return func() []error { wg.Wait(); return errs }
}

func TestALoneWriteIsItsOwnBatch(t *testing.T) {
	r := &recorder{}
	g := newGroup(r)
	require.NoError(t, g.Do(t.Context(), "a"))
	require.NoError(t, g.Do(t.Context(), "b"))
	require.Equal(t, [][]string{{"a"}, {"b"}}, r.batches)
}

func TestWritesQueuedDuringABatchShareTheNextInArrivalOrderUpToMaxBatch(t *testing.T) {
	r := &recorder{hold: "first", held: make(chan struct{}), release: make(chan struct{})}
	g := newGroup(r)
	done := make(chan error, 1)
	go func() { done <- g.Do(t.Context(), "first") }()
	<-r.held
	wait := queueBehind(t, g, t.Context(), "b", "c", "d", "e")
	close(r.release)
	require.NoError(t, <-done)
	for _, err := range wait() {
		require.NoError(t, err)
	}
	require.Equal(t, [][]string{{"first"}, {"b", "c", "d"}, {"e"}}, r.batches)
}

func TestEachWriteGetsItsOwnError(t *testing.T) {
	r := &recorder{hold: "first", held: make(chan struct{}), release: make(chan struct{}), fail: "c"}
	g := newGroup(r)
	go func() { _ = g.Do(t.Context(), "first") }()
	<-r.held
	wait := queueBehind(t, g, t.Context(), "b", "c", "d")
	close(r.release)
	errs := wait()
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], failErr)
	require.NoError(t, errs[2])
}

func TestACancelledQueuedWriteIsNeverMade(t *testing.T) {
	r := &recorder{hold: "first", held: make(chan struct{}), release: make(chan struct{})}
	g := newGroup(r)
	go func() { _ = g.Do(t.Context(), "first") }()
	<-r.held
	ctx, cancel := context.WithCancel(t.Context())
	wait := queueBehind(t, g, ctx, "cancelled")
	keep := queueBehind(t, g, t.Context(), "kept")
	cancel()
	require.ErrorIs(t, wait()[0], context.Canceled)
	close(r.release)
	require.NoError(t, keep()[0])
	require.Equal(t, [][]string{{"first"}, {"kept"}}, r.batches)
}

func TestCloseFailsTheQueuedWritesAndWaitsForTheBatchInFlight(t *testing.T) {
	r := &recorder{hold: "first", held: make(chan struct{}), release: make(chan struct{})}
	g := newGroup(r)
	first := make(chan error, 1)
	go func() { first <- g.Do(t.Context(), "first") }()
	<-r.held
	wait := queueBehind(t, g, t.Context(), "queued")
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	require.ErrorIs(t, wait()[0], g.Closed)
	select {
	case <-closed:
		t.Fatal("Close returned while a batch was in flight")
	default:
	}
	close(r.release)
	<-closed
	require.NoError(t, <-first)
	require.ErrorIs(t, g.Do(t.Context(), "late"), g.Closed)
	require.True(t, g.Closing())
	require.Equal(t, [][]string{{"first"}}, r.batches, fmt.Sprint(r.batches))
}

func TestIdleRunsWhenNothingIsInFlightOrQueued(t *testing.T) {
	r := &recorder{}
	g := newGroup(r)
	idle := 0
	g.Idle = func() { idle++ }
	require.NoError(t, g.Do(t.Context(), "a"))
	require.Equal(t, 1, idle)
}
