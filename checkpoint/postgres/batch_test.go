package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// PutBatch's one round trip is planned on the paths the saver remembers;
// another saver writing the thread makes them stale. The server's checks
// must then refuse the batch's one round trip, and the long way decide.

func TestPutBatchOnAStaleCacheIsRefusedWholeWhenItConflicts(t *testing.T) {
	schema := freshSchema(t)
	s, other := open(t, schema), open(t, schema)
	thread := fmt.Sprintf("stale-batch-%d", time.Now().UnixNano())
	require.NoError(t, s.Put(t.Context(), cpOf(thread, "0001", "", 1, `1`)))
	// The other saver moves the thread on: s still believes 0001 is the latest.
	require.NoError(t, other.Put(t.Context(), cpOf(thread, "0002", "0001", 2, `2`)))

	err := s.PutBatch(t.Context(), []checkpoint.Op{
		{Checkpoint: cpOf(thread, "0003", "0001", 3, `3`)}, // a silent fork: refused
		{Checkpoint: cpOf(thread, "0004", "0003", 4, `4`)},
	})
	require.ErrorIs(t, err, checkpoint.ErrConflict)
	requireLatest(t, s, thread, "0002")
	_, err = s.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: "0003"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound, "nothing of the refused batch is stored")
}

func TestPutBatchOnAStaleCacheLandsWhenItFollowsTheLatest(t *testing.T) {
	schema := freshSchema(t)
	s, other := open(t, schema), open(t, schema)
	thread := fmt.Sprintf("stale-follow-%d", time.Now().UnixNano())
	require.NoError(t, s.Put(t.Context(), cpOf(thread, "0001", "", 1, `[1]`)))
	require.NoError(t, other.Put(t.Context(), cpOf(thread, "0002", "0001", 2, `[1,2]`)))

	// The first batch goes the long way (s's cache names 0001), the
	// second in one round trip, on what the first left.
	for _, b := range []struct {
		parent, mid, last string
		version           int64
	}{{"0002", "0003", "0004", 3}, {"0004", "0005", "0006", 5}} {
		require.NoError(t, s.PutBatch(t.Context(), []checkpoint.Op{
			{Checkpoint: cpOf(thread, b.mid, b.parent, b.version, `[1,2,3]`)},
			{Ref: checkpoint.Ref{ThreadID: thread, ID: b.mid}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "a", Value: []byte(`9`)}}},
			{Checkpoint: cpOf(thread, b.last, b.mid, b.version+1, `[1,2,3,4]`)},
		}))
		requireLatest(t, other, thread, b.last)
		got, err := other.Get(t.Context(), checkpoint.Ref{ThreadID: thread, ID: b.mid})
		require.NoError(t, err)
		require.Len(t, got.PendingWrites, 1)
		require.JSONEq(t, `[1,2,3]`, string(got.Value("a")))
	}
	got, err := other.Get(t.Context(), checkpoint.Ref{ThreadID: thread})
	require.NoError(t, err)
	require.JSONEq(t, `[1,2,3,4]`, string(got.Value("a")))
}
