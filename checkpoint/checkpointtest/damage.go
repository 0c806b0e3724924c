package checkpointtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// Damage is a way of damaging the stored rows of a checkpoint, for
// [DamagedRows].
type Damage struct {
	Name string
	// Query damages the rows of the database's only checkpoint.
	Query string
	// StepChanged marks damage that leaves the metadata an object whose
	// step is not 1: a filter on the step then matches nothing.
	StepChanged bool
}

// DamagedRows stores, for each damage, one checkpoint (thread "t",
// namespace "ns", with a value and a pending write) on a fresh saver made
// by newSaver, damages its rows with exec, which runs a query on the
// saver's database, and checks that every read of it, a filtered List
// included, fails with a [*checkpoint.CorruptError] naming it.
func DamagedRows(t *testing.T, newSaver func(t *testing.T) (s checkpoint.Saver, exec func(ctx context.Context, query string) error), damages []Damage) {
	for _, d := range damages {
		t.Run(d.Name, func(t *testing.T) {
			s, exec := newSaver(t)
			ctx := t.Context()
			cp := &checkpoint.Checkpoint{
				ID: checkpoint.NewID(), ThreadID: "t", Namespace: "ns",
				Metadata: checkpoint.Metadata{Source: "loop", Step: 1},
				Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`[1]`)}},
			}
			require.NoError(t, s.Put(ctx, cp))
			ref := checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: cp.ID}
			require.NoError(t, s.PutWrites(ctx, ref, []checkpoint.Write{{TaskID: "x", Channel: "a", Value: []byte(`2`)}}))
			require.NoError(t, exec(ctx, d.Query))

			requireCorrupt := func(err error) {
				t.Helper()
				var cerr *checkpoint.CorruptError
				require.ErrorAs(t, err, &cerr)
				require.Equal(t, checkpoint.CorruptError{ThreadID: "t", Namespace: "ns", CheckpointID: cp.ID, Err: cerr.Err}, *cerr)
			}
			_, err := s.Get(ctx, ref)
			requireCorrupt(err)
			_, err = s.Get(ctx, checkpoint.Ref{ThreadID: "t", Namespace: "ns"})
			requireCorrupt(err)
			for _, filter := range []map[string]any{nil, {"source": "loop"}, {"step": 1}} {
				n := 0
				for _, err := range s.List(ctx, "t", checkpoint.ListOptions{Filter: filter}) {
					requireCorrupt(err)
					n++
				}
				if d.StepChanged && filter["step"] != nil {
					continue // an object whose step is not 1 matches no filter on it
				}
				require.Equal(t, 1, n, "filter %v", filter)
			}
		})
	}
}
