package checkpointtest

import (
	"errors"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// The batch cases run for savers that implement [checkpoint.Batcher].
var batchCases = []testCase{
	{
		name:        "batch-in-order",
		explanation: "PutBatch makes its ops in order, each as Put or PutWrites would: checkpoints whose parents are earlier in the batch, pending writes against one of them, all read back",
		run: func(e *env) {
			b := e.batcher()
			th := e.thread("t1", "")
			cp1, n1 := th.planned(nil, meta("input", -1), map[string]string{"x": `1`})
			cp2, n2 := th.planned(n1, meta("loop", 0), map[string]string{"x": `2`, "y": `"y"`})
			cp3, n3 := th.planned(n2, meta("loop", 1), map[string]string{"x": `3`})
			w := checkpoint.Write{TaskID: "t", TaskPath: "n", Idx: 0, Channel: "x", Value: []byte(`3`)}
			require.NoError(e.t, b.PutBatch(e.ctx, []checkpoint.Op{
				{Checkpoint: cp1},
				{Checkpoint: cp2},
				{Ref: ref(n2), Writes: []checkpoint.Write{w}},
				{Checkpoint: cp3},
			}))
			e.requireTuple(th.want(n1), e.get(ref(n1)))
			e.requireTuple(withWrites(th.want(n2), w), e.get(ref(n2)))
			e.requireTuple(th.want(n3), e.get(checkpoint.Ref{ThreadID: "t1"}))
		},
	},
	{
		name:        "batch-all-or-none",
		explanation: "a batch with an op Put would refuse (a checkpoint whose parent is not the latest) stores none of its ops, earlier ones included, and returns the refusal (matching checkpoint.ErrConflict)",
		run: func(e *env) {
			b := e.batcher()
			th := e.thread("t1", "")
			a := th.put(nil, meta("input", -1), map[string]string{"x": `1`})
			before := e.list("t1", checkpoint.ListOptions{})
			cp2, n2 := th.planned(a, meta("loop", 0), map[string]string{"x": `2`})
			stale, _ := th.next(a, meta("loop", 0), map[string]string{"x": `"stale"`}) // a's child too, not a fork
			err := b.PutBatch(e.ctx, []checkpoint.Op{
				{Checkpoint: cp2},
				{Ref: ref(n2), Writes: []checkpoint.Write{{TaskID: "t", Idx: 0, Channel: "x", Value: []byte(`9`)}}},
				{Checkpoint: stale},
			})
			require.ErrorIs(e.t, err, checkpoint.ErrConflict)
			_, ok := errors.AsType[*checkpoint.ConflictError](err)
			require.True(e.t, ok, "error %v: want a *checkpoint.ConflictError", err)
			e.requireTuples(before, e.list("t1", checkpoint.ListOptions{}))
		},
	},
	{
		name:        "batch-fenced",
		explanation: "a batch written through the fenced view of a lease taken over since is refused whole with a *checkpoint.FencedError and stores nothing; the new holder's batch lands",
		run: func(e *env) {
			e.batcher()
			s := e.leaser()
			a := e.acquire(s, "t1", "alice", shortTTL)
			fa := e.fence(a)
			th := e.thread("t1", "")
			first := th.putOn(fa, nil, false, meta("input", -1), map[string]string{"x": `1`})
			b := e.acquireEventually(s, "t1", "bob", longTTL)
			before := e.list("t1", checkpoint.ListOptions{})

			stale, _ := th.next(first, meta("loop", 0), map[string]string{"x": `"stale"`})
			fba, ok := fa.(checkpoint.Batcher)
			require.True(e.t, ok, "the fenced view of a Batcher is a Batcher")
			requireFenced(e, fba.PutBatch(e.ctx, []checkpoint.Op{
				{Ref: ref(first), Writes: []checkpoint.Write{{TaskID: "stale", Idx: 0, Channel: "x", Value: []byte(`"stale"`)}}},
				{Checkpoint: stale},
			}), a)
			e.requireTuples(before, e.list("t1", checkpoint.ListOptions{}))
			require.Empty(e.t, e.get(ref(first)).PendingWrites)

			cp2, n2 := th.planned(first, meta("loop", 0), map[string]string{"x": `2`})
			require.NoError(e.t, e.fence(b).(checkpoint.Batcher).PutBatch(e.ctx, []checkpoint.Op{{Checkpoint: cp2}}))
			e.requireTuple(th.want(n2), e.get(checkpoint.Ref{ThreadID: "t1"}))
		},
	},
}

// batcher returns the saver as a [checkpoint.Batcher], skipping the case
// if it is not one.
func (e *env) batcher() checkpoint.Batcher {
	b, ok := e.s.(checkpoint.Batcher)
	if !ok {
		e.t.Skip("saver does not implement checkpoint.Batcher")
	}
	return b
}

// planned returns the checkpoint following parent, to be stored by the
// caller, and its node, recorded as if it were stored already (so that
// the next checkpoint can follow it).
func (h *history) planned(parent *node, md checkpoint.Metadata, changes map[string]string) (*checkpoint.Checkpoint, *node) {
	cp, values := h.next(parent, md, changes)
	return cp, h.record(cloneCheckpoint(cp), values)
}
