package checkpoint_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/checkpointtest"
)

func TestMemoryConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return checkpoint.NewMemory()
	})
}

// TestMemoryZeroValueIsEmptySaver calls each method first on a zero
// Memory: none panics, and each answers as an empty saver does.
func TestMemoryZeroValueIsEmptySaver(t *testing.T) {
	ref := checkpoint.Ref{ThreadID: "t", ID: "1"}
	tests := []struct {
		name string
		call func(t *testing.T, m *checkpoint.Memory)
	}{
		{"Get finds nothing", func(t *testing.T, m *checkpoint.Memory) {
			_, err := m.Get(t.Context(), ref)
			require.ErrorIs(t, err, checkpoint.ErrNotFound)
		}},
		{"Put stores the checkpoint", func(t *testing.T, m *checkpoint.Memory) {
			cp := &checkpoint.Checkpoint{ThreadID: "t", ID: "1", Channels: []checkpoint.Channel{{Name: "x", Version: 1, Value: []byte(`1`)}}}
			require.NoError(t, m.Put(t.Context(), cp))
			got, err := m.Get(t.Context(), ref)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff([]checkpoint.Channel{{Name: "x", Version: 1, Value: []byte(`1`)}}, got.Channels))
		}},
		{"PutWrites stores the writes", func(t *testing.T, m *checkpoint.Memory) {
			w := checkpoint.Write{TaskID: "task", Channel: "x", Value: []byte(`2`)}
			require.NoError(t, m.PutWrites(t.Context(), ref, []checkpoint.Write{w}))
			require.NoError(t, m.Put(t.Context(), &checkpoint.Checkpoint{ThreadID: "t", ID: "1"}))
			got, err := m.Get(t.Context(), ref)
			require.NoError(t, err)
			require.Empty(t, cmp.Diff([]checkpoint.Write{w}, got.PendingWrites))
		}},
		{"List yields nothing", func(t *testing.T, m *checkpoint.Memory) {
			for tp, err := range m.List(t.Context(), "", checkpoint.ListOptions{}) {
				require.NoError(t, err)
				require.Failf(t, "List yielded a checkpoint", "%+v", tp)
			}
		}},
		{"DeleteThread succeeds", func(t *testing.T, m *checkpoint.Memory) {
			require.NoError(t, m.DeleteThread(t.Context(), "t"))
		}},
		{"AcquireLease takes the lease", func(t *testing.T, m *checkpoint.Memory) {
			l, err := m.AcquireLease(t.Context(), "t", "me", time.Hour)
			require.NoError(t, err)
			require.Equal(t, "me", l.Holder)
		}},
		{"RenewLease finds the lease lost", func(t *testing.T, m *checkpoint.Memory) {
			_, err := m.RenewLease(t.Context(), checkpoint.Lease{ThreadID: "t", Token: "x"}, time.Hour)
			require.ErrorIs(t, err, checkpoint.ErrLeaseLost)
		}},
		{"ReleaseLease succeeds", func(t *testing.T, m *checkpoint.Memory) {
			require.NoError(t, m.ReleaseLease(t.Context(), checkpoint.Lease{ThreadID: "t", Token: "x"}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call(t, new(checkpoint.Memory))
		})
	}
}
