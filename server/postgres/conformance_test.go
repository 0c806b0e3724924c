package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/backendtest"
	"github.com/agentgraph/agentgraph/server/postgres"
)

// openBackend opens a Backend on its own pool with the given schema first
// on its search_path; the pool is closed when the test ends.
func openBackend(t *testing.T, url, schema string) *postgres.Backend {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b, err := postgres.New(t.Context(), pool)
	require.NoError(t, err)
	return b
}

func TestConformance(t *testing.T) {
	url := pgdbtest.URL(t)
	var mu sync.Mutex
	schemas := map[server.Backend]string{}
	backendtest.Run(t, func(t *testing.T) server.Backend {
		schema := pgdbtest.FreshSchema(t, "srv_conf")
		conn, err := pgx.Connect(t.Context(), url)
		require.NoError(t, err)
		_, err = conn.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
		require.NoError(t, err)
		require.NoError(t, conn.Close(context.Background()))
		b := openBackend(t, url, schema)
		mu.Lock()
		schemas[b] = schema
		mu.Unlock()
		return b
	}, backendtest.WithSecondInstance(func(t *testing.T, b server.Backend) server.Backend {
		mu.Lock()
		schema := schemas[b]
		mu.Unlock()
		return openBackend(t, url, schema)
	}))
}
