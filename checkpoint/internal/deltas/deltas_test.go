package deltas

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// store holds blobs by version, with the lookups a database saver
// performs; versions are put in increasing order.
type store struct {
	blobs map[int64]Blob
	last  int64
}

func newStore() *store { return &store{blobs: map[int64]Blob{}} }

func (s *store) path(v int64) []Blob {
	var p []Blob
	for {
		b, ok := s.blobs[v]
		if !ok {
			return nil
		}
		p = append(p, b)
		if !b.Delta {
			return p
		}
		v = b.Base
	}
}

func (s *store) put(v int64, value []byte, fanout int) Blob {
	var p []Blob
	if s.last > 0 {
		for _, b := range s.path(s.last) {
			b.Data = nil // Encode must not need the previous data
			p = append(p, b)
		}
	}
	b := Encode(v, value, p, fanout)
	s.blobs[v] = b
	s.last = v
	return b
}

func TestAppends(t *testing.T) {
	tests := []struct {
		old, next string
		want      bool
	}{
		{`[]`, `[]`, true},
		{`[]`, `[1]`, true},
		{`[1]`, `[1,2]`, true},
		{`[1]`, `[1]`, true},
		{`[1,2]`, `[1,2,{"a":[3]}]`, true},
		{`[1 ]`, `[1 ,2]`, true},
		{`[1]`, `[12]`, false},
		{`[1]`, `[2,1]`, false},
		{`[1,2]`, `[1]`, false},
		{`[1]`, `[1,2] `, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`"[x]"`, `"[x]"`, false},
		{``, `[1]`, false},
		{`[1]`, ``, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Appends([]byte(tt.old), []byte(tt.next)), "Appends(%s, %s)", tt.old, tt.next)
	}
}

func TestEncodeDecodeAppendsRoundTrip(t *testing.T) {
	for _, fanout := range []int{0, 2, 3, 16, 64} {
		t.Run(fmt.Sprint("fanout=", fanout), func(t *testing.T) {
			s := newStore()
			value := []byte(`[]`)
			values := map[int64][]byte{}
			for v := int64(1); v <= 700; v++ {
				switch {
				case v%97 == 0: // a rewrite that is not an append
					value = []byte(`["reset"]`)
				case v%31 == 0: // no change
				default:
					value = append(value[:len(value)-1:len(value)-1], fmt.Sprintf(`,{"n":%d}]`, v)...)
					if value[1] == ',' {
						value = append([]byte{'['}, value[2:]...)
					}
				}
				s.put(v, value, fanout)
				values[v] = value
			}
			for v, want := range values {
				got, err := Decode(s.path(v))
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "version %d", v)
			}
		})
	}
}

func TestPathLengthIsLogarithmic(t *testing.T) {
	const fanout, n = 16, 4095
	s := newStore()
	value := []byte(`["x"`)
	longest := 0
	for v := int64(1); v <= n; v++ {
		value = append(value, `,"x"`...)
		s.put(v, append(value[:len(value):len(value)], ']'), fanout)
		longest = max(longest, len(s.path(v)))
	}
	// 4095 = fff in base 16: three levels of at most 15 deltas, plus the
	// whole value the run starts from.
	require.LessOrEqual(t, longest, 3*(fanout-1)+1)
}

func TestStorageIsLinearTimesLevels(t *testing.T) {
	const fanout, n = 16, 4096
	s := newStore()
	value := []byte(`[]`)
	total := 0
	for v := int64(1); v <= n; v++ {
		sep := ","
		if v == 1 {
			sep = ""
		}
		value = fmt.Appendf(value[:len(value)-1:len(value)-1], `%s{"n":%07d}]`, sep, v)
		total += len(s.put(v, value, fanout).Data)
	}
	// Each element is stored once per level: log16(4096) = 3 levels + 1.
	require.Less(t, total, 4*len(value), "stored %d bytes for a %d-byte value", total, len(value))
}

func TestDecodeRejectsBrokenChain(t *testing.T) {
	_, err := Decode([]Blob{{Version: 2, Delta: true, Base: 1, Depth: 1, Size: 5, Data: []byte(`,2]`)}})
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Decode(nil)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Decode([]Blob{
		{Version: 1, Size: 3, Data: []byte(`[1]`)},
		{Version: 3, Delta: true, Base: 2, Depth: 1, Size: 5, Data: []byte(`,2]`)},
	})
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestEncodeRandomEditsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := newStore()
	values := map[int64]string{}
	var elems []string
	for v := int64(1); v <= 2000; v++ {
		switch x := r.IntN(20); {
		case x == 0 && len(elems) > 0:
			elems = elems[:r.IntN(len(elems))]
		case x == 1 && len(elems) > 0:
			elems[r.IntN(len(elems))] = `"edited"`
		case x < 15:
			elems = append(elems, fmt.Sprintf(`{"i":%d}`, v))
		}
		value := "[" + join(elems) + "]"
		s.put(v, []byte(value), 4)
		values[v] = value
	}
	for v, want := range values {
		got, err := Decode(s.path(v))
		require.NoError(t, err)
		require.Equal(t, want, string(got), "version %d", v)
	}
}

func join(elems []string) string {
	out := ""
	for i, e := range elems {
		if i > 0 {
			out += ","
		}
		out += e
	}
	return out
}

// chain returns the path of the third version of a list that grows by
// one element per version, leaf first (as a database returns it): two
// deltas and a whole value.
func chain(t *testing.T) []Blob {
	t.Helper()
	s := newStore()
	s.put(1, []byte(`["a"]`), DefaultFanout)
	s.put(2, []byte(`["a","b"]`), DefaultFanout)
	s.put(3, []byte(`["a","b","c"]`), DefaultFanout)
	p := s.path(3)
	require.Len(t, p, 3)
	require.EqualValues(t, 3, p[0].Version)
	require.False(t, p[2].Delta)
	got, err := Decode(p)
	require.NoError(t, err)
	require.Equal(t, `["a","b","c"]`, string(got))
	return p
}

func TestDecodeRejectsCorruptBlobs(t *testing.T) {
	tests := []struct {
		name   string
		damage func(p []Blob) []Blob
	}{
		{"leaf size 1 TiB", func(p []Blob) []Blob { p[0].Size = 1 << 40; return p }},
		{"leaf size max", func(p []Blob) []Blob { p[0].Size = 1<<63 - 1; return p }},
		{"leaf size negative", func(p []Blob) []Blob { p[0].Size = -1; return p }},
		{"root size wrong", func(p []Blob) []Blob { p[2].Size++; return p }},
		{"whole value size 1 TiB", func(p []Blob) []Blob { return []Blob{{Version: 1, Size: 1 << 40, Data: []byte(`[]`)}} }},
		{"truncated delta", func(p []Blob) []Blob { p[0].Data = p[0].Data[:len(p[0].Data)-2]; return p }},
		{"empty delta", func(p []Blob) []Blob { p[0].Data = nil; p[0].Size = p[1].Size - 1; return p }},
		{"truncated root", func(p []Blob) []Blob { p[2].Data = p[2].Data[:3]; return p }},
		{"base missing", func(p []Blob) []Blob { return p[:2] }},
		{"middle missing", func(p []Blob) []Blob { return []Blob{p[0], p[2]} }},
		{"wrong base", func(p []Blob) []Blob { p[0].Base = 7; return p }},
		{"own base", func(p []Blob) []Blob { p[0].Base = p[0].Version; return p }},
		{"root is a delta", func(p []Blob) []Blob { p[2].Delta = true; return p }},
		{"root has depth", func(p []Blob) []Blob { p[2].Depth = 5; return p }},
		{"base not an array", func(p []Blob) []Blob {
			p[1].Data = append(p[1].Data[:len(p[1].Data)-1:len(p[1].Data)-1], '}')
			return p
		}},
		{"byte flipped", func(p []Blob) []Blob { p[1].Data = bytes.Replace(p[1].Data, []byte("b"), []byte("x"), 1); return p }},
		{"hash flipped", func(p []Blob) []Blob { p[0].Hash[0] ^= 1; return p }},
		{"no hash", func(p []Blob) []Blob { p[0].Hash = [32]byte{}; return p }},
		{"empty path", func([]Blob) []Blob { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chain(t)
			for i := range p {
				p[i].Data = bytes.Clone(p[i].Data)
			}
			_, err := Decode(tt.damage(p))
			require.ErrorIs(t, err, ErrCorrupt)
		})
	}
}

func TestAlwaysWholeValuesAreNeverEncodedAsDeltas(t *testing.T) {
	// Each value is put after each previous history, at depths up to
	// past a fanout's jump: a value AlwaysWhole reports is stored whole
	// after every one; the arrays among them become deltas after some.
	histories := [][]string{
		{`[]`}, {`[1]`}, {`[1]`, `[1,2]`, `[1,2,3]`, `[1,2,3,4]`, `[1,2,3,4,5]`},
		{`"a"`}, {`{"a":[1]}`}, {`[1,2]`, `[1,2]`},
	}
	values := []string{``, `[`, `]`, `[]`, `[1]`, `[1,2]`, `[1,2,3,4,5,6]`, `1`, `"[1]"`, `{"a":[1]}`, `[1] `, ` [1]`, `[1,2,3,4,5`}
	for _, value := range values {
		delta := false
		for _, history := range histories {
			for _, fanout := range []int{2, 4} {
				s := newStore()
				for i, h := range history {
					s.put(int64(i+1), []byte(h), fanout)
				}
				b := s.put(int64(len(history)+1), []byte(value), fanout)
				if AlwaysWhole([]byte(value)) {
					require.False(t, b.Delta, "%q after %q (fanout %d)", value, history, fanout)
					require.Equal(t, Encode(b.Version, []byte(value), nil, fanout), b)
				}
				delta = delta || b.Delta
			}
		}
		if value == `[1,2,3,4,5,6]` {
			require.True(t, delta, "an array extending the history is a delta after it")
		}
	}
}
