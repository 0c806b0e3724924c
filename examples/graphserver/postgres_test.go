package main

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// Two graphservers on one PostgreSQL database serve one set of threads:
// a thread made through one is run through the other, and its state and
// runs read back through the first.
func TestTwoServersOnPostgresShareThreads(t *testing.T) {
	base := pgdbtest.URL(t)
	schema := pgdbtest.FreshSchema(t, "graphserver")
	conn, err := pgx.Connect(t.Context(), base)
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, conn.Close(t.Context()))
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	ctx, cancel := context.WithCancel(context.Background())
	var servers []*served
	for range 2 {
		servers = append(servers, launch(t, ctx, filepath.Join(t.TempDir(), "unused.db"), "--token", testToken, "--postgres", u.String()))
	}
	t.Cleanup(func() {
		cancel()
		for _, s := range servers {
			require.Equal(t, exitOK, <-s.code, s.stderr.String())
		}
	})
	a, b := servers[0], servers[1]
	th := a.thread(t)
	out := b.wait(t, th, map[string]any{"assistant_id": reactGraph, "input": map[string]any{"messages": []any{human("what is 2 plus 3?")}}})
	require.Contains(t, texts(t, out["messages"]), "The add tool says the sum is 5.")

	var thread map[string]any
	require.Equal(t, 200, a.call(t, "GET", "/threads/"+th, testToken, nil, &thread))
	require.Equal(t, "idle", thread["status"])
	var runs []map[string]any
	require.Equal(t, 200, a.call(t, "GET", "/threads/"+th+"/runs", testToken, nil, &runs))
	require.Len(t, runs, 1)
	require.Equal(t, "success", runs[0]["status"])
}
