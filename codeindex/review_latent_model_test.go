package codeindex

// Review attacks on terms.bin (version 2 when they were written; encode
// writes version 3 since): crafted headers that carry the recorded ID,
// truncation, trailing bytes, non-finite floats.

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewModelIndex returns an updated index of latentTree, its recorded
// term model ID and the model's file content.
func reviewModelIndex(t *testing.T) (root string, ix *Index, id string, data []byte) {
	t.Helper()
	root = t.TempDir()
	writeTermTree(t, root, latentTree())
	ix = openUpdated(t, root)
	require.NotNil(t, ix.termModel())
	require.Positive(t, ix.termModel().Dim)
	id = ix.man.TermModel
	data, err := os.ReadFile(filepath.Join(ix.Dir(), termModelFile))
	require.NoError(t, err)
	return root, ix, id, data
}

// withHeader is payload behind the recorded header of id.
func withHeader(id string, payload []byte) []byte {
	return append([]byte(termMagic+id+"\n"), payload...)
}

// u32s is the little-endian encoding of xs.
func u32s(xs ...uint32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

// allocatedBy returns the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestReviewLatentHostileHeadersAreStaleAndCheap(t *testing.T) {
	_, ix, id, _ := reviewModelIndex(t)
	zeros := make([]byte, 1<<20) // each 0 byte reads as an empty term or path length
	oneTerm := append(append([]byte{2}, "ab"...), u32s(0x3f800000)...)
	for name, payload := range map[string][]byte{
		"empty":                      nil,
		"short count":                u32s(4),
		"huge dim and terms":         u32s(math.MaxUint32, math.MaxUint32),
		"huge terms, empty names":    append(u32s(1, math.MaxUint32), zeros...),
		"huge terms, zero dim":       append(u32s(0, math.MaxUint32), zeros...),
		"terms x dim overflows":      append(u32s(1<<16, 1<<16), zeros...),
		"huge dim, one term":         append(u32s(math.MaxUint32, 1), oneTerm...),
		"huge files, empty paths":    append(append(u32s(1, 1), oneTerm...), append(u32s(0 /* idf */, math.MaxUint32), zeros...)...),
		"huge files, huge dim":       append(u32s(math.MaxUint32, 0), append(u32s(math.MaxUint32), zeros...)...),
		"uvarint length overflowing": append(u32s(1, 1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"uvarint too long":           append(u32s(1, 1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), termModelFile)
			data := withHeader(id, payload)
			require.NoError(t, os.WriteFile(path, data, 0o644))
			var err error
			n := allocatedBy(func() {
				require.NotPanics(t, func() { _, err = loadTermModel(path, id) })
			})
			require.ErrorIs(t, err, errStaleTermModel)
			// Reading the file costs len(data); a loader that trusts no
			// count should not need more than a few times that.
			require.LessOrEqual(t, n, uint64(6*len(data)+1<<16), "allocated %d bytes for a %d-byte file", n, len(data))
		})
	}
	_ = ix
}

// TestReviewLatentHugeDimWithNothingElseIsAccepted documents that a file
// declaring 2^32-1 dimensions, no terms and no files loads as a model: it
// is harmless (nothing is allocated by Dim, queryVector has no files) but
// a model whose Dim disagrees with its ID's dimension can never be written.
func TestReviewLatentHugeDimWithNothingElseIsAccepted(t *testing.T) {
	_, ix, id, _ := reviewModelIndex(t)
	path := filepath.Join(t.TempDir(), termModelFile)
	require.NoError(t, os.WriteFile(path, withHeader(id, u32s(math.MaxUint32, 0, 0)), 0o644))
	m, err := loadTermModel(path, id)
	if err == nil {
		t.Logf("accepted: Dim=%d terms=%d files=%d (harmless; could be rejected as Dim > ID's dim)", m.Dim, len(m.Terms), len(m.Files))
		require.Nil(t, m.queryVector("halt sluggish"))
		require.Nil(t, m.expand("halt sluggish"))
	}
	_ = ix
}

func TestReviewLatentModelCutAtEveryOffsetOrWithTrailingBytesIsStale(t *testing.T) {
	_, _, id, data := reviewModelIndex(t)
	path := filepath.Join(t.TempDir(), termModelFile)
	// Every offset of the header and the counts, then one in three (every
	// offset takes 3 s on a 10 kB file).
	for n := 0; n < len(data); n += map[bool]int{true: 1, false: 3}[n < 512] {
		require.NoError(t, os.WriteFile(path, data[:n], 0o644))
		var err error
		require.NotPanics(t, func() { _, err = loadTermModel(path, id) }, "cut at %d", n)
		require.ErrorIs(t, err, errStaleTermModel, "cut at %d of %d", n, len(data))
	}
	for _, tail := range [][]byte{{0}, {1, 2, 3, 4}, make([]byte, 33), make([]byte, 4096)} {
		require.NoError(t, os.WriteFile(path, append(slicesClone(data), tail...), 0o644))
		_, err := loadTermModel(path, id)
		require.ErrorIs(t, err, errStaleTermModel, "%d trailing bytes", len(tail))
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err := loadTermModel(path, id)
	require.NoError(t, err, "the file itself loads")
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// poisoned rewrites the model of ix with poison applied, behind the
// recorded header, closes ix and reopens the index of root.
func poisoned(t *testing.T, root string, ix *Index, id string, poison func(m *termModel)) (*Index, []byte) {
	t.Helper()
	m, err := loadTermModel(filepath.Join(ix.Dir(), termModelFile), id)
	require.NoError(t, err)
	m = materialized(t, m)
	poison(m)
	enc, _ := m.encode(DefaultTermModelDim)
	head := len(termMagic) + bytes.IndexByte(enc[len(termMagic):], '\n') + 1 // the payload follows the header line
	data := withHeader(id, enc[head:])
	require.NoError(t, ix.Close())
	require.NoError(t, os.WriteFile(filepath.Join(ix.Dir(), termModelFile), data, 0o644))
	ix2, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { ix2.Close() })
	return ix2, data
}

func TestReviewLatentNonFiniteModelIsStaleAndSearchScoresStayFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for name, poison := range map[string]func(m *termModel){
		// "clock" is in the text of clock.stop alone among the hits:
		// its chunk's cosine is NaN, the others' are not.
		"NaN vector of one term": func(m *termModel) {
			k := m.index["clock"]
			for j := range m.Dim {
				m.Vecs[int(k)*m.Dim+j] = nan
			}
		},
		"Inf IDF of one term": func(m *termModel) { m.IDF[m.index["clock"]] = inf },
		"NaN IDF": func(m *termModel) {
			for k := range m.IDF {
				m.IDF[k] = nan
			}
		},
		"Inf file vectors": func(m *termModel) {
			for i := range m.FileVecs {
				m.FileVecs[i] = inf
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			root, ix, id, _ := reviewModelIndex(t)
			ix, data := poisoned(t, root, ix, id, poison)
			path := filepath.Join(t.TempDir(), termModelFile)
			require.NoError(t, os.WriteFile(path, data, 0o644))
			for _, mode := range []Mode{BM25, Hybrid, Vector} {
				hits, err := ix.Search(context.Background(), "halt sluggish", WithMode(mode))
				require.NoError(t, err)
				require.NotEmpty(t, hits)
				for _, h := range hits {
					require.False(t, math.IsNaN(h.Score) || math.IsInf(h.Score, 0), "%v: %s scores %v", mode, h.Symbol, h.Score)
				}
			}
			_, err := loadTermModel(path, id)
			require.ErrorIs(t, err, errStaleTermModel, "a model with non-finite floats is not used")
		})
	}
}

// materialized is m with its floats copied out of the mapping (see
// loadTermModel), which it releases, so that a test may change them.
func materialized(t *testing.T, m *termModel) *termModel {
	t.Helper()
	c := *m
	c.Vecs, c.IDF, c.FileVecs = slicesCloneF(m.Vecs), slicesCloneF(m.IDF), slicesCloneF(m.FileVecs)
	if m.Tuned != nil {
		c.Tuned = slicesCloneF(m.Tuned)
	}
	c.mapped = nil
	require.NoError(t, m.close())
	return &c
}

func slicesCloneF(xs []float32) []float32 { return append([]float32{}, xs...) }
