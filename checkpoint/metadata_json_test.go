package checkpoint_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// metadataMap is the map Metadata.MarshalJSON flattens m into, marshalled
// by encoding/json: the reference its fast path must match byte for byte.
// Extra's entries come first: the fields win a clash.
func metadataMap(m checkpoint.Metadata) map[string]any {
	out := map[string]any{}
	for k, v := range m.Extra {
		out[k] = v
	}
	out["source"], out["step"], out["parents"] = m.Source, m.Step, map[string]string{}
	if m.Parents != nil {
		out["parents"] = m.Parents
	}
	if m.RunID != "" {
		out["run_id"] = m.RunID
	}
	return out
}

func TestMetadataMarshalJSONWritesTheFlatMapsBytes(t *testing.T) {
	for name, m := range map[string]checkpoint.Metadata{
		"empty":      {},
		"loop step":  {Source: "loop", Step: 41, RunID: "run-1"},
		"input step": {Source: "input", Step: -1},
		"parents":    {Source: "loop", Parents: map[string]string{"": "p0", "sub:1": "p1", "a": "p2"}},
		"escapes": {Source: "q\"uote\\back\nline\ttab\x01\x1f<&>", RunID: "é ü 日本 \u2028",
			Parents: map[string]string{"k\"\\": "v\x00", "<b>": "&"}},
		"invalid UTF-8": {Source: "a\xffb\xc3", RunID: "\xed\xa0\x80", Parents: map[string]string{"\xfe": "\xff"}},
		"extra":         {Source: "update", Step: 3, Extra: map[string]any{"user": "ann", "n": 2.5, "step": 99}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(metadataMap(m))
			require.NoError(t, err)
			got, err := m.MarshalJSON()
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			viaMarshal, err := json.Marshal(m)
			require.NoError(t, err)
			require.Equal(t, string(want), string(viaMarshal))
		})
	}
}
