package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

func TestOpenDamagedFileFails(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"not a database", "# notes\nthis file was never a SQLite database, whatever its name says\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			require.NoError(t, os.WriteFile(path, []byte(tt.data), 0o600))
			_, err := sqlite.Open(t.Context(), path, sqlite.WithBusyTimeout(0))
			var ferr *sqlite.CorruptFileError
			require.ErrorAs(t, err, &ferr)
			require.Equal(t, path, ferr.Path)
			require.ErrorIs(t, err, checkpoint.ErrCorrupt)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tt.data, string(got), "the file is left as it was")
		})
	}
}

// TestDamagedRowsAreCorruptErrors damages the rows of a checkpoint with
// SQL: every read of it, a filtered List included, names it.
func TestDamagedRowsAreCorruptErrors(t *testing.T) {
	tests := []struct {
		name, query string
	}{
		{"metadata garbage", `UPDATE checkpoints SET metadata = 'garbage'`},
		{"metadata null", `UPDATE checkpoints SET metadata = 'null'`},
		{"versions garbage", `UPDATE checkpoints SET versions = 'garbage'`},
		{"created_at text", `UPDATE checkpoints SET created_at = 'noon'`},
		{"size 1 TiB", `UPDATE blobs SET size = 1099511627776`},
		{"hash short", `UPDATE blobs SET hash = x'00'`},
		{"version text", `UPDATE blobs SET depth = 'deep'`},
		{"own base", `UPDATE blobs SET base = version`},
		{"value missing", `DELETE FROM blobs`},
		{"write index text", `UPDATE writes SET idx = 'first'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			s := open(t, path)
			ctx := t.Context()
			cp := &checkpoint.Checkpoint{
				ID: checkpoint.NewID(), ThreadID: "t", Namespace: "ns",
				Metadata: checkpoint.Metadata{Source: "loop", Step: 1},
				Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`[1]`)}},
			}
			require.NoError(t, s.Put(ctx, cp))
			ref := checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: cp.ID}
			require.NoError(t, s.PutWrites(ctx, ref, []checkpoint.Write{{TaskID: "x", Channel: "a", Value: []byte(`2`)}}))
			_, err := rawDB(t, path).ExecContext(ctx, tt.query)
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
				require.Equal(t, 1, n, "filter %v", filter)
			}
		})
	}
}
