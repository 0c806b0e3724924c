package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
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
	checkpointtest.DamagedRows(t, func(t *testing.T) (checkpoint.Saver, func(context.Context, string) error) {
		path := filepath.Join(t.TempDir(), "checkpoints.db")
		return open(t, path), func(ctx context.Context, query string) error {
			_, err := rawDB(t, path).ExecContext(ctx, query)
			return err
		}
	}, []checkpointtest.Damage{
		{Name: "metadata garbage", Query: `UPDATE checkpoints SET metadata = 'garbage'`},
		{Name: "metadata null", Query: `UPDATE checkpoints SET metadata = 'null'`},
		{Name: "versions garbage", Query: `UPDATE checkpoints SET versions = 'garbage'`},
		{Name: "created_at text", Query: `UPDATE checkpoints SET created_at = 'noon'`},
		{Name: "size 1 TiB", Query: `UPDATE blobs SET size = 1099511627776`},
		{Name: "hash short", Query: `UPDATE blobs SET hash = x'00'`},
		{Name: "version text", Query: `UPDATE blobs SET depth = 'deep'`},
		{Name: "own base", Query: `UPDATE blobs SET base = version`},
		{Name: "value missing", Query: `DELETE FROM blobs`},
		{Name: "write index text", Query: `UPDATE writes SET idx = 'first'`},
	})
}
