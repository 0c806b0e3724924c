package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
)

// Review of f8681a0 (orderLocks drops each write's own lock statements
// when it prepends the statement that takes every lock in order, and maps
// a failed statement back to its write with origin): real Puts,
// PutWrites and PutBatches of one group-commit batch whose locks are out
// of order (a fenced write's shared lease lock comes after another
// write's exclusive Put lock), some failing at their server-side check.

func reviewInOneBatch(t *testing.T, s *postgres.Saver, schema string, writes ...func() error) []error {
	t.Helper()
	h := hold(t, s, schema)
	return groupcommittest.InOneBatch(t, s, func() { h.end(t) }, writes...)
}

func reviewAs[E error](t *testing.T, err error, what string) E {
	t.Helper()
	e, ok := errors.AsType[E](err)
	require.True(t, ok, "%s: want a %T, got %v", what, *new(E), err)
	return e
}

func reviewValue(t *testing.T, s checkpoint.Saver, thread, id, want string) {
	t.Helper()
	got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: id})
	require.NoError(t, err, "thread %s id %s", thread, id)
	require.Equal(t, want, string(got.Value("a")), "thread %s id %s", thread, id)
}

func TestReviewOutOfOrderBatchGivesEachFailedCheckItsOwnTypedError(t *testing.T) {
	// The bad write sits at each place of the batch in turn; every write
	// is on the one-round-trip path (its parent is the cached one), so the
	// bad ones fail at their check statement inside the batch.
	for _, bad := range []string{"stale-parent", "fenced-put", "fenced-writes", "put-batch"} {
		for place := range 4 {
			t.Run(fmt.Sprintf("%s/place=%d", bad, place), func(t *testing.T) {
				schema := freshSchema(t)
				s, other := open(t, schema), open(t, schema)
				nonce := time.Now().UnixNano()
				th := func(name string) string { return fmt.Sprintf("rev-origin-%s-%d", name, nonce) }

				// f: leased; the stale holder writes through s.
				old, err := s.AcquireLease(t.Context(), th("f"), "old", time.Minute)
				require.NoError(t, err)
				require.NoError(t, s.ReleaseLease(t.Context(), old))
				cur, err := s.AcquireLease(t.Context(), th("f"), "new", time.Minute)
				require.NoError(t, err)
				stale, fresh := checkpoint.Fenced(s, old), checkpoint.Fenced(s, cur)
				require.NoError(t, fresh.Put(t.Context(), cpOf(th("f"), "0001", "", 1, `[1]`)))
				// c: s caches 0001, another saver moved the thread on.
				require.NoError(t, s.Put(t.Context(), cpOf(th("c"), "0001", "", 1, `[1]`)))
				require.NoError(t, other.Put(t.Context(), cpOf(th("c"), "0002", "0001", 2, `[1,2]`)))
				// p: a thread a PutBatch writes with c.
				require.NoError(t, s.Put(t.Context(), cpOf(th("p"), "0001", "", 1, `1`)))
				for i := range 3 {
					require.NoError(t, s.Put(t.Context(), cpOf(th(fmt.Sprint("g", i)), "0001", "", 1, `[1]`)))
				}
				good := func(i int) func() error {
					return func() error { return s.Put(t.Context(), cpOf(th(fmt.Sprint("g", i)), "0002", "0001", 2, `[1,2]`)) }
				}
				var badWrite func() error
				var check func(t *testing.T, err error)
				switch bad {
				case "stale-parent":
					badWrite = func() error { return s.Put(t.Context(), cpOf(th("c"), "0003", "0001", 3, `[1,3]`)) }
					check = func(t *testing.T, err error) {
						ce := reviewAs[*checkpoint.ConflictError](t, err, bad)
						require.Equal(t, "0002", ce.LatestID)
						requireLatest(t, s, th("c"), "0002")
					}
				case "fenced-put":
					badWrite = func() error { return stale.Put(t.Context(), cpOf(th("f"), "0002", "0001", 2, `[1,2]`)) }
					check = func(t *testing.T, err error) {
						fe := reviewAs[*checkpoint.FencedError](t, err, bad)
						require.Equal(t, cur.Fence, fe.Current)
						requireLatest(t, s, th("f"), "0001")
					}
				case "fenced-writes":
					badWrite = func() error {
						return stale.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th("f"), ID: "0001"}, []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}})
					}
					check = func(t *testing.T, err error) {
						reviewAs[*checkpoint.FencedError](t, err, bad)
						require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
						// The stale write (task "t") is checked absent below.
					}
				case "put-batch":
					// Two threads, the second refused at its check: none of
					// the batch stays.
					badWrite = func() error {
						return s.PutBatch(t.Context(), []checkpoint.Op{
							{Checkpoint: cpOf(th("p"), "0002", "0001", 2, `2`)},
							{Checkpoint: cpOf(th("c"), "0003", "0001", 3, `[1,3]`)},
						})
					}
					check = func(t *testing.T, err error) {
						reviewAs[*checkpoint.ConflictError](t, err, bad)
						requireLatest(t, s, th("p"), "0001")
						requireLatest(t, s, th("c"), "0002")
					}
				}
				{
					{
						writes := []func() error{
							good(0),
							// The current holder's fenced write: its shared
							// lease lock comes after good(0)'s exclusive lock,
							// so the batch is reordered.
							func() error {
								return fresh.PutWrites(t.Context(), checkpoint.Ref{ThreadID: th("f"), ID: "0001"}, []checkpoint.Write{{TaskID: fmt.Sprint("fresh", place), Channel: "a", Value: []byte(`1`)}})
							},
							good(1),
							good(2),
						}
						writes = append(writes[:place], append([]func() error{badWrite}, writes[place:]...)...)
						errs := reviewInOneBatch(t, s, schema, writes...)
						for i, err := range errs {
							if i == place {
								check(t, err)
								continue
							}
							require.NoError(t, err, "write %d", i)
						}
						for i := range 3 {
							requireLatest(t, s, th(fmt.Sprint("g", i)), "0002")
							reviewValue(t, s, th(fmt.Sprint("g", i)), "0002", `[1,2]`)
						}
						got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: th("f"), ID: "0001"})
						require.NoError(t, err)
						var tasks []string
						for _, w := range got.PendingWrites {
							tasks = append(tasks, w.TaskID)
						}
						require.Contains(t, tasks, fmt.Sprint("fresh", place))
						require.NotContains(t, tasks, "t")
					}
				}
			})
		}
	}
}
