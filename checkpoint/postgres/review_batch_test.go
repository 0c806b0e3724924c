package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// Review of the batch with a prepended lock statement (group.go,
// orderLocks and sender.commit): each write's error is its own, a failure
// of the lock statement is every write's, keys with the sign bit set are
// taken in signed order, and fencing holds for a batch that waited in the
// lock statement.

// reviewLockSQL is the saver's lockThread statement: orderLocks takes the
// key of a write that queues it as a Put lock.
const reviewLockSQL = `SELECT pg_advisory_xact_lock($1)`

func reviewCode(err error) string {
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pe.Code
	}
	return ""
}

func TestReviewBatchWithLockStatementGivesEachWriteItsOwnError(t *testing.T) {
	// Three writes whose Put locks are out of order (the middle key has
	// the sign bit set): the batch gets a first statement; the bad write
	// (a division by zero after its lock) gets its error alone, wherever
	// it is; the others land, in a batch sent again without it.
	for bad := range 3 {
		t.Run(fmt.Sprintf("bad=%d", bad), func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			conn := connect(t, schema)
			_, err := conn.Exec(t.Context(), `CREATE TABLE review_marks (w int PRIMARY KEY)`)
			require.NoError(t, err)
			base := time.Now().UnixNano()
			keys := []int64{base + 2, -(base + 1), base}
			h := hold(t, s, schema)
			var errs []<-chan error
			for i, k := range keys {
				errs = append(errs, groupcommittest.Enqueue(t, s, i+1, func() error {
					return s.DoInGroup(t.Context(), func(b *pgx.Batch) {
						b.Queue(reviewLockSQL, k)
						if i == bad {
							b.Queue(`SELECT 1/0`)
						} else {
							b.Queue(`INSERT INTO review_marks VALUES ($1)`, i)
						}
					})
				}))
			}
			h.end(t)
			var landed []int
			for i, errc := range errs {
				err := <-errc
				if i == bad {
					require.Equal(t, "22012", reviewCode(err), "the bad write's own error: %v", err)
					continue
				}
				require.NoError(t, err, "write %d", i)
				landed = append(landed, i)
			}
			rows, err := conn.Query(t.Context(), `SELECT w FROM review_marks ORDER BY w`)
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowTo[int])
			require.NoError(t, err)
			require.Equal(t, landed, got)
		})
	}
}

func TestReviewFailedLockStatementIsEveryWritesError(t *testing.T) {
	// The batch's first statement (the locks in order) waits for a key the
	// test holds; while it waits it holds the key with the sign bit set,
	// which comes first in signed order though it came second in the
	// batch. Cancelling it fails every write of the batch, and none lands.
	cases := []struct {
		name string
		keys func(base int64) [][]int64 // each write's Put lock keys
	}{
		{"signed order", func(b int64) [][]int64 { return [][]int64{{b}, {-b}} }},
		{"duplicates", func(b int64) [][]int64 { return [][]int64{{b, -b}, {b}, {-b, b}} }},
		{"lowest key", func(b int64) [][]int64 { return [][]int64{{b}, {-1 << 63}} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			name := fmt.Sprintf("agt-rev-cancel-%d", time.Now().UnixNano())
			s := openNamed(t, schema, name)
			conn := connect(t, schema)
			_, err := conn.Exec(t.Context(), `CREATE TABLE review_marks (w int PRIMARY KEY)`)
			require.NoError(t, err)
			base := time.Now().UnixNano()
			writes := c.keys(base)
			gate, err := connect(t, schema).Begin(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = gate.Rollback(context.Background()) })
			_, err = gate.Exec(t.Context(), reviewLockSQL, base)
			require.NoError(t, err)

			h := hold(t, s, schema)
			var errs []<-chan error
			for i, ks := range writes {
				errs = append(errs, groupcommittest.Enqueue(t, s, i+1, func() error {
					return s.DoInGroup(t.Context(), func(b *pgx.Batch) {
						for _, k := range ks {
							b.Queue(reviewLockSQL, k)
						}
						b.Queue(`INSERT INTO review_marks VALUES ($1)`, i)
					})
				}))
			}
			h.end(t)
			// The writes' errors, kept for the end; done closes once all
			// returned.
			results, done := make([]error, len(errs)), make(chan struct{})
			go func() {
				defer close(done)
				for i, errc := range errs {
					results[i] = <-errc
				}
			}()
			var low int64 // the lowest key of the batch, taken first
			for _, ks := range writes {
				for _, k := range ks {
					low = min(low, k)
				}
			}
			waitFor(t, "the lock statement waits for the gate's key", func() bool {
				_, w := advisoryLock(t, conn, name, base)
				return w
			}, done)
			granted, _ := advisoryLock(t, conn, name, low)
			require.True(t, granted, "the lowest key, in signed order, is held while the batch waits for the gate's")
			var query string
			require.NoError(t, conn.QueryRow(t.Context(), `SELECT query FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, name).Scan(&query))
			require.Contains(t, query, "unnest($1::bigint[])", "the batch waits in its lock statement")
			_, err = conn.Exec(t.Context(), `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, name)
			require.NoError(t, err)
			<-done
			for i, err := range results {
				require.Equal(t, "57014", reviewCode(err), "write %d gets the lock statement's error: %v", i, err)
			}
			var n int
			require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM review_marks`).Scan(&n))
			require.Zero(t, n)
			require.NoError(t, gate.Commit(t.Context()))
			// The saver goes on.
			require.NoError(t, s.Put(t.Context(), cpOf("after", "0001", "", 1, `1`)))
		})
	}
}

// fencedBatchSetup is a saver s on its own schema, whose connections are
// named name, holding thread f under lease (checkpoint 0001 written), and
// two more threads x and y; conn watches its locks.
type fencedBatchSetup struct {
	schema, name string
	s            *postgres.Saver
	f, x, y      string
	lease        checkpoint.Lease
	conn         *pgx.Conn
}

func newFencedBatchSetup(t *testing.T) *fencedBatchSetup {
	t.Helper()
	schema := freshSchema(t)
	name := fmt.Sprintf("agt-rev-fence-%d", time.Now().UnixNano())
	s := openNamed(t, schema, name)
	nonce := time.Now().UnixNano()
	f, x, y := fmt.Sprintf("f-%d", nonce), fmt.Sprintf("x-%d", nonce), fmt.Sprintf("y-%d", nonce)
	lease, err := s.AcquireLease(t.Context(), f, "old", time.Minute)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Fenced(s, lease).Put(t.Context(), cpOf(f, "0001", "", 1, `1`)))
	return &fencedBatchSetup{schema: schema, name: name, s: s, f: f, x: x, y: y, lease: lease, conn: connect(t, schema)}
}

// queueBatch has one batch of the group make a Put of x, w through the
// fenced view of f, and a Put of y, in that order.
func (b *fencedBatchSetup) queueBatch(t *testing.T, w fencedWrite) (px, pf, py <-chan error) {
	t.Helper()
	h := hold(t, b.s, b.schema)
	px = groupcommittest.Enqueue(t, b.s, 1, func() error { return b.s.Put(t.Context(), cpOf(b.x, "0001", "", 1, `1`)) })
	pf = groupcommittest.Enqueue(t, b.s, 2, func() error { return w.write(context.Background(), checkpoint.Fenced(b.s, b.lease), b.f) })
	py = groupcommittest.Enqueue(t, b.s, 3, func() error { return b.s.Put(t.Context(), cpOf(b.y, "0001", "", 1, `1`)) })
	h.end(t)
	return px, pf, py
}

func TestReviewFencedWriteInABatchThatWaitedInItsLockStatement(t *testing.T) {
	// A batch of three callers: a Put of thread x, a fenced write of thread
	// f, a Put of thread y. The fenced write's lease lock comes after x's
	// Put lock: the batch takes its locks first, the lease's first.
	writes := []fencedWrite{fencedPut, fencedPutWrites, fencedPutBatch}
	for _, w := range writes {
		t.Run(w.name+"/takeover first: refused", func(t *testing.T) {
			b := newFencedBatchSetup(t)
			schema, name, s, f, x, y, lease, conn := b.schema, b.name, b.s, b.f, b.x, b.y, b.lease, b.conn

			// A takeover in flight, as AcquireLease makes it.
			tx := takeoverInFlight(t, schema, f)

			px, pf, py := b.queueBatch(t, w)
			waitFor(t, "the batch waits for the lease lock", func() bool {
				_, w := advisoryLock(t, conn, name, postgres.LeaseLockKey(f))
				return w
			})
			held, _ := advisoryLock(t, conn, name, postgres.ThreadLockKey(x, ""))
			require.False(t, held, "the lease lock comes before x's Put lock")
			require.NoError(t, tx.Commit(t.Context()))

			require.NoError(t, <-px)
			require.NoError(t, <-py)
			err := <-pf
			fe, ok := errors.AsType[*checkpoint.FencedError](err)
			require.True(t, ok, "want a *checkpoint.FencedError, got %v", err)
			require.Equal(t, "new", fe.Holder)
			require.Equal(t, lease.Fence+1, fe.Current)
			requireLatest(t, s, x, "0001")
			requireLatest(t, s, y, "0001")
			got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: f})
			require.NoError(t, err)
			require.Equal(t, "0001", got.ID, "the refused write changed nothing")
			require.Empty(t, got.PendingWrites)
		})

		t.Run(w.name+"/batch first: the takeover waits", func(t *testing.T) {
			b := newFencedBatchSetup(t)
			schema, name, s, f, x, y, lease, conn := b.schema, b.name, b.s, b.f, b.x, b.y, b.lease, b.conn
			other := open(t, schema)

			// The test holds x's and y's Put locks: the batch takes the
			// lease lock, then waits there.
			gate, err := connect(t, schema).Begin(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = gate.Rollback(context.Background()) })
			_, err = gate.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)`,
				postgres.ThreadLockKey(x, ""), postgres.ThreadLockKey(y, ""))
			require.NoError(t, err)

			px, pf, py := b.queueBatch(t, w)
			waitFor(t, "the batch holds the lease lock and waits for a Put lock", func() bool {
				g, _ := advisoryLock(t, conn, name, postgres.LeaseLockKey(f))
				return g && waitingApps(t, conn, name) == 1
			})

			// The lease expires; another saver takes it over: it waits for
			// the batch in flight.
			takeover := expireAndTakeOver(t, schema, other, f)
			require.NoError(t, gate.Commit(t.Context()))

			require.NoError(t, <-px)
			require.NoError(t, <-pf, "made while the lease was current: lands before the takeover")
			require.NoError(t, <-py)
			taken, err := takeover()
			require.NoError(t, err)
			require.Greater(t, taken.Fence, lease.Fence)
			got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: f})
			require.NoError(t, err)
			if w.name == "put-writes" {
				require.Len(t, got.PendingWrites, 1)
			} else {
				require.Equal(t, "0002", got.ID)
			}
			err = checkpoint.Fenced(s, lease).Put(t.Context(), cpOf(f, "0003", got.ID, 3, `3`))
			require.ErrorIs(t, err, checkpoint.ErrLeaseLost, "the old holder's next write")
		})
	}
}
