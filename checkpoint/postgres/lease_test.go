package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// TestLeaseHolderKilled and its child process TestLeaseChild are in
// process_test.go.

func BenchmarkLease(b *testing.B) {
	s, err := postgres.Open(b.Context(), pgdbtest.URL(b), postgres.WithSchema(pgdbtest.FreshSchema(b, "agt_bench")))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	checkpointtest.BenchmarkLease(b, s)
}
