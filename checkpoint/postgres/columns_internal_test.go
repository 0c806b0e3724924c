package postgres

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
)

// encodeColumns writes the JSON of sqlsaver.EncodeColumns itself for a
// checkpoint without Extra metadata: the objects must hold the same
// values, whatever their bytes.
func TestEncodeColumnsMatchesSQLSaver(t *testing.T) {
	for _, tc := range []struct {
		name string
		cp   checkpoint.Checkpoint
	}{
		{"empty", checkpoint.Checkpoint{}},
		{"loop step", checkpoint.Checkpoint{
			Metadata: checkpoint.Metadata{Source: "loop", Step: 41, RunID: "run-1"},
			Channels: []checkpoint.Channel{{Name: "counter", Version: 43}, {Name: "messages", Version: 7}},
		}},
		{"input step", checkpoint.Checkpoint{Metadata: checkpoint.Metadata{Source: "input", Step: -1}}},
		{"parents", checkpoint.Checkpoint{Metadata: checkpoint.Metadata{Source: "loop", Parents: map[string]string{"": "p0", "sub:1": "p1", "a": "p2"}}}},
		{"escapes", checkpoint.Checkpoint{
			Metadata: checkpoint.Metadata{Source: "q\"uote\\back\nline\ttab\x01\x1f<&>", RunID: "é ü 日本 \u2028", Parents: map[string]string{"k\"\\": "v\x00"}},
			Channels: []checkpoint.Channel{{Name: "ch\"\\\n日", Version: 1}},
		}},
		{"invalid UTF-8", checkpoint.Checkpoint{
			Metadata: checkpoint.Metadata{Source: "a\xffb\xc3", RunID: "\xed\xa0\x80"},
			Channels: []checkpoint.Channel{{Name: "\xfe", Version: 2}},
		}},
		{"a channel twice keeps the last version", checkpoint.Checkpoint{
			Channels: []checkpoint.Channel{{Name: "c", Version: 1}, {Name: "c", Version: 5}},
		}},
		{"extra metadata", checkpoint.Checkpoint{
			Metadata: checkpoint.Metadata{Source: "update", Step: 3, Extra: map[string]any{"user": "ann", "n": 2.5, "step": 99}},
			Channels: []checkpoint.Channel{{Name: "x", Version: 9}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantMeta, wantVersions, err := sqlsaver.EncodeColumns(&tc.cp)
			require.NoError(t, err)
			meta, versions, err := encodeColumns(&tc.cp)
			require.NoError(t, err)
			require.Equal(t, decodeJSON(t, string(wantMeta)), decodeJSON(t, meta))
			require.Equal(t, decodeJSON(t, string(wantVersions)), decodeJSON(t, versions))
		})
	}
}

// decodeJSON decodes s, which must be valid JSON.
func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	require.True(t, json.Valid([]byte(s)), s)
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}
