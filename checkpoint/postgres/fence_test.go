package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// The two interleavings of a fenced write with a takeover (lease.go,
// "Fencing"), forced with a transaction of the test's that holds one of
// the locks involved: a takeover waits for a fenced write in flight, and
// a fenced write that meets a takeover in flight waits for it, then is
// refused.

// waitForLock returns once a session waits for the advisory lock key, or
// fails the test if done is closed first: the operation that was to wait
// for the lock returned without waiting.
func waitForLock(t *testing.T, conn *pgx.Conn, key int64, done <-chan struct{}, what string) {
	t.Helper()
	for {
		var n int
		// A bigint key is held as two 32-bit halves, objsubid 1.
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
			AND classid::bigint = ($1::bigint >> 32) & 4294967295 AND objid::bigint = $1::bigint & 4294967295`, key).Scan(&n))
		if n > 0 {
			return
		}
		select {
		case <-done:
			t.Fatalf("%s returned without waiting for the lock", what)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(time.Millisecond):
		}
	}
}

func TestTakeoverWaitsForAFencedWriteInFlight(t *testing.T) {
	schema := freshSchema(t)
	s, other := open(t, schema), open(t, schema)
	thread := fmt.Sprintf("inflight-%d", time.Now().UnixNano())
	lease, err := s.AcquireLease(t.Context(), thread, "old", time.Minute)
	require.NoError(t, err)

	// The test holds the thread's Put lock: the fenced Put takes the
	// shared lease lock, passes its check, and waits there, in flight.
	holder := connect(t, schema)
	tx, err := holder.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, postgres.ThreadLockKey(thread, ""))
	require.NoError(t, err)
	putDone, putErr := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(putDone)
		putErr <- checkpoint.Fenced(s, lease).Put(context.Background(), cpOf(thread, "0001", "", 1, `1`))
	}()
	waitForLock(t, connect(t, schema), postgres.ThreadLockKey(thread, ""), putDone, "the fenced Put")

	// The lease expires: it may be taken over.
	takeover := expireAndTakeOver(t, schema, other, thread)
	require.NoError(t, tx.Commit(t.Context()))

	// The write was made under the current lease: it lands, before the
	// takeover, which then succeeds.
	require.NoError(t, <-putErr)
	taken, err := takeover()
	require.NoError(t, err)
	require.Greater(t, taken.Fence, lease.Fence)
	requireLatest(t, s, thread, "0001")
	err = checkpoint.Fenced(s, lease).Put(t.Context(), cpOf(thread, "0002", "0001", 2, `2`))
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost, "the old holder's next write")
}

// expireAndTakeOver expires thread's lease and has other take it over in
// the background, once the takeover waits for the thread's lease lock
// (held by a write in flight); the function returned waits for the
// takeover's outcome.
func expireAndTakeOver(t *testing.T, schema string, other *postgres.Saver, thread string) func() (checkpoint.Lease, error) {
	t.Helper()
	_, err := connect(t, schema).Exec(t.Context(), `UPDATE agentgraph_leases SET expires_at = now() - interval '1 second' WHERE thread_id = $1`, thread)
	require.NoError(t, err)
	done := make(chan struct{})
	var taken checkpoint.Lease
	var takeErr error
	go func() {
		defer close(done)
		taken, takeErr = other.AcquireLease(context.Background(), thread, "new", time.Minute)
	}()
	waitForLock(t, connect(t, schema), postgres.LeaseLockKey(thread), done, "the takeover")
	return func() (checkpoint.Lease, error) {
		<-done
		return taken, takeErr
	}
}

// fencedWrite is a write of a thread holding a checkpoint 0001, made
// through a fenced view f.
type fencedWrite struct {
	name  string
	write func(ctx context.Context, f checkpoint.Saver, thread string) error
}

var (
	fencedPut = fencedWrite{"put", func(ctx context.Context, f checkpoint.Saver, thread string) error {
		return f.Put(ctx, cpOf(thread, "0002", "0001", 2, `2`))
	}}
	fencedPutWrites = fencedWrite{"put-writes", func(ctx context.Context, f checkpoint.Saver, thread string) error {
		return f.PutWrites(ctx, checkpoint.Ref{ThreadID: thread, ID: "0001"}, []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}})
	}}
	fencedPutBatch = fencedWrite{"put-batch", func(ctx context.Context, f checkpoint.Saver, thread string) error {
		return f.(checkpoint.Batcher).PutBatch(ctx, []checkpoint.Op{
			{Ref: checkpoint.Ref{ThreadID: thread, ID: "0001"}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}}},
			{Checkpoint: cpOf(thread, "0002", "0001", 2, `2`)},
		})
	}}
	fencedDeleteThread = fencedWrite{"delete-thread", func(ctx context.Context, f checkpoint.Saver, thread string) error {
		return f.(checkpoint.ThreadDeleter).DeleteThread(ctx, thread)
	}}
)

// takeoverInFlight begins a takeover of thread's lease as AcquireLease
// makes it — the lease lock, then the row's update to holder "new" — and
// leaves it uncommitted (rolled back at the test's end).
func takeoverInFlight(t *testing.T, schema, thread string) pgx.Tx {
	t.Helper()
	tx, err := connect(t, schema).Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, postgres.LeaseLockKey(thread))
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `UPDATE agentgraph_leases SET holder = 'new', token = 'new-token', fence = fence + 1 WHERE thread_id = $1`, thread)
	require.NoError(t, err)
	return tx
}

func TestFencedWriteThatMeetsATakeoverInFlightIsRefused(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	cases := []fencedWrite{fencedPut, fencedPutWrites, fencedDeleteThread}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			thread := fmt.Sprintf("meet-%s-%d", c.name, time.Now().UnixNano())
			lease, err := s.AcquireLease(t.Context(), thread, "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(s, lease).Put(t.Context(), cpOf(thread, "0001", "", 1, `1`)))

			// A takeover in flight, as AcquireLease makes it: the lease
			// lock, then the row's update, not committed yet.
			tx := takeoverInFlight(t, schema, thread)

			done, errc := make(chan struct{}), make(chan error, 1)
			go func() {
				defer close(done)
				errc <- c.write(context.Background(), checkpoint.Fenced(s, lease), thread)
			}()
			waitForLock(t, connect(t, schema), postgres.LeaseLockKey(thread), done, "the fenced write")
			require.NoError(t, tx.Commit(t.Context()))

			err = <-errc
			f, ok := errors.AsType[*checkpoint.FencedError](err)
			require.True(t, ok, "want a *checkpoint.FencedError, got %v", err)
			require.Equal(t, "new", f.Holder)
			require.Equal(t, lease.Fence+1, f.Current)
			got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread})
			require.NoError(t, err, "the refused write changed nothing")
			require.Equal(t, "0001", got.ID)
			require.Empty(t, got.PendingWrites)
		})
	}
}

func cpOf(thread, id, parent string, version int64, value string) *checkpoint.Checkpoint {
	return &checkpoint.Checkpoint{
		ID: id, ThreadID: thread, ParentID: parent,
		Channels: []checkpoint.Channel{{Name: "a", Version: version, Value: []byte(value)}},
	}
}

func requireLatest(t *testing.T, s checkpoint.Saver, thread, id string) {
	t.Helper()
	got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread})
	require.NoError(t, err, "thread %s", thread)
	require.Equal(t, id, got.ID, "latest checkpoint of thread %s", thread)
}

func TestPutAfterAnotherSaverRewroteTheThreadStoresItsValue(t *testing.T) {
	// Saver a remembers the paths of the checkpoints it wrote, and sends
	// the next Put in one round trip, its values encoded against them.
	// Here b deleted the thread and stored another value under the same
	// checkpoint ID and version: a's next Put, whose list extends the old
	// value, must not be stored as a delta of b's value.
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	list := func(id, parent string, version int64, value string) *checkpoint.Checkpoint {
		return &checkpoint.Checkpoint{ID: id, ThreadID: "t", ParentID: parent,
			Channels: []checkpoint.Channel{{Name: "list", Version: version, Value: []byte(value)}}}
	}
	require.NoError(t, a.Put(t.Context(), list("0001", "", 1, `["a"]`)))
	require.NoError(t, b.DeleteThread(t.Context(), "t"))
	require.NoError(t, b.Put(t.Context(), list("0001", "", 1, `["other"]`)))

	require.NoError(t, a.Put(t.Context(), list("0002", "0001", 2, `["a","b"]`)))
	got, err := b.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, "0002", got.ID)
	require.JSONEq(t, `["a","b"]`, string(got.Value("list")))
}

func TestPutAfterAnotherSaverWroteTheThreadIsAConflict(t *testing.T) {
	schema := freshSchema(t)
	a, b := open(t, schema), open(t, schema)
	require.NoError(t, a.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)))
	require.NoError(t, b.Put(t.Context(), cpOf("t", "0002", "0001", 2, `2`)))
	err := a.Put(t.Context(), cpOf("t", "0003", "0001", 3, `3`))
	c, ok := errors.AsType[*checkpoint.ConflictError](err)
	require.True(t, ok, "want a *checkpoint.ConflictError, got %v", err)
	require.Equal(t, "0002", c.LatestID)
	requireLatest(t, a, "t", "0002")
}

// TestDeleteThreadWaitsForAPutInFlight: a Put that read the blobs its
// deltas build on (the long way reads them before writing) holds its
// thread and namespace's Put lock until it commits; a DeleteThread takes
// the Put lock of every namespace of the thread before it deletes, so it
// cannot delete those blobs between the Put's read and its write (which
// would leave a delta without its base).
func TestDeleteThreadWaitsForAPutInFlight(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	thread := fmt.Sprintf("delete-put-%d", time.Now().UnixNano())
	require.NoError(t, s.Put(t.Context(), cpOf(thread, "0001", "", 1, `1`)))
	inner := cpOf(thread, "0001", "", 1, `1`)
	inner.Namespace = "inner"
	require.NoError(t, s.Put(t.Context(), inner))

	for _, ns := range []string{"", "inner"} {
		t.Run("namespace "+ns, func(t *testing.T) {
			// The test holds the namespace's Put lock, as a Put in flight does.
			tx, err := connect(t, schema).Begin(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, postgres.ThreadLockKey(thread, ns))
			require.NoError(t, err)
			done, errc := make(chan struct{}), make(chan error, 1)
			go func() {
				defer close(done)
				errc <- s.DeleteThread(context.Background(), thread)
			}()
			waitForLock(t, connect(t, schema), postgres.ThreadLockKey(thread, ns), done, "DeleteThread")
			require.NoError(t, tx.Commit(t.Context()))
			require.NoError(t, <-errc)
			_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: thread})
			require.ErrorIs(t, err, checkpoint.ErrNotFound)
			// Put the thread back for the next namespace.
			require.NoError(t, s.Put(t.Context(), cpOf(thread, "0001", "", 1, `1`)))
			inner := cpOf(thread, "0001", "", 1, `1`)
			inner.Namespace = "inner"
			require.NoError(t, s.Put(t.Context(), inner))
		})
	}
}
