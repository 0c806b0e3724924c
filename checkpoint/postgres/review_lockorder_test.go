package postgres_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// Review of "Lock order" (group.go): attacks on the claim that the saver's
// own transactions never wait for each other in a cycle, and on the index
// mapping and fencing of a batch with a prepended lock statement.

// TestReviewPendingWriteRowAndPutLockOfTwoSaversDoNotDeadlock: a pending
// write's row is not covered by any advisory lock, and the insert of a
// row another transaction inserted and has not committed waits for that
// transaction. Two savers whose batches write the same pending write (the
// same task of the same checkpoint: a stale holder and its successor
// running the same step, task IDs being deterministic) and a Put of the
// same other thread, in opposite orders:
//
//	a: PutWrites(A, k), Put(X)  — inserts k, then waits for X's Put lock
//	b: Put(X), PutWrites(A, k)  — holds X's Put lock, then waits for a's k
//
// Each batch's advisory locks are "in order" (one lock each), so
// orderLocks prepends nothing, and a holds the row while it waits for
// the advisory lock.
func TestReviewPendingWriteRowAndPutLockOfTwoSaversDoNotDeadlock(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("fenced=%v", fenced), func(t *testing.T) {
			schema := freshSchema(t)
			nonce := time.Now().UnixNano()
			nameA, nameB := fmt.Sprintf("agt-rev-row-a-%d", nonce), fmt.Sprintf("agt-rev-row-b-%d", nonce)
			a, b := openNamed(t, schema, nameA), openNamed(t, schema, nameB)
			threadA, threadX := fmt.Sprintf("rev-row-A-%d", nonce), fmt.Sprintf("rev-row-X-%d", nonce)
			ref := checkpoint.Ref{ThreadID: threadA, ID: "0001"}
			writes := []checkpoint.Write{{TaskID: "task", Idx: 0, Channel: "c", Value: []byte(`1`)}}

			// Fenced: a is the current holder of A and b the stale one (whose
			// write is checked only after its insert); X is written
			// unfenced by both (a context carries one lease).
			ctxA, ctxB := context.Background(), context.Background()
			if fenced {
				old, err := b.AcquireLease(t.Context(), threadA, "old", time.Minute)
				require.NoError(t, err)
				require.NoError(t, b.ReleaseLease(t.Context(), old))
				cur, err := a.AcquireLease(t.Context(), threadA, "new", time.Minute)
				require.NoError(t, err)
				ctxA, ctxB = checkpoint.WithLease(ctxA, cur), checkpoint.WithLease(ctxB, old)
			}

			watch := connect(t, schema)
			gate, err := connect(t, schema).Begin(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = gate.Rollback(context.Background()) })
			_, err = gate.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, postgres.ThreadLockKey(threadX, ""))
			require.NoError(t, err)

			errc := make(chan error, 2)
			doneB, doneA := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(doneB)
				errc <- b.PutBatch(ctxB, []checkpoint.Op{
					{Checkpoint: cpOf(threadX, "0002", "", 1, `"b"`)}, {Ref: ref, Writes: writes},
				})
			}()
			// b queues first for X's Put lock, so it is granted first.
			waitFor(t, "b waits for X's Put lock", func() bool {
				_, w := advisoryLock(t, watch, nameB, postgres.ThreadLockKey(threadX, ""))
				return w
			}, doneB)
			go func() {
				defer close(doneA)
				errc <- a.PutBatch(ctxA, []checkpoint.Op{
					{Ref: ref, Writes: writes}, {Checkpoint: cpOf(threadX, "0001", "", 1, `"a"`)},
				})
			}()
			// a waits for X's Put lock, or, once PutWrites takes A's Put
			// lock in the lock order, possibly for A's, which b took first.
			waitFor(t, "a waits for a lock", func() bool { return waitingApps(t, watch, nameA) == 1 }, doneA)
			require.NoError(t, gate.Commit(t.Context()))

			results := collectUnlessDeadlocked(t, watch, errc, 2, nameA, nameB)
			for _, err := range results {
				if err != nil && !errors.Is(err, checkpoint.ErrConflict) && !errors.Is(err, checkpoint.ErrLeaseLost) {
					t.Errorf("unexpected error: %v", err)
				}
			}
		})
	}
}

// TestReviewPendingWritesOfTwoSaversInOppositeOrdersDoNotDeadlock: the
// same with pending writes alone, of two threads, in opposite orders: a
// writes A's row then B's, b B's then A's (the same rows: the same task
// of the same checkpoints). No advisory lock of the saver's is involved,
// only the rows. Between its two writes each batch runs a statement of
// the test's (standing for the other writes of a batch, which take their
// time) that waits at a gate, so that both have inserted their first row
// when they insert their second.
func TestReviewPendingWritesOfTwoSaversInOppositeOrdersDoNotDeadlock(t *testing.T) {
	schema := freshSchema(t)
	nonce := time.Now().UnixNano()
	nameA, nameB := fmt.Sprintf("agt-rev-pw-a-%d", nonce), fmt.Sprintf("agt-rev-pw-b-%d", nonce)
	a, b := openNamed(t, schema, nameA), openNamed(t, schema, nameB)
	t1, t2 := fmt.Sprintf("rev-pw-1-%d", nonce), fmt.Sprintf("rev-pw-2-%d", nonce)
	write := func(s *postgres.Saver, thread string) func() error {
		return func() error {
			return s.PutWrites(context.Background(), checkpoint.Ref{ThreadID: thread, ID: "0001"},
				[]checkpoint.Write{{TaskID: "task", Idx: 0, Channel: "c", Value: []byte(`1`)}})
		}
	}
	gateKey := nonce ^ 0x5a5a5a5a
	// Not one of the saver's lock statements (orderLocks ignores it).
	wait := func(s *postgres.Saver) func() error {
		return func() error {
			return s.DoInGroup(context.Background(), func(b *pgx.Batch) { b.Queue(`SELECT pg_advisory_xact_lock_shared($1::bigint)`, gateKey) })
		}
	}
	watch := connect(t, schema)
	gate, err := connect(t, schema).Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = gate.Rollback(context.Background()) })
	_, err = gate.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, gateKey)
	require.NoError(t, err)

	errc := make(chan error, 6)
	ha, hb := hold(t, a, schema), hold(t, b, schema)
	qs := []<-chan error{
		groupcommittest.Enqueue(t, a, 1, write(a, t1)), groupcommittest.Enqueue(t, a, 2, wait(a)), groupcommittest.Enqueue(t, a, 3, write(a, t2)),
		groupcommittest.Enqueue(t, b, 1, write(b, t2)), groupcommittest.Enqueue(t, b, 2, wait(b)), groupcommittest.Enqueue(t, b, 3, write(b, t1)),
	}
	for _, q := range qs {
		go func() { errc <- <-q }()
	}
	ha.end(t)
	hb.end(t)
	waitFor(t, "both batches wait at the gate", func() bool { return waitingApps(t, watch, nameA, nameB) == 2 })
	require.NoError(t, gate.Commit(t.Context()))
	for _, err := range collectUnlessDeadlocked(t, watch, errc, len(qs), nameA, nameB) {
		require.NoError(t, err)
	}
}

// TestReviewLongWayPutBatchAndDeleteThreadOverNamespacesDoNotDeadlock: a
// PutBatch made the long way (its parents are not in its saver's cache)
// that writes three namespaces of a thread in an order other than their
// keys', beside a fenced DeleteThread of the thread on another saver,
// which locks every namespace, and a PutBatch the long way that writes them
// in the opposite order. The test holds every namespace's Put lock until
// the three wait; released together, they must not wait for each other.
func TestReviewLongWayPutBatchAndDeleteThreadOverNamespacesDoNotDeadlock(t *testing.T) {
	schema := freshSchema(t)
	nonce := time.Now().UnixNano()
	names := []string{fmt.Sprintf("agt-rev-ns-a-%d", nonce), fmt.Sprintf("agt-rev-ns-b-%d", nonce), fmt.Sprintf("agt-rev-ns-c-%d", nonce)}
	a, b, c := openNamed(t, schema, names[0]), openNamed(t, schema, names[1]), openNamed(t, schema, names[2])
	thread := fmt.Sprintf("rev-ns-%d", nonce)
	namespaces := []string{"", "n1", "n2", "n3"}
	w := open(t, schema)
	lease, err := w.AcquireLease(t.Context(), thread, "h", time.Minute)
	require.NoError(t, err)
	ctx := checkpoint.WithLease(context.Background(), lease)
	keys := make([]int64, len(namespaces))
	for i, ns := range namespaces {
		cp := cpOf(thread, "0001", "", 1, `1`)
		cp.Namespace = ns
		require.NoError(t, w.Put(ctx, cp))
		keys[i] = postgres.ThreadLockKey(thread, ns)
	}
	// The namespaces by key, then the batches' two orders against it.
	byKey := slices.Clone(namespaces)
	slices.SortFunc(byKey, func(x, y string) int {
		return cmp.Compare(postgres.ThreadLockKey(thread, x), postgres.ThreadLockKey(thread, y))
	})
	ops := func(order []string, id string) []checkpoint.Op {
		var ops []checkpoint.Op
		for _, ns := range order {
			cp := cpOf(thread, id, "0001", 2, `2`)
			cp.Namespace = ns
			ops = append(ops, checkpoint.Op{Checkpoint: cp})
		}
		return ops
	}
	// b: the highest key first, then the rest ascending; c: descending.
	orderB := append([]string{byKey[len(byKey)-1]}, byKey[:len(byKey)-1]...)
	orderC := slices.Clone(byKey)
	slices.Reverse(orderC)

	watch := connect(t, schema)
	gate, err := connect(t, schema).Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = gate.Rollback(context.Background()) })
	for _, k := range keys {
		_, err = gate.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, k)
		require.NoError(t, err)
	}
	errc := make(chan error, 3)
	go func() {
		errc <- checkpoint.Fenced(a, lease).(checkpoint.ThreadDeleter).DeleteThread(context.Background(), thread)
	}()
	go func() { errc <- b.PutBatch(ctx, ops(orderB, "0002")) }()
	go func() { errc <- c.PutBatch(ctx, ops(orderC, "0003")) }()
	waitFor(t, "the three wait at the gate", func() bool { return waitingApps(t, watch, names...) == 3 })
	require.NoError(t, gate.Commit(t.Context()))
	var results []error
	for len(results) < 3 {
		select {
		case err := <-errc:
			results = append(results, err)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
			for i := range names {
				for j := range names {
					if i < j && blockedBy(t, watch, names[i], names[j]) && blockedBy(t, watch, names[j], names[i]) {
						_, err := watch.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY ($1)`, names)
						require.NoError(t, err)
						t.Fatalf("%s and %s wait for each other: a deadlock", names[i], names[j])
					}
				}
			}
		}
	}
	for _, err := range results {
		if err != nil && !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("unexpected error: %v", err)
		}
	}
}
