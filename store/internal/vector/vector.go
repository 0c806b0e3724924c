// Package vector encodes the vectors of semantic search as the SQLite and
// PostgreSQL stores keep them: little-endian IEEE 754 float32s, 4 bytes
// per dimension.
package vector

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Encode returns v as bytes.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode returns the vector of dims dimensions encoded in b; it fails if
// b has another length or holds a NaN or an infinity.
func Decode(b []byte, dims int) ([]float32, error) {
	if len(b) != 4*dims {
		return nil, fmt.Errorf("stored vector has %d bytes, want %d for %d dimensions", len(b), 4*dims, dims)
	}
	v := make([]float32, dims)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("stored vector holds %v at dimension %d", x, i)
		}
		v[i] = x
	}
	return v, nil
}

// Cosine returns the cosine similarity of q, whose L2 norm is qnorm, and
// the vector of len(q) dimensions encoded in b, without decoding it into
// a new slice (see store.CosineSimilarity: 0 if either vector is all
// zeros). It fails as [Decode] does.
func Cosine(q []float32, qnorm float64, b []byte) (float64, error) {
	if len(b) != 4*len(q) {
		return 0, fmt.Errorf("stored vector has %d bytes, want %d for %d dimensions", len(b), 4*len(q), len(q))
	}
	var dot, norm float64
	for i, x := range q {
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return 0, fmt.Errorf("stored vector holds %v at dimension %d", y, i)
		}
		dot += float64(x) * y
		norm += y * y
	}
	if qnorm == 0 || norm == 0 {
		return 0, nil
	}
	return dot / (qnorm * math.Sqrt(norm)), nil
}

// Norm returns the L2 norm of v.
func Norm(v []float32) float64 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	return math.Sqrt(n)
}
