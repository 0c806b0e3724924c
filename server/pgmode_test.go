package server_test

import (
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
)

// backendEnv, set to "postgres", runs the tests built on newEnv against
// a server keeping its threads and runs in PostgreSQL (server/postgres),
// with the checkpoints there too, instead of in memory.
const backendEnv = "AGENTGRAPH_TEST_SERVER_BACKEND"

// onPostgres reports whether the tests run against the PostgreSQL backend.
func onPostgres() bool { return os.Getenv(backendEnv) == "postgres" }

// memoryOnly skips a test of what only the in-memory server does.
func memoryOnly(t *testing.T, why string) {
	t.Helper()
	if onPostgres() {
		t.Skip("in memory only: " + why)
	}
}

// envSaver returns the saver of a test server and, on PostgreSQL, the
// options that keep its threads and runs there.
func envSaver(t *testing.T) (checkpoint.Saver, []server.Option) {
	t.Helper()
	if !onPostgres() {
		return checkpoint.NewMemory(), nil
	}
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
	return saver, []server.Option{server.WithBackend(b), server.WithPollInterval(10 * time.Millisecond), server.WithRunLeaseTTL(2 * time.Second)}
}
