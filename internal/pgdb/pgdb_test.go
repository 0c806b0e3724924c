package pgdb

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The advisory lock keys must not change: a process of an older version
// migrating the same database at the same time must take the same lock.
func TestLockKeyIsStable(t *testing.T) {
	for name, want := range map[string]int64{
		"agentgraph/checkpoint/postgres migrate ":  2171281743987879012,
		"agentgraph/store/postgres migrate ":       -8375231443928886179,
		"agentgraph/store/postgres migrate tenant": 450670028956290205,
	} {
		require.Equal(t, want, lockKey(name), name)
	}
}

func TestOpenMigratesAndRejectsNewerSchema(t *testing.T) {
	url := os.Getenv("AGENTGRAPH_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("AGENTGRAPH_TEST_POSTGRES_URL not set")
	}
	cfg := Config{
		Options:         Options{Schema: "pgdb_test_" + t.Name()},
		Lock:            "agentgraph/internal/pgdb test",
		MigrationsTable: "pgdb_test_migrations",
		Migrations:      [][]string{{`CREATE TABLE a (x int)`}, {`CREATE TABLE b (y int)`}},
	}
	ctx := t.Context()
	pool, err := Open(ctx, url, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{cfg.Schema}.Sanitize()+` CASCADE`)
		require.NoError(t, err)
		pool.Close()
	})
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT COUNT(*) FROM b`).Scan(&n))

	pool2, err := Open(ctx, url, cfg) // nothing left to do
	require.NoError(t, err)
	pool2.Close()

	cfg.Migrations = cfg.Migrations[:1]
	_, err = Open(ctx, url, cfg)
	verr, ok := err.(*SchemaVersionError)
	require.True(t, ok, "%v", err)
	require.Equal(t, SchemaVersionError{Schema: cfg.Schema, Found: 2, Supported: 1}, *verr)

	cfg.Migrations = [][]string{{`CREATE TABLE a (x int)`}, {`CREATE TABLE b (y int)`}, {`SELECT nonsense`}}
	_, err = Open(ctx, url, cfg)
	require.ErrorContains(t, err, "migrate: migration 3: ")
}
