package postgres_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// TestExample runs Example, which has no Output line because it needs a
// server, and checks what it prints.
func TestExample(t *testing.T) {
	url := pgdbtest.URL(t)
	dropSchema := func() { // also from Cleanup, when t.Context is done
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS agentgraph_example CASCADE`)
		require.NoError(t, err)
	}
	dropSchema()
	t.Cleanup(dropSchema)
	t.Setenv("DATABASE_URL", url)

	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stdout = stdout }()
		Example()
	}()
	require.NoError(t, w.Close())
	require.Equal(t, `worker 1 paused: approve a new laptop?
worker 2 refused: thread in use by worker 1
worker 2 resumed: approved = true
`, string(<-done))
}
