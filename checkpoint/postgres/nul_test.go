package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// TestMetadataWithNULIsStoredWithReplacementCharacters puts a checkpoint
// whose metadata holds U+0000, which jsonb refuses: the Put succeeds, the
// metadata reads back with U+FFFD in its place, a filter naming the
// original value finds it, and the channel's value (bytea) keeps its NUL.
func TestMetadataWithNULIsStoredWithReplacementCharacters(t *testing.T) {
	s := open(t, freshSchema(t))
	cp := &checkpoint.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: time.Now(),
		Metadata: checkpoint.Metadata{Source: "input", Step: -1, RunID: "r\x00",
			Extra: map[string]any{"who": "a\x00b", "k\x00": "v", "n": 1.0}},
		Channels: []checkpoint.Channel{{Name: "x", Version: 1, Value: []byte(`"x\u0000y"`)}}}
	require.NoError(t, s.Put(t.Context(), cp))

	tup, err := s.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Equal(t, "r\uFFFD", tup.Checkpoint.Metadata.RunID)
	require.Equal(t, map[string]any{"who": "a\uFFFDb", "k\uFFFD": "v", "n": 1.0}, tup.Checkpoint.Metadata.Extra)
	require.Equal(t, []checkpoint.Channel{{Name: "x", Version: 1, Value: []byte(`"x\u0000y"`)}}, tup.Checkpoint.Channels)

	for _, tc := range []struct {
		name   string
		filter map[string]any
		found  bool
	}{
		{"the value as put", map[string]any{"who": "a\x00b"}, true},
		{"the key as put", map[string]any{"k\x00": "v", "n": 1}, true},
		{"the value as stored", map[string]any{"who": "a\uFFFDb"}, true},
		{"another value", map[string]any{"who": "ab"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for tup, err := range s.List(t.Context(), "t", checkpoint.ListOptions{Filter: tc.filter}) {
				require.NoError(t, err)
				ids = append(ids, tup.Checkpoint.ID)
			}
			if tc.found {
				require.Equal(t, []string{"c1"}, ids)
			} else {
				require.Empty(t, ids)
			}
		})
	}
}
