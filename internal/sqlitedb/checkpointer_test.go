package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// A commit's pages reach the database file without waiting for the
// writer's automatic checkpoint: far fewer pages than
// writerAutocheckpoint are written, and the file grows by them.
func TestCommittedPagesAreCheckpointedInTheBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db := open(t, path, testConfig())
	before := fileSize(t, path)
	value := strings.Repeat("v", 400<<10) // ~100 pages, in overflow pages
	require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, "k", value)
		return err
	}))
	require.Eventually(t, func() bool { return fileSize(t, path) >= before+int64(len(value)) },
		10*time.Second, checkpointInterval)

	// The database reads back whole from the file alone, once closed.
	require.NoError(t, db.Close())
	db = open(t, path, testConfig())
	var got string
	require.NoError(t, db.Read(t.Context(), func(tx Tx) error {
		return tx.QueryRow(`SELECT v FROM t WHERE k = ?`, "k").Scan(&got)
	}))
	require.Equal(t, value, got)
}

func TestCloseTwiceStopsTheCheckpointerOnce(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), testConfig())
	require.NoError(t, err)
	require.NotNil(t, db.ckpt)
	require.NoError(t, db.Close())
	require.NotPanics(t, func() { _ = db.Close() })
	select {
	case <-db.ckpt.done:
	default:
		t.Fatal("the checkpointer's goroutine still runs after Close")
	}
}

func TestMemoryDatabaseHasNoCheckpointer(t *testing.T) {
	db := open(t, ":memory:", testConfig())
	require.Nil(t, db.ckpt)
	require.NoError(t, db.Write(t.Context(), func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, "k", "v")
		return err
	}))
}

// The checkpointer's connection syncs as the writer's does: a checkpoint
// syncs the files by its own connection's synchronous, so that with
// synchronous OFF a checkpointer at SQLite's default (FULL) would fsync
// the WAL and the database at every checkpoint the writer was told not to.
func TestCheckpointerSyncsAsTheWriter(t *testing.T) {
	tests := []struct {
		mode string
		want int // PRAGMA synchronous's value
	}{
		{"OFF", 0},
		{"normal", 1},
		{"Full", 2},
		{"EXTRA", 3},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			cfg := testConfig()
			cfg.Synchronous = tt.mode
			db := open(t, filepath.Join(t.TempDir(), "x.db"), cfg)
			var writer, ckpt int
			require.NoError(t, db.W.QueryRow(`PRAGMA synchronous`).Scan(&writer))
			require.NoError(t, db.ckpt.db.QueryRow(`PRAGMA synchronous`).Scan(&ckpt))
			require.Equal(t, tt.want, writer)
			require.Equal(t, tt.want, ckpt)
		})
	}
}
