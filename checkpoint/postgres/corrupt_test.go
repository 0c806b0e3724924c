package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// TestDamagedRowsAreCorruptErrors damages the rows of a checkpoint with
// SQL: every read of it, a filtered List included, names it.
func TestDamagedRowsAreCorruptErrors(t *testing.T) {
	tests := []struct {
		name, query string
	}{
		{"metadata not an object", `UPDATE agentgraph_checkpoints SET metadata = '"garbage"'`},
		{"metadata null", `UPDATE agentgraph_checkpoints SET metadata = 'null'`},
		{"metadata step of another type", `UPDATE agentgraph_checkpoints SET metadata = '{"source":"loop","step":"one"}'`},
		{"versions not an object", `UPDATE agentgraph_checkpoints SET versions = '[1]'`},
		{"version not an integer", `UPDATE agentgraph_checkpoints SET versions = '{"a":1.5}'`},
		{"size 1 TiB", `UPDATE agentgraph_blobs SET size = 1099511627776`},
		{"hash short", `UPDATE agentgraph_blobs SET hash = '\x00'`},
		{"data truncated", `UPDATE agentgraph_blobs SET data = substr(data, 1, 2)`},
		{"own base", `UPDATE agentgraph_blobs SET base = version`},
		{"value missing", `DELETE FROM agentgraph_blobs`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := freshSchema(t)
			s := open(t, schema)
			ctx := t.Context()
			cp := &checkpoint.Checkpoint{
				ID: checkpoint.NewID(), ThreadID: "t", Namespace: "ns",
				Metadata: checkpoint.Metadata{Source: "loop", Step: 1},
				Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`[1]`)}},
			}
			require.NoError(t, s.Put(ctx, cp))
			ref := checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: cp.ID}
			require.NoError(t, s.PutWrites(ctx, ref, []checkpoint.Write{{TaskID: "x", Channel: "a", Value: []byte(`2`)}}))
			_, err := connect(t, schema).Exec(ctx, tt.query)
			require.NoError(t, err)

			requireCorrupt := func(err error) {
				t.Helper()
				var cerr *checkpoint.CorruptError
				require.ErrorAs(t, err, &cerr)
				require.Equal(t, checkpoint.CorruptError{ThreadID: "t", Namespace: "ns", CheckpointID: cp.ID, Err: cerr.Err}, *cerr)
			}
			_, err = s.Get(ctx, ref)
			requireCorrupt(err)
			_, err = s.Get(ctx, checkpoint.Ref{ThreadID: "t", Namespace: "ns"})
			requireCorrupt(err)
			for _, filter := range []map[string]any{nil, {"source": "loop"}, {"step": 1}} {
				n := 0
				for _, err := range s.List(ctx, "t", checkpoint.ListOptions{Filter: filter}) {
					requireCorrupt(err)
					n++
				}
				if tt.name == "metadata step of another type" && filter["step"] != nil {
					continue // an object whose step is not 1 matches no filter on it
				}
				require.Equal(t, 1, n, "filter %v", filter)
			}
		})
	}
}
