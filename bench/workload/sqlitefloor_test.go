package workload_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/bench/workload"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// BenchmarkSQLiteFloor measures, in one run, what a durable W5 step costs
// on the SQLite saver and the floor under it: a raw modernc.org/sqlite
// loop through database/sql doing what a step must do at least — one
// transaction (BEGIN IMMEDIATE) inserting a checkpoint row and a value
// row into tables shaped like the saver's, on one connection with
// prepared statements. Both run with synchronous NORMAL (the saver's
// default; in WAL mode a commit is not fsynced) and FULL (an fsync per
// commit). The saver's cost per step over the floor's is what the saver
// adds to its driver:
//
//	go test -run X -bench SQLiteFloor -count=3 ./bench/workload/
func BenchmarkSQLiteFloor(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run("raw/"+sync, func(b *testing.B) {
			db := openRawSQLite(b, sync)
			ctx := context.Background()
			ins, err := db.PrepareContext(ctx, `INSERT INTO checkpoints (thread_id, ns, id, parent_id, created_at, metadata, versions, frontier, shape)
				VALUES (?, '', ?, ?, ?, ?, ?, ?, '')`)
			require.NoError(b, err)
			blob, err := db.PrepareContext(ctx, `INSERT INTO blobs (thread_id, ns, channel, version, base, depth, size, hash, data)
				VALUES (?, '', 'Counter', ?, NULL, 0, ?, ?, ?)`)
			require.NoError(b, err)
			meta := []byte(`{"source":"loop","step":1,"parents":{}}`)
			versions := []byte(`{"Counter":1}`)
			frontier := []byte(`{"nodes":["inc"]}`)
			hash := make([]byte, 32)
			run := 0
			b.ReportAllocs()
			for b.Loop() {
				run++
				thread := "raw-" + strconv.Itoa(run)
				parent := ""
				for step := range workload.W5Steps {
					id := fmt.Sprintf("%016x-%08d", time.Now().UnixNano(), step)
					value := []byte(strconv.Itoa(step + 1))
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := tx.StmtContext(ctx, blob).ExecContext(ctx, thread, step+1, len(value), hash, value); err != nil {
						b.Fatal(err)
					}
					if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, thread, id, parent, time.Now().UnixNano(), meta, versions, frontier); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					parent = id
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W5Steps), "ns/step")
		})
		b.Run("saver/"+sync, func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "saver.db"), sqlite.WithSynchronous(sync))
			require.NoError(b, err)
			b.Cleanup(func() { s.Close() })
			g, err := workload.W5(s)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if err := workload.RunW5(ctx, g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*workload.W5Steps), "ns/step")
		})
	}
}

// openRawSQLite opens a fresh WAL database with the saver's two tables
// and indexes (schema version 4) and synchronous set to sync, on one
// connection whose transactions begin IMMEDIATE and whose page cache and
// automatic checkpoint are the saver's writer's. The saver also
// checkpoints on a connection of its own, off the writer's path
// (internal/sqlitedb); the raw loop checkpoints inline, at 10,000 pages.
func openRawSQLite(tb testing.TB, sync string) *sql.DB {
	path := filepath.Join(tb.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(5000)"+
		"&_pragma=cache_size(-65536)&_pragma=wal_autocheckpoint(10000)&_txlock=immediate")
	require.NoError(tb, err)
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE checkpoints (thread_id TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT NOT NULL,
			created_at INTEGER, metadata TEXT NOT NULL, versions TEXT NOT NULL, frontier BLOB NOT NULL, shape TEXT NOT NULL,
			PRIMARY KEY (thread_id, ns, id))`,
		`CREATE INDEX checkpoints_id ON checkpoints (id)`,
		`CREATE TABLE blobs (thread_id TEXT NOT NULL, ns TEXT NOT NULL, channel TEXT NOT NULL, version INTEGER NOT NULL,
			base INTEGER, depth INTEGER NOT NULL, size INTEGER NOT NULL, hash BLOB NOT NULL, data BLOB NOT NULL,
			PRIMARY KEY (thread_id, ns, channel, version))`,
	} {
		_, err := db.Exec(q)
		require.NoError(tb, err)
	}
	return db
}
