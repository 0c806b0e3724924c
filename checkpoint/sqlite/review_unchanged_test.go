package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/groupcommit/groupcommittest"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// Review of 17739ac (writes refused before a change return *unchanged and
// need no savepoint; a refusal after a change aborts the batch, which is
// committed again without it; non-array values are stored whole without
// reading the previous path) and 4a6f845 (the fence checked inside the
// checkpoint's upsert).

// inOneBatch queues writes, in order, behind a held transaction of s's
// group and lets them commit as one batch; it returns each write's error.
func inOneBatch(t *testing.T, s *sqlite.Saver, writes ...func() error) []error {
	t.Helper()
	h := hold(t, s)
	return groupcommittest.InOneBatch(t, s, func() { h.end(t) }, writes...)
}

func requireAs[E error](t *testing.T, err error) E {
	t.Helper()
	e, ok := errors.AsType[E](err)
	require.True(t, ok, "want a %T, got %v", *new(E), err)
	return e
}

func requireValue(t *testing.T, s checkpoint.Saver, thread, id, channel, want string) {
	t.Helper()
	got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: id})
	require.NoError(t, err, "thread %s id %s", thread, id)
	require.Equal(t, want, string(got.Value(channel)), "thread %s id %s channel %s", thread, id, channel)
}

func requireNoCheckpoint(t *testing.T, s checkpoint.Saver, thread, id string) {
	t.Helper()
	_, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: id})
	require.ErrorIs(t, err, checkpoint.ErrNotFound, "thread %s id %s", thread, id)
}

// A channel's value goes from array to non-array and back, its versions
// stored as wholes and deltas in turn (the non-array ones by storeWhole,
// which reads no path): every version reads back, made one Put at a
// time, in one PutBatch, or as a group-commit batch of Puts.
func TestReviewValueTurningBetweenArrayAndNonArrayReadsBackEveryVersion(t *testing.T) {
	values := []string{`[1]`, `[1,2]`, `5`, `[5]`, `[5,6]`, `[5,6,7]`, `"x"`, `[]`, `[8]`, `[8,9]`, `null`, `[8,9,10]`, `[8,9]`, `{"a":[1]}`, `[8,9,10,11]`, ` [1]`, `[1] `, `[1]`}
	cps := make([]*checkpoint.Checkpoint, len(values))
	for i, v := range values {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("%04d", i)
		}
		cps[i] = cpOf("t", fmt.Sprintf("%04d", i+1), parent, int64(i+1), v)
		// A second channel, unchanged every other step.
		cps[i].Channels = append(cps[i].Channels, checkpoint.Channel{Name: "b", Version: int64(i/2 + 1)})
		if i%2 == 0 {
			cps[i].Channels[1].Value = []byte(fmt.Sprintf("[%d]", i/2))
		}
	}
	check := func(t *testing.T, s *sqlite.Saver) {
		for i, v := range values {
			id := fmt.Sprintf("%04d", i+1)
			requireValue(t, s, "t", id, "a", v)
			requireValue(t, s, "t", id, "b", fmt.Sprintf("[%d]", i/2))
		}
	}
	for _, fanout := range []int{0, 2, 16} {
		opts := []sqlite.Option{}
		if fanout > 0 {
			opts = append(opts, sqlite.WithDeltaFanout(fanout))
		}
		t.Run(fmt.Sprintf("fanout=%d/one-by-one", fanout), func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "c.db"), opts...)
			for _, cp := range cps {
				require.NoError(t, s.Put(t.Context(), cp))
			}
			check(t, s)
		})
		t.Run(fmt.Sprintf("fanout=%d/put-batch", fanout), func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "c.db"), opts...)
			ops := make([]checkpoint.Op, len(cps))
			for i, cp := range cps {
				ops[i] = checkpoint.Op{Checkpoint: cp}
			}
			require.NoError(t, s.PutBatch(t.Context(), ops))
			check(t, s)
		})
		t.Run(fmt.Sprintf("fanout=%d/group-batch", fanout), func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "c.db"), opts...)
			writes := make([]func() error, len(cps))
			for i, cp := range cps {
				writes[i] = func() error { return s.Put(t.Context(), cp) }
			}
			for i, err := range inOneBatch(t, s, writes...) {
				require.NoError(t, err, "put %d", i)
			}
			check(t, s)
		})
	}
}

// A version conflict is found after the checkpoint's row (and maybe other
// channels' values) were written: in a batch it aborts the transaction,
// which commits again without it. Its row and every value it stored stay
// out (its new versions are free for the next writer), whether the
// conflicting value is an array (prevPath) or not (storeWhole), and the
// writes around it land.
func TestReviewVersionConflictInABatchLeavesNoneOfItsWrite(t *testing.T) {
	for _, c := range []struct{ name, stored, bad string }{
		{"non-array over non-array", `1`, `2`},
		{"non-array over array", `[1]`, `2`},
		{"array over non-array", `1`, `[2]`},
		{"array over array", `[1]`, `[1,2]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openFile(t)
			first := &checkpoint.Checkpoint{ThreadID: "v", ID: "0001", Channels: []checkpoint.Channel{
				{Name: "c", Version: 1, Value: []byte(c.stored)},
			}}
			require.NoError(t, s.Put(t.Context(), first))
			// The bad write: channels "a" and "b" stored new (before "c"
			// in name order, one whole, one maybe as a delta), then "c"'s
			// version 1 with another value.
			bad := &checkpoint.Checkpoint{ThreadID: "v", ID: "0002", ParentID: "0001", Channels: []checkpoint.Channel{
				{Name: "c", Version: 1, Value: []byte(c.bad)},
				{Name: "a", Version: 1, Value: []byte(`"new"`)},
				{Name: "b", Version: 1, Value: []byte(`[0]`)},
			}}
			errs := inOneBatch(t, s,
				func() error { return s.Put(t.Context(), cpOf("g0", "0001", "", 1, `1`)) },
				func() error { return s.Put(t.Context(), bad) },
				func() error { return s.Put(t.Context(), cpOf("g1", "0001", "", 1, `[1]`)) },
			)
			require.NoError(t, errs[0])
			require.NoError(t, errs[2])
			vc := requireAs[*checkpoint.VersionConflictError](t, errs[1])
			require.Equal(t, "c", vc.Channel)
			require.Equal(t, int64(1), vc.Version)
			requireLatest(t, s, "v", "0001")
			requireLatest(t, s, "g0", "0001")
			requireLatest(t, s, "g1", "0001")
			requireValue(t, s, "v", "0001", "c", c.stored)
			// Versions 1 of "a" and "b" are free: other values land.
			next := &checkpoint.Checkpoint{ThreadID: "v", ID: "0002", ParentID: "0001", Channels: []checkpoint.Channel{
				{Name: "a", Version: 1, Value: []byte(`[7]`)},
				{Name: "b", Version: 1, Value: []byte(`"b"`)},
				{Name: "c", Version: 1},
			}}
			require.NoError(t, s.Put(t.Context(), next))
			requireValue(t, s, "v", "0002", "a", `[7]`)
			requireValue(t, s, "v", "0002", "b", `"b"`)
			requireValue(t, s, "v", "0002", "c", c.stored)
		})
	}
}

// The same version of a channel put twice in one batch (two checkpoints of
// a thread): with an equal value the second keeps the first's and lands;
// with another value the second is a version conflict and the first
// lands alone. In one PutBatch, the conflict refuses the whole batch.
func TestReviewSameVersionTwiceInOneBatch(t *testing.T) {
	for _, c := range []struct{ name, first, second string }{
		{"non-array", `"x"`, `"y"`},
		{"array", `[1]`, `[2]`},
		{"array then non-array", `[1]`, `1`},
		{"non-array then array", `1`, `[1]`},
	} {
		t.Run(c.name+"/equal", func(t *testing.T) {
			s := openFile(t)
			errs := inOneBatch(t, s,
				func() error { return s.Put(t.Context(), cpOf("t", "0001", "", 1, c.first)) },
				func() error { return s.Put(t.Context(), cpOf("t", "0002", "0001", 1, c.first)) },
			)
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			requireLatest(t, s, "t", "0002")
			requireValue(t, s, "t", "0002", "a", c.first)
		})
		t.Run(c.name+"/different", func(t *testing.T) {
			s := openFile(t)
			errs := inOneBatch(t, s,
				func() error { return s.Put(t.Context(), cpOf("t", "0001", "", 1, c.first)) },
				func() error { return s.Put(t.Context(), cpOf("t", "0002", "0001", 1, c.second)) },
				func() error { return s.Put(t.Context(), cpOf("u", "0001", "", 1, c.second)) },
			)
			require.NoError(t, errs[0])
			requireAs[*checkpoint.VersionConflictError](t, errs[1])
			require.NoError(t, errs[2])
			requireLatest(t, s, "t", "0001")
			requireValue(t, s, "t", "0001", "a", c.first)
			requireValue(t, s, "u", "0001", "a", c.second)
		})
		t.Run(c.name+"/put-batch", func(t *testing.T) {
			s := openFile(t)
			err := s.PutBatch(t.Context(), []checkpoint.Op{
				{Checkpoint: cpOf("t", "0001", "", 1, c.first)},
				{Checkpoint: cpOf("t", "0002", "0001", 1, c.second)},
			})
			requireAs[*checkpoint.VersionConflictError](t, err)
			requireNoCheckpoint(t, s, "t", "0001")
			require.NoError(t, s.Put(t.Context(), cpOf("t", "0001", "", 1, c.second)))
			requireValue(t, s, "t", "0001", "a", c.second)
		})
	}
}

// A write refused before it changed anything does not abort its batch;
// when another write of the batch aborts it afterwards, the refused write
// is made again and refused again, and a write that needed the aborted
// one's row is now refused for its parent.
func TestReviewBatchCommittedAgainChecksEveryWriteAgain(t *testing.T) {
	s := openFile(t)
	require.NoError(t, s.Put(t.Context(), cpOf("c", "0001", "", 1, `1`)))
	errs := inOneBatch(t, s,
		// Refused: its parent is not the latest.
		func() error { return s.Put(t.Context(), cpOf("c", "0002", "", 2, `2`)) },
		// Writes its row, then conflicts: aborts the batch.
		func() error { return s.Put(t.Context(), cpOf("c", "0002", "0001", 1, `"other"`)) },
		// Would follow the aborted one: without it, its parent is
		// missing.
		func() error { return s.Put(t.Context(), cpOf("c", "0003", "0002", 3, `3`)) },
		// Follows the latest that stays.
		func() error { return s.Put(t.Context(), cpOf("c", "0004", "0001", 4, `[4]`)) },
	)
	ce := requireAs[*checkpoint.ConflictError](t, errs[0])
	require.Equal(t, "0001", ce.LatestID)
	requireAs[*checkpoint.VersionConflictError](t, errs[1])
	ce = requireAs[*checkpoint.ConflictError](t, errs[2])
	require.Equal(t, "0001", ce.LatestID)
	require.NoError(t, errs[3])
	requireLatest(t, s, "c", "0004")
	requireNoCheckpoint(t, s, "c", "0002")
	requireNoCheckpoint(t, s, "c", "0003")
	requireValue(t, s, "c", "0004", "a", `[4]`)
}

// A PutBatch whose second op is refused before it changed anything (a
// parent conflict, a fenced lease) after its first op wrote: the whole
// PutBatch is undone — its refusal is not taken for "nothing changed" —
// and the writes beside it in the group's batch land.
func TestReviewPutBatchRefusedAfterItsFirstOpLeavesNothing(t *testing.T) {
	for _, c := range []struct {
		name  string
		op    func(t *testing.T, s *sqlite.Saver) (context.Context, checkpoint.Op)
		check func(t *testing.T, err error)
	}{
		{"parent-conflict", func(t *testing.T, s *sqlite.Saver) (context.Context, checkpoint.Op) {
			require.NoError(t, s.Put(t.Context(), cpOf("p", "0001", "", 1, `1`)))
			return t.Context(), checkpoint.Op{Checkpoint: cpOf("p", "0002", "", 2, `2`)}
		}, func(t *testing.T, err error) { requireAs[*checkpoint.ConflictError](t, err) }},
		{"fenced-put", func(t *testing.T, s *sqlite.Saver) (context.Context, checkpoint.Op) {
			old, err := s.AcquireLease(t.Context(), "p", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			return checkpoint.WithLease(t.Context(), old), checkpoint.Op{Checkpoint: cpOf("p", "0001", "", 1, `1`)}
		}, func(t *testing.T, err error) { requireAs[*checkpoint.FencedError](t, err) }},
		{"fenced-writes", func(t *testing.T, s *sqlite.Saver) (context.Context, checkpoint.Op) {
			old, err := s.AcquireLease(t.Context(), "p", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			return checkpoint.WithLease(t.Context(), old), checkpoint.Op{Ref: checkpoint.Ref{ThreadID: "p", ID: "0001"}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}}}
		}, func(t *testing.T, err error) { require.ErrorIs(t, err, checkpoint.ErrLeaseLost) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openFile(t)
			ctx, bad := c.op(t, s)
			errs := inOneBatch(t, s,
				func() error { return s.Put(t.Context(), cpOf("g0", "0001", "", 1, `1`)) },
				func() error {
					return s.PutBatch(ctx, []checkpoint.Op{
						{Checkpoint: cpOf("q", "0001", "", 1, `[1]`)},
						{Ref: checkpoint.Ref{ThreadID: "q", ID: "0001"}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}}},
						bad,
					})
				},
				func() error { return s.Put(t.Context(), cpOf("g1", "0001", "", 1, `1`)) },
			)
			require.NoError(t, errs[0])
			require.NoError(t, errs[2])
			c.check(t, errs[1])
			requireNoCheckpoint(t, s, "q", "0001")
			requireLatest(t, s, "g0", "0001")
			requireLatest(t, s, "g1", "0001")
			// Nothing of q stayed: its version 1 takes another value.
			require.NoError(t, s.Put(t.Context(), cpOf("q", "0001", "", 1, `"other"`)))
			got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "q", ID: "0001"})
			require.NoError(t, err)
			require.Empty(t, got.PendingWrites)
		})
	}
}

// Fenced writes of every kind under a stale lease, in one batch beside
// good writes and the current holder's: each stale one gets a
// *checkpoint.FencedError (matching ErrLeaseLost) and leaves nothing; the
// others land.
func TestReviewFencedWritesInABatchBesideGoodWrites(t *testing.T) {
	s := openFile(t)
	old, err := s.AcquireLease(t.Context(), "f", "old", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseLease(t.Context(), old))
	cur, err := s.AcquireLease(t.Context(), "f", "new", time.Minute)
	require.NoError(t, err)
	stale, fresh := checkpoint.Fenced(s, old), checkpoint.Fenced(s, cur)
	require.NoError(t, fresh.Put(t.Context(), cpOf("f", "0001", "", 1, `[1]`)))
	ref := checkpoint.Ref{ThreadID: "f", ID: "0001"}
	w := func(task string) []checkpoint.Write {
		return []checkpoint.Write{{TaskID: task, Channel: "a", Value: []byte(`1`)}}
	}
	errs := inOneBatch(t, s,
		func() error { return s.Put(t.Context(), cpOf("g0", "0001", "", 1, `1`)) },
		func() error { return stale.Put(t.Context(), cpOf("f", "0002", "0001", 2, `[1,2]`)) },
		func() error { return stale.PutWrites(t.Context(), ref, w("stale")) },
		func() error { return fresh.PutWrites(t.Context(), ref, w("fresh")) },
		func() error { return stale.(checkpoint.ThreadDeleter).DeleteThread(t.Context(), "f") },
		func() error { return stale.Put(t.Context(), cpOf("f", "0002", "", 2, `"x"`)) }, // stale parent too
		func() error { return fresh.Put(t.Context(), cpOf("f", "0002", "0001", 2, `[1,3]`)) },
		func() error {
			return stale.(checkpoint.Batcher).PutBatch(t.Context(), []checkpoint.Op{{Checkpoint: cpOf("f", "0003", "0002", 3, `3`)}})
		},
		func() error { return s.Put(t.Context(), cpOf("g1", "0001", "", 1, `1`)) },
	)
	for _, i := range []int{0, 3, 6, 8} {
		require.NoError(t, errs[i], "write %d", i)
	}
	for _, i := range []int{1, 2, 4, 5, 7} {
		f := requireAs[*checkpoint.FencedError](t, errs[i])
		require.Equal(t, cur.Fence, f.Current, "write %d", i)
		require.Equal(t, "new", f.Holder, "write %d", i)
		require.ErrorIs(t, errs[i], checkpoint.ErrLeaseLost, "write %d", i)
	}
	requireLatest(t, s, "f", "0002")
	requireValue(t, s, "f", "0002", "a", `[1,3]`)
	got, err := s.Get(t.Context(), ref)
	require.NoError(t, err)
	require.Len(t, got.PendingWrites, 1)
	require.Equal(t, "fresh", got.PendingWrites[0].TaskID)
	requireLatest(t, s, "g0", "0001")
	requireLatest(t, s, "g1", "0001")
}

// A lease that was never taken (no lease row for its thread, or one of
// another thread's) fences every write made under it, alone or in a
// batch; a lease with an empty token is no lease.
func TestReviewLeaseNeverTakenFencesEveryWrite(t *testing.T) {
	s := openFile(t)
	other, err := s.AcquireLease(t.Context(), "other", "h", time.Minute)
	require.NoError(t, err)
	for _, lease := range []checkpoint.Lease{
		{ThreadID: "n", Holder: "h", Token: "made-up", Fence: 1},
		{ThreadID: "n", Holder: "h", Token: other.Token, Fence: other.Fence},
		{ThreadID: "n"},
	} {
		f := checkpoint.Fenced(s, lease)
		ref := checkpoint.Ref{ThreadID: "n", ID: "0001"}
		writes := []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}}
		alone := []error{
			f.Put(t.Context(), cpOf("n", "0001", "", 1, `1`)),
			f.Put(t.Context(), cpOf("n", "0001", "", 1, `[1]`)),
			f.PutWrites(t.Context(), ref, writes),
			f.(checkpoint.Batcher).PutBatch(t.Context(), []checkpoint.Op{{Checkpoint: cpOf("n", "0001", "", 1, `1`)}}),
			f.(checkpoint.ThreadDeleter).DeleteThread(t.Context(), "n"),
		}
		batched := inOneBatch(t, s,
			func() error { return f.Put(t.Context(), cpOf("n", "0001", "", 1, `1`)) },
			func() error { return s.Put(t.Context(), cpOf("g", "0001", "", 1, `1`)) },
			func() error { return f.PutWrites(t.Context(), ref, writes) },
		)
		require.NoError(t, batched[1])
		for i, err := range append(alone, batched[0], batched[2]) {
			fe := requireAs[*checkpoint.FencedError](t, err)
			require.Equal(t, "", fe.Holder, "write %d", i)
		}
		requireNoCheckpoint(t, s, "n", "0001")
		require.NoError(t, s.DeleteThread(t.Context(), "g"))
	}
}

// A lease past its time to live that nobody took over is still current:
// its holder's writes land, alone and in a batch. Once another holder
// takes the thread, they are fenced.
func TestReviewExpiredLeaseNotTakenOverStillWritesUntilTakenOver(t *testing.T) {
	s := openFile(t)
	lease, err := s.AcquireLease(t.Context(), "e", "old", time.Millisecond)
	require.NoError(t, err)
	for time.Now().Before(lease.Expires.Add(time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	f := checkpoint.Fenced(s, lease)
	require.NoError(t, f.Put(t.Context(), cpOf("e", "0001", "", 1, `[1]`)))
	errs := inOneBatch(t, s,
		func() error { return f.Put(t.Context(), cpOf("e", "0002", "0001", 2, `[1,2]`)) },
		func() error { return s.Put(t.Context(), cpOf("g", "0001", "", 1, `1`)) },
	)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	requireLatest(t, s, "e", "0002")

	cur, err := s.AcquireLease(t.Context(), "e", "new", time.Minute)
	require.NoError(t, err)
	require.Greater(t, cur.Fence, lease.Fence)
	errs = inOneBatch(t, s,
		func() error { return f.Put(t.Context(), cpOf("e", "0003", "0002", 3, `3`)) },
		func() error {
			return checkpoint.Fenced(s, cur).Put(t.Context(), cpOf("e", "0003", "0002", 3, `[1,2,3]`))
		},
	)
	fe := requireAs[*checkpoint.FencedError](t, errs[0])
	require.Equal(t, cur.Fence, fe.Current)
	require.NoError(t, errs[1])
	requireValue(t, s, "e", "0003", "a", `[1,2,3]`)
	_, err = s.RenewLease(t.Context(), lease, time.Minute)
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
}

// Lease operations refused in a batch (a held lease, a lost one) get
// their own typed errors and change nothing; the writes beside them land.
func TestReviewLeaseRefusalsInABatchBesideGoodWrites(t *testing.T) {
	s := openFile(t)
	first, err := s.AcquireLease(t.Context(), "l", "first", time.Minute)
	require.NoError(t, err)
	gone, err := s.AcquireLease(t.Context(), "m", "gone", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseLease(t.Context(), gone))
	var second checkpoint.Lease
	errs := inOneBatch(t, s,
		func() error { return s.Put(t.Context(), cpOf("g0", "0001", "", 1, `1`)) },
		func() error {
			_, err := s.AcquireLease(t.Context(), "l", "second", time.Minute)
			return err
		},
		func() error {
			_, err := s.RenewLease(t.Context(), gone, time.Minute)
			return err
		},
		func() error {
			var err error
			second, err = s.AcquireLease(t.Context(), "m", "second", time.Minute)
			return err
		},
		// Aborts the batch after the others ran: they run again.
		func() error { return s.Put(t.Context(), cpOf("g0", "0002", "0001", 1, `2`)) },
		func() error { return s.Put(t.Context(), cpOf("g1", "0001", "", 1, `1`)) },
	)
	require.NoError(t, errs[0])
	h := requireAs[*checkpoint.LeaseHeldError](t, errs[1])
	require.Equal(t, "first", h.Holder)
	require.ErrorIs(t, errs[2], checkpoint.ErrLeaseLost)
	require.NoError(t, errs[3])
	requireAs[*checkpoint.VersionConflictError](t, errs[4])
	require.NoError(t, errs[5])
	// The first holder keeps l; m's new holder's lease is current.
	_, err = s.RenewLease(t.Context(), first, time.Minute)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Fenced(s, second).Put(t.Context(), cpOf("m", "0001", "", 1, `1`)))
	_, err = s.RenewLease(t.Context(), gone, time.Minute)
	require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
	requireLatest(t, s, "g0", "0001")
	requireLatest(t, s, "g1", "0001")
}

// Two Savers on one file (two processes): the one that took the thread
// over fences the other's writes, which its group commits in a batch
// beside good writes; the values each stored read back through both.
func TestReviewTwoSaversOnOneFileFenceEachOther(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := open(t, path), open(t, path)
	old, err := a.AcquireLease(t.Context(), "s", "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Fenced(a, old).Put(t.Context(), cpOf("s", "0001", "", 1, `[1]`)))
	require.NoError(t, a.ReleaseLease(t.Context(), old))
	cur, err := b.AcquireLease(t.Context(), "s", "b", time.Minute)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Fenced(b, cur).Put(t.Context(), cpOf("s", "0002", "0001", 2, `5`)))

	errs := inOneBatch(t, a,
		func() error { return checkpoint.Fenced(a, old).Put(t.Context(), cpOf("s", "0003", "0002", 3, `[5]`)) },
		func() error { return a.Put(t.Context(), cpOf("g", "0001", "", 1, `1`)) },
		func() error {
			return checkpoint.Fenced(a, old).PutWrites(t.Context(), checkpoint.Ref{ThreadID: "s", ID: "0002"}, []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`1`)}})
		},
	)
	fe := requireAs[*checkpoint.FencedError](t, errs[0])
	require.Equal(t, "b", fe.Holder)
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], checkpoint.ErrLeaseLost)
	require.NoError(t, checkpoint.Fenced(b, cur).Put(t.Context(), cpOf("s", "0003", "0002", 3, `[5]`)))
	for _, s := range []*sqlite.Saver{a, b} {
		requireValue(t, s, "s", "0001", "a", `[1]`)
		requireValue(t, s, "s", "0002", "a", `5`)
		requireValue(t, s, "s", "0003", "a", `[5]`)
		got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "s", ID: "0002"})
		require.NoError(t, err)
		require.Empty(t, got.PendingWrites)
	}
}
