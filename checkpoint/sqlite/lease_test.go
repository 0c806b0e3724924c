package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
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

// The fence is part of the checkpoint's first statement, with the parent
// check: a fenced write whose parent is stale too is refused for its
// lease, and neither its row nor its values stay.
func TestFencedPutWithAStaleParentIsRefusedForItsLease(t *testing.T) {
	tests := []struct {
		name   string
		parent string
	}{
		{"parent latest", "0001"},
		{"parent stale", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openFile(t)
			old, err := s.AcquireLease(t.Context(), "f", "old", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(t.Context(), old))
			cur, err := s.AcquireLease(t.Context(), "f", "new", time.Minute)
			require.NoError(t, err)
			require.NoError(t, checkpoint.Fenced(s, cur).Put(t.Context(), cpOf("f", "0001", "", 1, `1`)))

			err = checkpoint.Fenced(s, old).Put(t.Context(), cpOf("f", "0002", tt.parent, 2, `[2]`))
			f, ok := errors.AsType[*checkpoint.FencedError](err)
			require.True(t, ok, "want a *checkpoint.FencedError, got %v", err)
			require.Equal(t, cur.Fence, f.Current)
			requireLatest(t, s, "f", "0001")
			// Its value's version is free: the holder stores another.
			require.NoError(t, checkpoint.Fenced(s, cur).Put(t.Context(), cpOf("f", "0002", "0001", 2, `[3]`)))
			got, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "f"})
			require.NoError(t, err)
			require.JSONEq(t, `[3]`, string(got.Value("a")))
		})
	}
}
