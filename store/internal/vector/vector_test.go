package vector

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	v := []float32{0, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))}
	b := Encode(v)
	require.Len(t, b, 4*len(v))
	got, err := Decode(b, len(v))
	require.NoError(t, err)
	require.Equal(t, v, got)
	require.Equal(t, []byte{0, 0, 0x80, 0x3f}, Encode([]float32{1}), "little-endian IEEE 754")
}

func TestDecodeRejectsDamagedVectors(t *testing.T) {
	for name, tt := range map[string]struct {
		b    []byte
		dims int
	}{
		"short":         {[]byte{1, 2, 3}, 1},
		"long":          {make([]byte, 8), 1},
		"other dims":    {make([]byte, 8), 3},
		"NaN":           {Encode([]float32{float32(math.NaN())}), 1},
		"infinity":      {Encode([]float32{1, float32(math.Inf(1))}), 2},
		"empty for one": {nil, 1},
	} {
		_, err := Decode(tt.b, tt.dims)
		require.Error(t, err, name)
	}
}

// TestCosineMatchesDecode checks Cosine against the cosine of the decoded
// vectors, and that it rejects what Decode rejects.
func TestCosineMatchesDecode(t *testing.T) {
	q := []float32{1, 2, -3}
	for _, v := range [][]float32{{1, 2, -3}, {-1, -2, 3}, {0, 0, 0}, {3, 0, 1}, {1e-30, 5, 7}} {
		got, err := Cosine(q, Norm(q), Encode(v))
		require.NoError(t, err)
		var dot float64
		for i := range q {
			dot += float64(q[i]) * float64(v[i])
		}
		want := 0.0
		if Norm(v) != 0 {
			want = dot / (Norm(q) * Norm(v))
		}
		require.InDelta(t, want, got, 1e-12, "%v", v)
	}
	_, err := Cosine(q, Norm(q), Encode([]float32{1, 2}))
	require.Error(t, err)
	_, err = Cosine(q, Norm(q), Encode([]float32{1, float32(math.NaN()), 2}))
	require.Error(t, err)
	got, err := Cosine([]float32{0, 0}, 0, Encode([]float32{1, 1}))
	require.NoError(t, err)
	require.Zero(t, got)
}
