package deltas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode decodes paths of blobs as a database returns them. Its input
// holds one blob a line:
//
//	version base depth size hash data
//
// with base "-" for a whole value, hash in hex and data the rest of the
// line (stored values are compact JSON: no newline). The seed corpus in
// testdata/fuzz/FuzzDecode holds paths read back from a real run's SQLite
// database. Decode must never panic nor allocate more than the blobs' data
// can produce, and what it returns must be a value the path records.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		path, ok := parsePath(in)
		if !ok {
			return
		}
		out, err := Decode(path)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		total := 0
		for _, b := range path {
			total += len(b.Data)
		}
		require.LessOrEqual(t, len(out), total)
		h := sha256.Sum256(out)
		found := false
		for _, b := range path {
			found = found || b.Hash == h && b.Size == int64(len(out))
		}
		require.True(t, found, "Decode returned a value no blob of the path records")
	})
}

// parsePath parses the input of FuzzDecode.
func parsePath(in []byte) ([]Blob, bool) {
	var path []Blob
	for line := range bytes.Lines(in) {
		f := bytes.SplitN(bytes.TrimSuffix(line, []byte("\n")), []byte(" "), 6)
		if len(f) != 6 {
			return nil, false
		}
		var b Blob
		var err [4]error
		b.Version, err[0] = strconv.ParseInt(string(f[0]), 10, 64)
		if string(f[1]) != "-" {
			b.Delta = true
			b.Base, err[1] = strconv.ParseInt(string(f[1]), 10, 64)
		}
		b.Depth, err[2] = strconv.ParseInt(string(f[2]), 10, 64)
		b.Size, err[3] = strconv.ParseInt(string(f[3]), 10, 64)
		for _, e := range err {
			if e != nil {
				return nil, false
			}
		}
		if len(f[4]) == hex.EncodedLen(len(b.Hash)) {
			hex.Decode(b.Hash[:], f[4]) // a bad hash stays (partly) zero
		}
		b.Data = f[5]
		path = append(path, b)
	}
	return path, true
}
