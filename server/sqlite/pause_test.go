//go:build unix

package sqlite_test

// A server process SIGSTOPped past its run lease is fenced: the test of
// internal/durabilitytest, which re-executes this test binary as the
// server processes (TestProcessChild).

import (
	"context"
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

// pauseBackend is server/sqlite and checkpoint/sqlite on one file.
var pauseBackend = durabilitytest.ServerBackend{
	Saver: durabilitytest.SQLite,
	Open: func(ctx context.Context, path string) (server.Backend, func(), error) {
		b, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		return b, func() { b.Close() }, nil
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
