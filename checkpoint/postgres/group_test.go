package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// Group commit (group.go): the tests hold a batch of the group in flight
// (hold: its statement waits for an advisory lock the test holds), queue
// writes behind it (queue, which waits until each write is queued, so the
// batch keeps that order), then let the held batch end: the queued writes
// are sent as one batch.

var holdKey = time.Now().UnixNano() // an advisory lock no other test takes

// held is a write of the group's that stays in flight until released.
type held struct {
	tx   pgx.Tx
	done chan error
}

// hold starts a write that stays in flight until released.
func hold(t *testing.T, s *postgres.Saver, schema string) *held {
	t.Helper()
	key := holdKey
	holdKey++
	tx, err := connect(t, schema).Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, key)
	require.NoError(t, err)
	h := &held{tx: tx, done: make(chan error, 1)}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.done <- s.DoInGroup(context.Background(), func(b *pgx.Batch) { b.Queue(`SELECT pg_advisory_xact_lock($1)`, key) })
	}()
	waitForLock(t, connect(t, schema), key, returned, "the held write")
	return h
}

// end lets the held batch commit.
func (h *held) end(t *testing.T) {
	t.Helper()
	require.NoError(t, h.tx.Commit(t.Context()))
	require.NoError(t, <-h.done)
}

func TestGroupCommitRefusesOnlyTheBadWriteOfABatch(t *testing.T) {
	// Each case stores what its bad write needs, then queues four good
	// writes (threads g0–g3) around the bad one behind a held batch: the
	// bad write gets its own error and leaves nothing behind; the good
	// ones land. The bad write's error rolls its batch back: the others
	// are sent again, in a batch without it.
	cases := []struct {
		name  string
		setup func(t *testing.T, s *postgres.Saver, schema string) (bad func() error, check func(t *testing.T, err error))
	}{
		{"parent-conflict", func(t *testing.T, s *postgres.Saver, _ string) (func() error, func(*testing.T, error)) {
			require.NoError(t, s.Put(t.Context(), cpOf("c", "0001", "", 1, `1`)))
			return func() error { return s.Put(t.Context(), cpOf("c", "0002", "", 2, `2`)) },
				func(t *testing.T, err error) {
					_, ok := errors.AsType[*checkpoint.ConflictError](err)
					require.True(t, ok, "want a *checkpoint.ConflictError, got %v", err)
					requireLatest(t, s, "c", "0001")
				}
		}},
		{"version-conflict", func(t *testing.T, s *postgres.Saver, schema string) (func() error, func(*testing.T, error)) {
			// A value stored under version 1 by a write that left no
			// checkpoint (as a fork's of another process could).
			_, err := connect(t, schema).Exec(t.Context(), `INSERT INTO agentgraph_blobs (thread_id, ns, channel, version, depth, size, hash, data)
				VALUES ('v', '', 'a', 1, 0, 1, sha256('1'), '1')`)
			require.NoError(t, err)
			return func() error { return s.Put(t.Context(), cpOf("v", "0001", "", 1, `"other"`)) },
				func(t *testing.T, err error) {
					_, ok := errors.AsType[*checkpoint.VersionConflictError](err)
					require.True(t, ok, "want a *checkpoint.VersionConflictError, got %v", err)
					_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: "v"})
					require.ErrorIs(t, err, checkpoint.ErrNotFound)
				}
		}},
		{"fenced-stale-lease", func(t *testing.T, s *postgres.Saver, _ string) (func() error, func(*testing.T, error)) {
			old, err := s.AcquireLease(t.Context(), "f", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(s, old).Put(t.Context(), cpOf("f", "0001", "", 1, `1`)))
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			cur, err := s.AcquireLease(t.Context(), "f", "new", time.Minute)
			require.NoError(t, err)
			return func() error { return checkpoint.Fenced(s, old).Put(t.Context(), cpOf("f", "0002", "0001", 2, `2`)) },
				func(t *testing.T, err error) {
					f, ok := errors.AsType[*checkpoint.FencedError](err)
					require.True(t, ok, "want a *checkpoint.FencedError, got %v", err)
					require.Equal(t, cur.Fence, f.Current)
					requireLatest(t, s, "f", "0001")
				}
		}},
		{"fenced-stale-pending-writes", func(t *testing.T, s *postgres.Saver, _ string) (func() error, func(*testing.T, error)) {
			old, err := s.AcquireLease(t.Context(), "w", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			require.NoError(t, s.Put(t.Context(), cpOf("w", "0001", "", 1, `1`)))
			ref := checkpoint.Ref{ThreadID: "w", ID: "0001"}
			return func() error {
					return checkpoint.Fenced(s, old).PutWrites(t.Context(), ref, []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}})
				},
				func(t *testing.T, err error) {
					require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
					got, err := s.Get(t.Context(), ref)
					require.NoError(t, err)
					require.Empty(t, got.PendingWrites)
				}
		}},
		{"database-error", func(t *testing.T, s *postgres.Saver, _ string) (func() error, func(*testing.T, error)) {
			return func() error {
					return s.DoInGroup(t.Context(), func(b *pgx.Batch) { b.Queue(`INSERT INTO agentgraph_checkpoints (thread_id) VALUES ('x')`) })
				},
				func(t *testing.T, err error) {
					require.ErrorContains(t, err, "not-null")
					_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: "x"})
					require.ErrorIs(t, err, checkpoint.ErrNotFound)
				}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			bad, check := c.setup(t, s, schema)
			h := hold(t, s, schema)
			good := func(i int) func() error {
				return func() error {
					return s.Put(t.Context(), cpOf(fmt.Sprintf("g%d", i), fmt.Sprintf("%04d", i+1), "", 1, `1`))
				}
			}
			var sent [2]int // times the writes around the bad one were queued in a batch
			count := func(i int) func() error {
				return func() error {
					return s.DoInGroup(t.Context(), func(b *pgx.Batch) {
						sent[i]++
						b.Queue(`SELECT 1`)
					})
				}
			}
			first := groupcommittest.Enqueue(t, s, 1, count(0))
			errs := []<-chan error{groupcommittest.Enqueue(t, s, 2, good(0)), groupcommittest.Enqueue(t, s, 3, good(1))}
			badErr := groupcommittest.Enqueue(t, s, 4, bad)
			errs = append(errs, groupcommittest.Enqueue(t, s, 5, good(2)), groupcommittest.Enqueue(t, s, 6, good(3)))
			last := groupcommittest.Enqueue(t, s, 7, count(1))
			h.end(t)
			require.NoError(t, <-first)
			require.NoError(t, <-last)
			require.Equal(t, [2]int{2, 2}, sent, "the batch is sent twice: with the bad write, then without")
			for i, errc := range errs {
				require.NoError(t, <-errc, "good write %d", i)
				requireLatest(t, s, fmt.Sprintf("g%d", i), fmt.Sprintf("%04d", i+1))
			}
			check(t, <-badErr)
		})
	}
}

func TestGroupCommitSharesOneTransaction(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	h := hold(t, s, schema)
	const n = 20
	txids := make([]int64, n)
	var errs []<-chan error
	for i := range n {
		errs = append(errs, groupcommittest.Enqueue(t, s, i+1, func() error {
			return s.DoInGroup(t.Context(), func(b *pgx.Batch) {
				b.Queue(`SELECT txid_current()`).QueryRow(func(row pgx.Row) error { return row.Scan(&txids[i]) })
			})
		}))
	}
	h.end(t)
	for _, errc := range errs {
		require.NoError(t, <-errc)
	}
	for i := range txids {
		require.Equal(t, txids[0], txids[i], "write %d committed in another transaction", i)
	}
}

func TestGroupCommitKeepsTheOrderOfOneThread(t *testing.T) {
	// Two callers write one thread in one batch, in the order they
	// arrived: two checkpoints that both start the thread (the first
	// lands, the second is a conflict), and two pending writes of one
	// task at index -1 (the last replaces the first).
	for _, aFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("a-first=%v", aFirst), func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			require.NoError(t, s.Put(t.Context(), cpOf("w", "0001", "", 1, `1`)))
			ref := checkpoint.Ref{ThreadID: "w", ID: "0001"}
			putA := func() error { return s.Put(t.Context(), cpOf("t", "000a", "", 1, `"a"`)) }
			putB := func() error { return s.Put(t.Context(), cpOf("t", "000b", "", 1, `"b"`)) }
			writeA := func() error {
				return s.PutWrites(t.Context(), ref, []checkpoint.Write{{TaskID: "x", Idx: -1, Channel: "a", Value: []byte(`"a"`)}})
			}
			writeB := func() error {
				return s.PutWrites(t.Context(), ref, []checkpoint.Write{{TaskID: "x", Idx: -1, Channel: "a", Value: []byte(`"b"`)}})
			}
			h := hold(t, s, schema)
			var pa, pb, wa, wb <-chan error
			if aFirst {
				pa, wa = groupcommittest.Enqueue(t, s, 1, putA), groupcommittest.Enqueue(t, s, 2, writeA)
				pb, wb = groupcommittest.Enqueue(t, s, 3, putB), groupcommittest.Enqueue(t, s, 4, writeB)
			} else {
				pb, wb = groupcommittest.Enqueue(t, s, 1, putB), groupcommittest.Enqueue(t, s, 2, writeB)
				pa, wa = groupcommittest.Enqueue(t, s, 3, putA), groupcommittest.Enqueue(t, s, 4, writeA)
			}
			h.end(t)
			require.NoError(t, <-wa)
			require.NoError(t, <-wb)
			first, second, latest, last := pa, pb, "000a", `"b"`
			if !aFirst {
				first, second, latest, last = pb, pa, "000b", `"a"`
			}
			require.NoError(t, <-first)
			_, ok := errors.AsType[*checkpoint.ConflictError](<-second)
			require.True(t, ok, "the second start of the thread is a conflict")
			requireLatest(t, s, "t", latest)
			got, err := s.Get(t.Context(), ref)
			require.NoError(t, err)
			require.Len(t, got.PendingWrites, 1)
			require.Equal(t, last, string(got.PendingWrites[0].Value), "the pending write that arrived last")
		})
	}
}

func TestGroupCommitKeepsEveryThreadsOrderUnderConcurrency(t *testing.T) {
	// Many threads at once, each a chain of Put, PutWrites and Get (see
	// writeThread): every write lands, in its thread's order.
	threads, steps := 64, 12
	if testing.Short() {
		threads = 16
	}
	s := open(t, freshSchema(t))
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for i := range threads {
		wg.Go(func() { errs[i] = writeThread(t.Context(), s, fmt.Sprintf("c%d", i), steps) })
	}
	wg.Wait()
	for i := range threads {
		require.NoError(t, errs[i], "thread c%d", i)
	}
}

func TestGroupCommitDropsAQueuedWriteWhoseContextIsDone(t *testing.T) {
	schema := freshSchema(t)
	s := open(t, schema)
	h := hold(t, s, schema)
	ctx, cancel := context.WithCancel(t.Context())
	errc := groupcommittest.Enqueue(t, s, 1, func() error { return s.Put(ctx, cpOf("t", "0001", "", 1, `1`)) })
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Zero(t, s.QueuedWrites())
	h.end(t)
	_, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

func TestCloseFailsQueuedWritesAndWaitsForTheBatchInFlight(t *testing.T) {
	schema := freshSchema(t)
	s, err := postgres.Open(t.Context(), pgdbtest.URL(t), postgres.WithSchema(schema))
	require.NoError(t, err)
	h := hold(t, s, schema)
	errc := groupcommittest.Enqueue(t, s, 1, func() error { return s.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)) })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	require.ErrorContains(t, <-errc, "saver closed")
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a batch was in flight", err)
	default:
	}
	require.True(t, s.Closing())
	h.end(t)
	require.NoError(t, <-closed)
	require.ErrorContains(t, s.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)), "saver closed")
}

func TestGroupCommitLeavesThePoolAConnection(t *testing.T) {
	// The group keeps a connection only while its batches follow each
	// other: with a pool of one, concurrent threads' reads and lease
	// operations still get it between batches.
	s := open(t, freshSchema(t), postgres.WithMaxConns(1))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			thread := fmt.Sprintf("one%d", i)
			lease, err := s.AcquireLease(t.Context(), thread, "h", time.Minute)
			if err != nil {
				errs[i] = err
				return
			}
			if errs[i] = writeThread(t.Context(), s, thread, 5); errs[i] == nil {
				errs[i] = s.ReleaseLease(t.Context(), lease)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "thread one%d", i)
	}
}
