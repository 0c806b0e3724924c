package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// Group commit (group.go): the tests hold a transaction of the group in
// flight (hold), queue writes behind it (queue, which waits until each
// write is queued, so the batch keeps that order), then let the held
// transaction end: the queued writes are committed as one batch.

// held is a write of the group's that stays in its transaction until
// released.
type held struct {
	release chan struct{}
	done    chan error
}

// hold starts a write that keeps its transaction open until released.
func hold(t *testing.T, s *sqlite.Saver) *held {
	t.Helper()
	h := &held{release: make(chan struct{}), done: make(chan error, 1)}
	started := make(chan struct{})
	go func() {
		h.done <- s.DoInGroup(context.Background(), func(context.Context, *sql.Tx) error {
			close(started)
			<-h.release
			return nil
		})
	}()
	<-started
	return h
}

// end lets the held transaction commit.
func (h *held) end(t *testing.T) {
	t.Helper()
	close(h.release)
	require.NoError(t, <-h.done)
}

func openFile(t *testing.T) *sqlite.Saver {
	t.Helper()
	return open(t, filepath.Join(t.TempDir(), "checkpoints.db"))
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

func TestGroupCommitRefusesOnlyTheBadWriteOfABatch(t *testing.T) {
	// Each case stores what its bad write needs, then queues four good
	// writes (threads g0–g3) around the bad one behind a held transaction:
	// the bad write gets its own error and leaves nothing behind; the good
	// ones land, in the same batch.
	//
	// A refusal made before the write changed anything (conflict with the
	// parent, fenced lease, lease held) leaves the batch's transaction
	// going on: each write runs once. A refusal after a change (a version
	// conflict found once the row was written) and a database error abort
	// the transaction: the others run again, without the bad one.
	cases := []struct {
		name   string
		aborts bool
		setup  func(t *testing.T, s *sqlite.Saver) (bad func() error, check func(t *testing.T, err error))
	}{
		{"parent-conflict", false, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
			require.NoError(t, s.Put(t.Context(), cpOf("c", "0001", "", 1, `1`)))
			return func() error { return s.Put(t.Context(), cpOf("c", "0002", "", 2, `2`)) },
				func(t *testing.T, err error) {
					_, ok := errors.AsType[*checkpoint.ConflictError](err)
					require.True(t, ok, "want a *checkpoint.ConflictError, got %v", err)
					requireLatest(t, s, "c", "0001")
				}
		}},
		{"version-conflict", true, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
			require.NoError(t, s.Put(t.Context(), cpOf("v", "0001", "", 1, `1`)))
			// Its row is written before its value is found to conflict:
			// the row must not stay.
			return func() error { return s.Put(t.Context(), cpOf("v", "0002", "0001", 1, `"other"`)) },
				func(t *testing.T, err error) {
					_, ok := errors.AsType[*checkpoint.VersionConflictError](err)
					require.True(t, ok, "want a *checkpoint.VersionConflictError, got %v", err)
					requireLatest(t, s, "v", "0001")
				}
		}},
		{"fenced-stale-lease", false, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
			old, err := s.AcquireLease(t.Context(), "f", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			cur, err := s.AcquireLease(t.Context(), "f", "new", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(s, cur).Put(t.Context(), cpOf("f", "0001", "", 1, `1`)))
			return func() error { return checkpoint.Fenced(s, old).Put(t.Context(), cpOf("f", "0002", "0001", 2, `2`)) },
				func(t *testing.T, err error) {
					f, ok := errors.AsType[*checkpoint.FencedError](err)
					require.True(t, ok, "want a *checkpoint.FencedError, got %v", err)
					require.Equal(t, cur.Fence, f.Current)
					requireLatest(t, s, "f", "0001")
				}
		}},
		{"fenced-stale-pending-writes", false, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
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
		{"lease-held", false, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
			held, err := s.AcquireLease(t.Context(), "l", "first", time.Minute)
			require.NoError(t, err)
			return func() error {
					_, err := s.AcquireLease(t.Context(), "l", "second", time.Minute)
					return err
				},
				func(t *testing.T, err error) {
					h, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
					require.True(t, ok, "want a *checkpoint.LeaseHeldError, got %v", err)
					require.Equal(t, "first", h.Holder)
					_, err = s.RenewLease(t.Context(), held, time.Minute)
					require.NoError(t, err, "the first holder keeps its lease")
				}
		}},
		{"database-error", true, func(t *testing.T, s *sqlite.Saver) (func() error, func(*testing.T, error)) {
			// An error of the database, not a refusal: the batch's
			// transaction is aborted and committed again without it.
			return func() error {
					return s.DoInGroup(t.Context(), func(_ context.Context, tx *sql.Tx) error {
						if _, err := tx.Exec(`INSERT INTO checkpoints (thread_id) VALUES ('x')`); err != nil {
							return err
						}
						return nil
					})
				},
				func(t *testing.T, err error) {
					require.ErrorContains(t, err, "NOT NULL")
					_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: "x"})
					require.ErrorIs(t, err, checkpoint.ErrNotFound)
				}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openFile(t)
			bad, check := c.setup(t, s)
			h := hold(t, s)
			good := func(i int) func() error {
				return func() error {
					return s.Put(t.Context(), cpOf(fmt.Sprintf("g%d", i), fmt.Sprintf("%04d", i+1), "", 1, `1`))
				}
			}
			var runs [2]int
			count := func(i int) func() error {
				return func() error {
					return s.DoInGroup(t.Context(), func(context.Context, *sql.Tx) error {
						runs[i]++
						return nil
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
			want := [2]int{1, 1}
			if c.aborts {
				want = [2]int{2, 1} // the last comes after the bad one
			}
			require.Equal(t, want, runs, "times the writes around the bad one ran")
			for i, errc := range errs {
				require.NoError(t, <-errc, "good write %d", i)
				requireLatest(t, s, fmt.Sprintf("g%d", i), fmt.Sprintf("%04d", i+1))
			}
			check(t, <-badErr)
		})
	}
}

func TestGroupCommitSharesOneTransaction(t *testing.T) {
	s := openFile(t)
	h := hold(t, s)
	const n = 20
	txs := make([]*sql.Tx, n)
	var errs []<-chan error
	for i := range n {
		errs = append(errs, groupcommittest.Enqueue(t, s, i+1, func() error {
			return s.DoInGroup(t.Context(), func(_ context.Context, tx *sql.Tx) error {
				txs[i] = tx
				return nil
			})
		}))
	}
	h.end(t)
	for _, errc := range errs {
		require.NoError(t, <-errc)
	}
	for i := range txs {
		require.Same(t, txs[0], txs[i], "write %d committed in another transaction", i)
	}
}

func TestGroupCommitKeepsTheOrderOfOneThread(t *testing.T) {
	// Two callers write one thread; the second's parent is the first. In
	// arrival order both land in one batch; the other way round, the
	// second arrives first and is refused alone.
	cases := []struct {
		name         string
		childFirst   bool
		wantChildErr bool
		wantLatestID string
	}{
		{"parent-then-child", false, false, "0002"},
		{"child-then-parent", true, true, "0001"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openFile(t)
			h := hold(t, s)
			parent := func() error { return s.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)) }
			child := func() error { return s.Put(t.Context(), cpOf("t", "0002", "0001", 2, `2`)) }
			var perr, cerr <-chan error
			if c.childFirst {
				cerr = groupcommittest.Enqueue(t, s, 1, child)
				perr = groupcommittest.Enqueue(t, s, 2, parent)
			} else {
				perr = groupcommittest.Enqueue(t, s, 1, parent)
				cerr = groupcommittest.Enqueue(t, s, 2, child)
			}
			h.end(t)
			require.NoError(t, <-perr)
			err := <-cerr
			if c.wantChildErr {
				_, ok := errors.AsType[*checkpoint.ConflictError](err)
				require.True(t, ok, "want a *checkpoint.ConflictError, got %v", err)
			} else {
				require.NoError(t, err)
			}
			requireLatest(t, s, "t", c.wantLatestID)
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
	s := openFile(t)
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for i := range threads {
		wg.Go(func() { errs[i] = writeThread(t, s, fmt.Sprintf("c%d", i), steps) })
	}
	wg.Wait()
	for i := range threads {
		require.NoError(t, errs[i], "thread c%d", i)
		requireThread(t, s, fmt.Sprintf("c%d", i), steps)
	}
}

func TestGroupCommitDropsAQueuedWriteWhoseContextIsDone(t *testing.T) {
	s := openFile(t)
	h := hold(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	errc := groupcommittest.Enqueue(t, s, 1, func() error { return s.Put(ctx, cpOf("t", "0001", "", 1, `1`)) })
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Zero(t, s.QueuedWrites())
	h.end(t)
	_, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
}

func TestCloseFailsQueuedWritesAndWaitsForTheTransactionInFlight(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "checkpoints.db"))
	require.NoError(t, err)
	h := hold(t, s)
	errc := groupcommittest.Enqueue(t, s, 1, func() error { return s.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)) })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	require.ErrorContains(t, <-errc, "saver closed")
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a transaction was in flight", err)
	default:
	}
	require.True(t, s.Closing())
	h.end(t)
	require.NoError(t, <-closed)
	require.ErrorContains(t, s.Put(t.Context(), cpOf("t", "0001", "", 1, `1`)), "saver closed")
}
