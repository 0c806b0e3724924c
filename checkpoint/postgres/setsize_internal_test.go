package postgres

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// setBatch cuts a batch into runs with one write per thread and namespace
// and makes each run's arrays at their final length, without growing
// them write by write; an array of a run that holds nothing is nil.
func TestSetBatchMakesRunArraysToTheirLength(t *testing.T) {
	ctx := context.Background()
	s := &Saver{fanout: 16}
	put := func(thread, id string, channels ...string) *groupWrite {
		cp := &checkpoint.Checkpoint{ThreadID: thread, ID: id, Metadata: checkpoint.Metadata{Source: "loop"}}
		for i, ch := range channels {
			cp.Channels = append(cp.Channels, checkpoint.Channel{Name: ch, Version: int64(i + 1), Value: []byte(`"v"`)})
		}
		row, changed, err := preparePut(cp)
		require.NoError(t, err)
		p := s.planPut(ctx, cp, row, changed)
		require.NotNil(t, p)
		return &groupWrite{Ctx: ctx, Op: groupOp{items: []batchItem{{plan: p}}}}
	}
	writes := &groupWrite{Ctx: ctx, Op: groupOp{items: []batchItem{{
		ref:    checkpoint.Ref{ThreadID: "d", ID: "1"},
		writes: []checkpoint.Write{{TaskID: "t", Idx: 0, Channel: "c", Value: []byte("1")}},
		lease:  &checkpoint.Lease{ThreadID: "d", Token: "tok"},
	}}}}
	// Threads a, b, a, c, d: two runs, {a, b} and {a, c, d}.
	batch := []*groupWrite{put("a", "1", "x", "y"), put("b", "1", "x"), put("a", "2"), put("c", "1", "z"), writes}

	b, stmts := setBatch(batch, false)

	var inserts, checks int
	for i, q := range b.QueuedQueries {
		switch q.SQL {
		case insertCheckpoints:
			inserts++
		case checkSet:
			checks++
		}
		for j, arg := range q.Arguments {
			v := reflect.ValueOf(arg)
			if v.Kind() != reflect.Slice || v.Len() == 0 && v.IsNil() {
				continue
			}
			require.Equal(t, v.Len(), v.Cap(), "statement %d argument %d", i, j)
		}
	}
	require.Equal(t, 2, inserts)
	require.Equal(t, 2, checks)
	require.Len(t, stmts, b.Len())
}
