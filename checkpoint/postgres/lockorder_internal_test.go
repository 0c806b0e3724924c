package postgres

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func TestOrderLocksPrependsALockStatementOnlyWhenTheWritesWouldLockOutOfOrder(t *testing.T) {
	// Keys as the statements carry them: lease keys shared, Put keys
	// exclusive; the saver's order is every lease lock by key, then every
	// Put lock by key.
	type lock struct {
		sql  string
		args []any
	}
	tests := []struct {
		name                 string
		locks                []lock
		wantShared, wantExcl []int64 // nil: b is sent as it is
	}{
		{name: "no lock statement", locks: nil},
		{name: "one fenced Put", locks: []lock{{lockThreadFenced, []any{int64(1), int64(9)}}}},
		{name: "one unfenced Put", locks: []lock{{lockThread, []any{int64(5)}}}},
		{name: "a run's PutWrites then its Put then its next Put", locks: []lock{
			{lockThreadFenced, []any{int64(1), int64(9)}}, {lockThreadFenced, []any{int64(1), int64(9)}}, {lockThreadFenced, []any{int64(1), int64(9)}},
		}},
		{name: "a Put then the PutWrites of its step", locks: []lock{{lockThreadFenced, []any{int64(1), int64(9)}}, {lockThreadFenced, []any{int64(1), int64(9)}}}},
		{name: "an unfenced PutWrites then a Put of the same thread", locks: []lock{{lockThread, []any{int64(1)}}, {lockThread, []any{int64(1)}}}},
		{name: "unfenced Puts of two threads in key order", locks: []lock{{lockThread, []any{int64(-3)}}, {lockThread, []any{int64(4)}}}},
		{
			name:       "unfenced Puts of two threads against key order",
			locks:      []lock{{lockThread, []any{int64(4)}}, {lockThread, []any{int64(-3)}}, {lockThread, []any{int64(4)}}},
			wantShared: []int64{}, wantExcl: []int64{4, -3},
		},
		{
			name:       "fenced Puts of two threads",
			locks:      []lock{{lockThreadFenced, []any{int64(1), int64(9)}}, {lockThreadFenced, []any{int64(2), int64(8)}}},
			wantShared: []int64{9, 8}, wantExcl: []int64{1, 2},
		},
		{
			name:       "a fenced PutWrites after another thread's Put",
			locks:      []lock{{lockThread, []any{int64(1)}}, {lockThreadFenced, []any{int64(2), int64(8)}}},
			wantShared: []int64{8}, wantExcl: []int64{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &pgx.Batch{}
			for _, l := range tt.locks {
				b.Queue(l.sql, l.args...)
				b.Queue(`SELECT 1`) // a write's other statements
			}
			got, origin := orderLocks(b)
			if tt.wantExcl == nil {
				require.Same(t, b, got)
				require.Nil(t, origin)
				return
			}
			require.Equal(t, len(tt.locks)+1, got.Len(), "the lock statement, then each write's other statement")
			require.Equal(t, got.Len(), len(origin))
			first := got.QueuedQueries[0]
			require.Equal(t, takeLocksInOrder, first.SQL)
			shared, excl := first.Arguments[0].([]int64), first.Arguments[1].([]int64)
			if d := cmp.Diff(tt.wantShared, shared, cmpEmptyIsNil); d != "" {
				t.Errorf("shared keys (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantExcl, excl); d != "" {
				t.Errorf("exclusive keys (-want +got):\n%s", d)
			}
			require.Equal(t, -1, origin[0])
			for j, q := range got.QueuedQueries[1:] {
				require.Equal(t, `SELECT 1`, q.SQL, "the writes' statements follow, without their locks")
				require.Same(t, b.QueuedQueries[origin[j+1]], q, "statement %d comes from b's %d", j+1, origin[j+1])
			}
		})
	}
}

// cmpEmptyIsNil makes an empty list equal to nil.
var cmpEmptyIsNil = cmp.FilterValues(func(a, b []int64) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(a, b []int64) bool { return true }))

func TestOpLocksOfALongWayBatchHoldEveryPutAndPutWritesLock(t *testing.T) {
	// The long way of a PutBatch takes these first, in order: a
	// PutWrites' Put lock left out would be taken later, out of order.
	lease := checkpoint.Lease{ThreadID: "a", Holder: "h", Token: "tok"}
	ctx := checkpoint.WithLease(context.Background(), lease)
	ops := []checkpoint.Op{
		{Checkpoint: &checkpoint.Checkpoint{ThreadID: "x", Namespace: "n", ID: "1"}},
		{Ref: checkpoint.Ref{ThreadID: "a", ID: "1"}, Writes: []checkpoint.Write{{TaskID: "t", Channel: "c"}}},
		{Checkpoint: &checkpoint.Checkpoint{ThreadID: "a", ID: "2", ParentID: "1"}},
	}
	shared, exclusive := opLocks(ctx, ops)
	require.Equal(t, []int64{leaseLockKey("a"), leaseLockKey("a")}, shared)
	require.Equal(t, []int64{threadLockKey("x", "n"), threadLockKey("a", ""), threadLockKey("a", "")}, exclusive)
}
