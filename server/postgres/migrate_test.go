package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
)

func TestNewUpgradesAVersion1SchemaWithItsThreads(t *testing.T) {
	url := pgdbtest.URL(t)
	schema := pgdbtest.FreshSchema(t, "srv_upgrade")
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `SET search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	for _, stmt := range postgres.MigrationsForTest()[0] {
		_, err := conn.Exec(t.Context(), stmt)
		require.NoError(t, err)
	}
	_, err = conn.Exec(t.Context(), `CREATE TABLE agentgraph_server_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `INSERT INTO agentgraph_server_schema_migrations (version) VALUES (1)`)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), `INSERT INTO agentgraph_server_threads (thread_id, created_at, updated_at, metadata, status, config, vals, interrupts)
		VALUES ('t1', now(), now(), '{"old":true}', 'idle', '{}', 'null', '{}')`)
	require.NoError(t, err)

	b := openBackend(t, url, schema)
	th, err := b.Thread(t.Context(), "t1")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"old": true}, th.Metadata)
	a, err := b.CreateAssistant(t.Context(), server.AssistantRecord{ID: "a1", GraphID: "agent", Name: "new"}, "")
	require.NoError(t, err)
	require.Equal(t, 1, a.Version)
	var v int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT MAX(version) FROM agentgraph_server_schema_migrations`).Scan(&v))
	require.Equal(t, postgres.SchemaVersion(), v)
}
