package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
)

// TestLeaseHolderKilled and its child process TestLeaseChild are in
// process_test.go.

func BenchmarkLease(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "leases.db"))
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	checkpointtest.BenchmarkLease(b, s)
}
