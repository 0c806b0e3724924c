package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
	srvsqlite "github.com/agentgraph/agentgraph/server/sqlite"
)

// backendEnv runs the tests built on newEnv against a server keeping its
// threads and runs in a Backend given with WithBackend instead of its own
// MemoryBackend: "memory" (a MemoryBackend given as a shared one would
// be: runs released at shutdown, DefaultWorkers at once), "postgres"
// (server/postgres, with the checkpoints in PostgreSQL too; needs
// AGENTGRAPH_TEST_POSTGRES_URL) or "sqlite" (server/sqlite, with the
// checkpoints in the same SQLite file; needs nothing).
const backendEnv = "AGENTGRAPH_TEST_SERVER_BACKEND"

// onBackend reports whether the tests run against a Backend.
func onBackend() bool {
	switch os.Getenv(backendEnv) {
	case "memory", "postgres", "sqlite":
		return true
	}
	return false
}

// memoryOnly skips a test of what only the in-memory server does.
func memoryOnly(t *testing.T, why string) {
	t.Helper()
	if onBackend() {
		t.Skip("in memory only: " + why)
	}
}

// envSaver returns the saver of a test server and, with a Backend, the
// options that keep its threads and runs there.
func envSaver(t *testing.T) (checkpoint.Saver, []server.Option) {
	t.Helper()
	var b server.Backend
	var saver checkpoint.Saver
	switch os.Getenv(backendEnv) {
	case "postgres":
		saver, b = postgresEnv(t)
	case "sqlite":
		saver, b = sqliteEnv(t)
	case "memory":
		saver, b = checkpoint.NewMemory(), server.NewMemoryBackend()
	default:
		return checkpoint.NewMemory(), nil
	}
	return saver, []server.Option{server.WithBackend(b), server.WithPollInterval(10 * time.Millisecond), server.WithRunLeaseTTL(2 * time.Second)}
}

func postgresEnv(t *testing.T) (checkpoint.Saver, server.Backend) {
	t.Helper()
	url := pgdbtest.URL(t)
	schema := pgdbtest.FreshSchema(t, "srv_api")
	saver, err := pgsaver.Open(t.Context(), url, pgsaver.WithSchema(schema), pgsaver.WithMaxConns(8))
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	b, err := postgres.New(t.Context(), pool)
	require.NoError(t, err)
	t.Cleanup(func() { // after the server's own cleanup
		pool.Close()
		require.NoError(t, saver.Close())
	})
	return saver, b
}

func sqliteEnv(t *testing.T) (checkpoint.Saver, server.Backend) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.db")
	saver, err := ckptsqlite.Open(t.Context(), path)
	require.NoError(t, err)
	b, err := srvsqlite.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { // after the server's own cleanup
		require.NoError(t, b.Close())
		require.NoError(t, saver.Close())
	})
	return saver, b
}
