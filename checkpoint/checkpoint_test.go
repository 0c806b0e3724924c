package checkpoint_test

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

func TestCheckpointLookupFindsChannelsByName(t *testing.T) {
	cp := &checkpoint.Checkpoint{Channels: []checkpoint.Channel{
		{Name: "a", Version: 1, Value: []byte(`1`)},
		{Name: "b", Version: 7},
		{Name: "messages", Version: 3, Value: []byte(`[]`)},
	}}
	tests := []struct {
		name    string
		ok      bool
		version int64
		value   string
	}{
		{"a", true, 1, "1"},
		{"b", true, 7, ""},
		{"messages", true, 3, "[]"},
		{"missing", false, 0, ""},
		{"", false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, ok := cp.Lookup(tt.name)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.version, cp.Version(tt.name))
			require.Equal(t, tt.value, string(cp.Value(tt.name)))
			require.Equal(t, tt.version, ch.Version)
		})
	}
}

func TestCheckpointCloneSharesNothing(t *testing.T) {
	cp := &checkpoint.Checkpoint{
		ID:       "1",
		Metadata: checkpoint.Metadata{Parents: map[string]string{"": "0"}, Extra: map[string]any{"k": "v"}},
		Channels: []checkpoint.Channel{{Name: "a", Version: 1, Value: []byte(`[1]`)}},
		Frontier: []byte(`{}`),
	}
	c := cp.Clone()
	require.Empty(t, cmp.Diff(cp, c))
	c.Channels[0].Value[1] = '2'
	c.Channels[0].Version = 2
	c.Frontier[0] = 'x'
	c.Metadata.Parents[""] = "x"
	c.Metadata.Extra["k"] = "x"
	require.Equal(t, `[1]`, string(cp.Value("a")))
	require.Equal(t, int64(1), cp.Version("a"))
	require.Equal(t, `{}`, string(cp.Frontier))
	require.Equal(t, "0", cp.Metadata.Parents[""])
	require.Equal(t, "v", cp.Metadata.Extra["k"])
}

func TestNewIDsIncreaseAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 500
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], checkpoint.NewID())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		require.True(t, slices.IsSorted(list), "one goroutine's IDs are in creation order")
		for _, id := range list {
			require.Len(t, id, 32)
			require.False(t, seen[id], "duplicate ID %s", id)
			seen[id] = true
		}
	}
}

func TestNewIDAtCarriesTheTimeAndStaysIncreasing(t *testing.T) {
	at := time.Now()
	a := checkpoint.NewIDAt(at)
	ts, err := strconv.ParseUint(a[:16], 16, 64)
	require.NoError(t, err)
	// The time itself, or just past an ID made in the same nanoseconds.
	require.GreaterOrEqual(t, ts, uint64(at.UnixNano()))
	require.Less(t, ts, uint64(at.Add(time.Millisecond).UnixNano()))
	b := checkpoint.NewIDAt(at) // the same time: still a larger ID
	require.Less(t, a, b)
	c := checkpoint.NewIDAt(at.Add(-time.Hour)) // an earlier time too
	require.Less(t, b, c)
	require.Equal(t, a[16:], c[16:], "the suffix is the process's")
}
