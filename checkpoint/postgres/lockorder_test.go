package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// openNamed opens a Saver on schema whose connections carry name as their
// application_name and never let the server break a deadlock, so that one
// stays for the test to see.
func openNamed(t *testing.T, schema, name string) *postgres.Saver {
	t.Helper()
	u, err := url.Parse(pgdbtest.URL(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", name)
	q.Set("deadlock_timeout", "600000") // ms
	u.RawQuery = q.Encode()
	s, err := postgres.Open(t.Context(), u.String(), postgres.WithSchema(schema), postgres.WithMaxConns(4))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// blockedBy reports whether a backend of application a waits for a lock
// a backend of application b holds.
func blockedBy(t *testing.T, conn *pgx.Conn, a, b string) bool {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity AS w
		WHERE w.application_name = $1 AND w.wait_event_type = 'Lock' AND EXISTS (
			SELECT 1 FROM pg_stat_activity AS h WHERE h.application_name = $2 AND h.pid = ANY (pg_blocking_pids(w.pid)))`, a, b).Scan(&n))
	return n > 0
}

// waitingApps counts the applications among names with a backend waiting
// for a lock.
func waitingApps(t *testing.T, conn *pgx.Conn, names ...string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(DISTINCT application_name) FROM pg_stat_activity
		WHERE application_name = ANY ($1) AND wait_event_type = 'Lock'`, names).Scan(&n))
	return n
}

// advisoryLock reports whether a backend of application app holds
// (granted) and waits for (waiting) the advisory lock key.
func advisoryLock(t *testing.T, conn *pgx.Conn, app string, key int64) (granted, waiting bool) {
	t.Helper()
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT coalesce(bool_or(l.granted), false), coalesce(bool_or(NOT l.granted), false)
		FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
		WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.objsubid = 1
		AND l.classid::bigint = ($2::bigint >> 32) & 4294967295 AND l.objid::bigint = $2::bigint & 4294967295`, app, key).Scan(&granted, &waiting))
	return granted, waiting
}

// waitFor polls cond until it holds; it fails the test if one of
// the returned channels is closed first (what should wait returned).
func waitFor(t *testing.T, what string, cond func() bool, returned ...<-chan struct{}) {
	t.Helper()
	for !cond() {
		for _, r := range returned {
			select {
			case <-r:
				t.Fatalf("%s: returned before the condition held", what)
			default:
			}
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// collectUnlessDeadlocked waits for n results on errc, failing the test, after
// ending both applications' backends, if the two wait for each other.
func collectUnlessDeadlocked(t *testing.T, watch *pgx.Conn, errc <-chan error, n int, nameA, nameB string) []error {
	t.Helper()
	var results []error
	for len(results) < n {
		select {
		case err := <-errc:
			results = append(results, err)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
			if blockedBy(t, watch, nameA, nameB) && blockedBy(t, watch, nameB, nameA) {
				var locks []string
				rows, err := watch.Query(t.Context(), `SELECT a.application_name || ': ' || l.locktype || ' ' || l.mode || ' granted=' || l.granted
					FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
					WHERE a.application_name = ANY ($1) AND l.locktype IN ('advisory', 'transactionid') ORDER BY 1`, []string{nameA, nameB})
				require.NoError(t, err)
				locks, err = pgx.CollectRows(rows, pgx.RowTo[string])
				require.NoError(t, err)
				_, err = watch.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY ($1)`,
					[]string{nameA, nameB})
				require.NoError(t, err)
				t.Fatalf("the two savers' transactions wait for each other: a deadlock; their locks:\n%v", locks)
			}
		}
	}
	return results
}

func TestBatchesOfTwoSaversWritingTheSameThreadsInOppositeOrdersDoNotDeadlock(t *testing.T) {
	// Two processes' batches may hold Puts of the same threads (a stale
	// holder's write beside its successor's; several threads' Puts in one
	// PutBatch). Here saver a's batch writes t1 then t2 and saver b's t2
	// then t1, both held at their first lock until the gate lets them go
	// together: taking the locks in their own orders, a would hold t1 and
	// wait for t2 while b held t2 and waited for t1.
	schema := freshSchema(t)
	nonce := time.Now().UnixNano()
	nameA, nameB := fmt.Sprintf("agt-lockorder-a-%d", nonce), fmt.Sprintf("agt-lockorder-b-%d", nonce)
	a, b := openNamed(t, schema, nameA), openNamed(t, schema, nameB)
	t1, t2 := fmt.Sprintf("order-1-%d", nonce), fmt.Sprintf("order-2-%d", nonce)

	watch := connect(t, schema)
	gate, err := connect(t, schema).Begin(t.Context())
	require.NoError(t, err)
	_, err = gate.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)`,
		postgres.ThreadLockKey(t1, ""), postgres.ThreadLockKey(t2, ""))
	require.NoError(t, err)

	errc := make(chan error, 2)
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(doneA)
		errc <- a.PutBatch(context.Background(), []checkpoint.Op{
			{Checkpoint: cpOf(t1, "0001", "", 1, `"a"`)}, {Checkpoint: cpOf(t2, "0001", "", 1, `"a"`)},
		})
	}()
	go func() {
		defer close(doneB)
		errc <- b.PutBatch(context.Background(), []checkpoint.Op{
			{Checkpoint: cpOf(t2, "0002", "", 1, `"b"`)}, {Checkpoint: cpOf(t1, "0002", "", 1, `"b"`)},
		})
	}()
	waitFor(t, "both batches wait at the gate", func() bool { return waitingApps(t, watch, nameA, nameB) == 2 }, doneA, doneB)
	require.NoError(t, gate.Commit(t.Context()))

	results := collectUnlessDeadlocked(t, watch, errc, 2, nameA, nameB)
	// Whichever batch took the first lock lands whole; the other starts
	// the same threads again and is refused whole.
	var landed int
	for _, err := range results {
		if err == nil {
			landed++
			continue
		}
		require.ErrorIs(t, err, checkpoint.ErrConflict)
	}
	require.Equal(t, 1, landed, "one batch lands: %v", results)
	got1, err := a.Get(t.Context(), checkpoint.Ref{ThreadID: t1})
	require.NoError(t, err)
	got2, err := a.Get(t.Context(), checkpoint.Ref{ThreadID: t2})
	require.NoError(t, err)
	require.Equal(t, got1.ID, got2.ID, "both threads hold the same batch's checkpoint")
}
