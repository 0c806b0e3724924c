package sqlsaver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/deltas"
)

func testTuple() *checkpoint.Tuple {
	return &checkpoint.Tuple{Checkpoint: checkpoint.Checkpoint{ThreadID: "t", Namespace: "ns", ID: "c1"}}
}

// requireCorrupt checks that err is a *checkpoint.CorruptError naming
// testTuple.
func requireCorrupt(t *testing.T, err error) {
	t.Helper()
	var cerr *checkpoint.CorruptError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, checkpoint.CorruptError{ThreadID: "t", Namespace: "ns", CheckpointID: "c1", Err: cerr.Err}, *cerr)
	require.ErrorIs(t, err, checkpoint.ErrCorrupt)
}

func TestDecodeColumns(t *testing.T) {
	tests := []struct {
		name           string
		meta, versions string
		bad            string // the column that does not decode
	}{
		{"written", `{"source":"loop","step":2,"parents":{}}`, `{"a":3,"b":4}`, ""},
		{"no channels", `{"source":"input","step":-1}`, `{}`, ""},
		{"metadata garbage", `garbage`, `{}`, "metadata"},
		{"metadata null", `null`, `{}`, "metadata"},
		{"metadata not an object", `[1]`, `{}`, "metadata"},
		{"metadata truncated", `{"source":"lo`, `{}`, "metadata"},
		{"metadata step of another type", `{"step":"two"}`, `{}`, "metadata"},
		{"versions garbage", `{}`, `{"a":`, "versions"},
		{"versions null", `{}`, `null`, "versions"},
		{"versions not an object", `{}`, `[1]`, "versions"},
		{"version not a number", `{}`, `{"a":"3"}`, "versions"},
		{"version not an integer", `{}`, `{"a":1.5}`, "versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DecodeColumns(testTuple(), []byte(tt.meta), []byte(tt.versions))
			_, merr := Matches([]byte(tt.meta), checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: "c1"}, nil)
			switch tt.bad {
			case "":
				require.NoError(t, err)
				require.NoError(t, merr)
			case "metadata":
				requireCorrupt(t, err)
				requireCorrupt(t, merr)
			default:
				requireCorrupt(t, err)
				require.NoError(t, merr)
			}
			if err != nil {
				require.ErrorContains(t, err, tt.bad)
			}
		})
	}
}

func TestSetValues(t *testing.T) {
	value := []byte(`["x"]`)
	whole := deltas.Encode(5, value, nil, deltas.DefaultFanout)
	tests := []struct {
		name  string
		paths map[string][]deltas.Blob
		ok    bool
	}{
		{"stored", map[string][]deltas.Blob{"a": {whole}}, true},
		{"missing", map[string][]deltas.Blob{}, false},
		{"empty path", map[string][]deltas.Blob{"a": {}}, false},
		{"other version", map[string][]deltas.Blob{"a": {deltas.Encode(4, value, nil, deltas.DefaultFanout)}}, false},
		{"damaged", map[string][]deltas.Blob{"a": {{Version: 5, Size: 1 << 40, Hash: whole.Hash, Data: value}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tup := testTuple()
			tup.Channels = []checkpoint.Channel{{Name: "a", Version: 5}}
			err := SetValues(tup, tt.paths)
			if !tt.ok {
				requireCorrupt(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, value, tup.Channels[0].Value)
		})
	}
}

// FuzzDecodeColumns decodes a checkpoint row as the SQL savers store it:
// the metadata and versions columns, and the paths of blobs the versions
// lead to, one blob a line:
//
//	channel version base depth size hash data
//
// with base "-" for a whole value, hash in hex and data the rest of the
// line. The seed corpus in testdata/fuzz/FuzzDecodeColumns holds rows read
// back from a real run's SQLite database. Decoding must never panic, and
// must either fill every channel's value or fail with a
// *checkpoint.CorruptError naming the checkpoint.
func FuzzDecodeColumns(f *testing.F) {
	f.Fuzz(func(t *testing.T, meta, versions, paths []byte) {
		ps, ok := parsePaths(paths)
		if !ok {
			return
		}
		tup := testTuple()
		err := DecodeColumns(tup, meta, versions)
		if err == nil {
			err = SetValues(tup, ps)
		}
		_, merr := Matches(meta, checkpoint.Ref{ThreadID: "t", Namespace: "ns", ID: "c1"}, map[string]any{"source": "loop"})
		if merr != nil {
			requireCorrupt(t, merr)
			require.Error(t, err, "Matches refuses metadata DecodeColumns accepts")
		}
		if err != nil {
			requireCorrupt(t, err)
			return
		}
		require.True(t, slices.IsSortedFunc(tup.Channels, func(a, b checkpoint.Channel) int { return strings.Compare(a.Name, b.Name) }))
		for _, ch := range tup.Channels {
			require.NotNil(t, ch.Value, "channel %q", ch.Name)
			require.Contains(t, ps, ch.Name)
			i := slices.IndexFunc(ps[ch.Name], func(b deltas.Blob) bool { return b.Version == ch.Version })
			require.GreaterOrEqual(t, i, 0)
			require.Equal(t, ps[ch.Name][i].Hash, sha256.Sum256(ch.Value))
		}
	})
}

// parsePaths parses the paths of FuzzDecodeColumns.
func parsePaths(in []byte) (map[string][]deltas.Blob, bool) {
	paths := make(map[string][]deltas.Blob)
	for line := range bytes.Lines(in) {
		f := bytes.SplitN(bytes.TrimSuffix(line, []byte("\n")), []byte(" "), 7)
		if len(f) != 7 {
			return nil, false
		}
		var b deltas.Blob
		var err [4]error
		b.Version, err[0] = strconv.ParseInt(string(f[1]), 10, 64)
		if string(f[2]) != "-" {
			b.Delta = true
			b.Base, err[1] = strconv.ParseInt(string(f[2]), 10, 64)
		}
		b.Depth, err[2] = strconv.ParseInt(string(f[3]), 10, 64)
		b.Size, err[3] = strconv.ParseInt(string(f[4]), 10, 64)
		for _, e := range err {
			if e != nil {
				return nil, false
			}
		}
		if len(f[5]) == hex.EncodedLen(len(b.Hash)) {
			hex.Decode(b.Hash[:], f[5]) // a bad hash stays (partly) zero
		}
		b.Data = f[6]
		paths[string(f[0])] = append(paths[string(f[0])], b)
	}
	return paths, true
}

func TestEncodeColumnsWritesTheVersionMapsBytes(t *testing.T) {
	for name, chs := range map[string][]checkpoint.Channel{
		"none":                               nil,
		"sorted":                             {{Name: "a", Version: 1}, {Name: "b", Version: 2}},
		"unsorted":                           {{Name: "messages", Version: 7}, {Name: "counter", Version: 43}, {Name: "__start__", Version: 1}},
		"a channel twice keeps the last":     {{Name: "c", Version: 1}, {Name: "b", Version: 3}, {Name: "c", Version: 5}},
		"three times, the last":              {{Name: "c", Version: 9}, {Name: "c", Version: 1}, {Name: "c", Version: 4}},
		"escapes and invalid UTF-8":          {{Name: "ch\"\\\n日<", Version: 1}, {Name: "\xfe", Version: 2}, {Name: "\xff", Version: 3}},
		"more channels than the stack array": manyChannels(40),
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(VersionMap(chs))
			require.NoError(t, err)
			_, got, err := EncodeColumns(&checkpoint.Checkpoint{Channels: chs})
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

// manyChannels returns n channels in descending name order.
func manyChannels(n int) []checkpoint.Channel {
	chs := make([]checkpoint.Channel, n)
	for i := range chs {
		chs[i] = checkpoint.Channel{Name: "ch" + strconv.Itoa(n-i), Version: int64(i)}
	}
	return chs
}
