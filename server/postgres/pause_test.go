//go:build unix

package postgres_test

// A server process SIGSTOPped past its run lease is fenced: the test of
// internal/durabilitytest, which re-executes this test binary as the
// server processes (TestProcessChild).

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
)

// pauseBackend is server/postgres and checkpoint/postgres in one schema.
var pauseBackend = durabilitytest.ServerBackend{
	Saver: durabilitytest.Postgres,
	Open: func(ctx context.Context, schema string) (server.Backend, func(), error) {
		url := os.Getenv(pgdbtest.URLEnv)
		if url == "" {
			return nil, nil, errors.New(pgdbtest.URLEnv + " is not set")
		}
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			return nil, nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
		cfg.ConnConfig.RuntimeParams["application_name"] = durabilitytest.SessionName()
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		b, err := postgres.New(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return b, pool.Close, nil
	},
}

// TestProcessChild is the server process of TestPausedServer; run on its
// own it is skipped.
func TestProcessChild(t *testing.T) { durabilitytest.ServerChild(t, pauseBackend) }

// TestPausedServer: a server process SIGSTOPped past its run lease, whose
// run another process took over and finished, writes nothing once resumed
// (-serverpause.trials=20 for the measure).
func TestPausedServer(t *testing.T) { durabilitytest.PausedServer(t, pauseBackend) }

// TestRollbackResetOfAPausedServerIsFenced: a paused server's reset of a
// rolled-back thread is refused once another server took its run over.
func TestRollbackResetOfAPausedServerIsFenced(t *testing.T) {
	durabilitytest.RollbackReset(t, pauseBackend)
}
