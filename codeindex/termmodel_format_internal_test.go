package codeindex

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// encodeTermModelV2 is the version 2 encoding of m (see encode): the
// format before the floats were aligned, which is still read.
func encodeTermModelV2(m *termModel, dim int) (data []byte, id string) {
	payload := m.appendPayload(nil, 1)
	id = termModelID(dim, payload)
	return append([]byte(termMagicV2+id+"\n"), payload...), id
}

// A termLayout is where the fields of a term model file are.
type termLayout struct {
	head       int // the payload: the dimension, then the number of terms
	files      int // the number of files
	nFiles     int
	tunedCount int // the number of tuned floats
	tuned      int
	tunedAt    int // the tuned floats
}

// termLayoutOf returns the layout of data, the model file at path of id,
// of either version.
func termLayoutOf(t *testing.T, path, id string, data []byte) termLayout {
	t.Helper()
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	defer m.close()
	v3 := string(data[:len(termMagic)]) == termMagic
	align := func(n int) int {
		if v3 {
			return alignUp(n, termAlign)
		}
		return n
	}
	var l termLayout
	l.head = align(len(termMagic) + len(id) + 1)
	p := l.head + 8
	for _, term := range m.Terms {
		p += len(binary.AppendUvarint(nil, uint64(len(term)))) + len(term)
	}
	p = align(p) + 4*len(m.Vecs)
	l.files = align(p) + 4*len(m.IDF)
	l.nFiles = len(m.Files)
	p = l.files + 4
	for _, f := range m.Files {
		p += len(binary.AppendUvarint(nil, uint64(len(f.Path)))) + len(f.Path) + 32
	}
	l.tunedCount = align(p) + 4*len(m.FileVecs)
	l.tuned = len(m.Tuned)
	l.tunedAt = align(l.tunedCount + 4)
	return l
}

func TestTermModelFormatV3BlocksAreAligned(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	require.Equal(t, termMagic, string(data[:len(termMagic)]))
	l := termLayoutOf(t, path, id, data)
	require.Zero(t, l.head%termAlign, "the payload")
	require.Zero(t, l.tunedAt%termAlign, "the tuned floats")
	require.Len(t, data, l.tunedAt+4*l.tuned)
}

func TestTermModelFormatV3FloatsAreInTheMapping(t *testing.T) {
	if !littleEndian {
		t.Skip("a big-endian machine copies the floats")
	}
	path, _, id := reviewTunedModelFile(t)
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	t.Cleanup(func() { m.close() })
	require.NotNil(t, m.mapped)
	require.False(t, m.v2)
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(m.mapped.data)))
	hi := lo + uintptr(len(m.mapped.data))
	in := func(xs []float32) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(xs)))
		return len(xs) > 0 && p >= lo && p+4*uintptr(len(xs)) <= hi
	}
	for name, xs := range map[string][]float32{"Vecs": m.Vecs, "IDF": m.IDF, "FileVecs": m.FileVecs, "Tuned": m.Tuned} {
		require.True(t, in(xs), "%s is in the mapping", name)
	}
}

func TestTermModelFormatV2LoadsLikeV3(t *testing.T) {
	path, _, id := reviewTunedModelFile(t)
	m3, err := loadTermModel(path, id)
	require.NoError(t, err)
	t.Cleanup(func() { m3.close() })
	data2, id2 := encodeTermModelV2(m3, DefaultTermModelDim)
	path2 := filepath.Join(t.TempDir(), termModelFile)
	require.NoError(t, os.WriteFile(path2, data2, 0o644))
	m2, err := loadTermModel(path2, id2)
	require.NoError(t, err)
	require.Nil(t, m2.mapped, "a version 2 file is copied")
	require.True(t, m2.v2)
	require.Equal(t, m3.Dim, m2.Dim)
	require.Equal(t, m3.Terms, m2.Terms)
	require.Equal(t, m3.Vecs, m2.Vecs)
	require.Equal(t, m3.IDF, m2.IDF)
	require.Equal(t, m3.Files, m2.Files)
	require.Equal(t, m3.FileVecs, m2.FileVecs)
	require.Equal(t, m3.Tuned, m2.Tuned)
	require.Equal(t, m3.expand("deadline timer halt"), m2.expand("deadline timer halt"))
}

func TestTermModelFormatV3DamageIsRefused(t *testing.T) {
	path, data, id := reviewTunedModelFile(t)
	l := termLayoutOf(t, path, id, data)
	headEnd := len(termMagic) + len(id) + 1
	require.Less(t, headEnd, l.head, "the header has zeros after it")
	require.Less(t, l.tunedCount+4, l.tunedAt, "the tuned floats have zeros before them")
	tests := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"a header zero set", func(b []byte) []byte { b[headEnd] = 1; return b }},
		{"a zero before the tuned floats set", func(b []byte) []byte { b[l.tunedAt-1] = 0x80; return b }},
		{"a byte of the header's zeros dropped: every block misaligned", func(b []byte) []byte {
			return append(b[:headEnd:headEnd], b[headEnd+1:]...)
		}},
		{"a zero before the tuned floats dropped: they are misaligned", func(b []byte) []byte {
			return append(b[:l.tunedAt-1:l.tunedAt-1], b[l.tunedAt:]...)
		}},
		{"a zero added before the tuned floats: they are misaligned", func(b []byte) []byte {
			return append(append(b[:l.tunedAt:l.tunedAt], 0), b[l.tunedAt:]...)
		}},
		{"length not a multiple of 4", func(b []byte) []byte { return b[:len(b)-3] }},
		{"the tuned floats cut to the zeros before them", func(b []byte) []byte { return b[:l.tunedAt] }},
		{"cut inside the header's zeros", func(b []byte) []byte { return b[:headEnd+1] }},
		{"a NaN in the tuned floats", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[l.tunedAt+4:], 0x7fc00000)
			return b
		}},
		{"the version 2 magic over a version 3 file", func(b []byte) []byte { copy(b, termMagicV2); return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.damage(append([]byte(nil), data...))
			require.NoError(t, os.WriteFile(path, bad, 0o644))
			m, err := loadTermModel(path, id)
			require.ErrorIs(t, err, errStaleTermModel)
			require.Nil(t, m)
		})
	}
}

func TestTermModelFormatDamagedIndexSearchesWithoutTheModel(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	require.NoError(t, ix.Close())
	path := filepath.Join(root, ".coderag", termModelFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)/2+1], 0o644))
	ix2, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { ix2.Close() })
	require.Nil(t, ix2.termModel(), "the cut model is off")
	hits, err := ix2.Search(context.Background(), "halt sluggish", WithMode(Hybrid))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
}

func TestTermModelInPlaceOutlivesItsFileReplaced(t *testing.T) {
	// Update replaces terms.bin by a rename: a model mapped from the old
	// file reads it as it was.
	path, data, id := reviewTunedModelFile(t)
	m, err := loadTermModel(path, id)
	require.NoError(t, err)
	t.Cleanup(func() { m.close() })
	want := m.expand("deadline timer halt")
	require.NoError(t, saveTermModel(path, make([]byte, len(data))))
	require.Equal(t, want, m.expand("deadline timer halt"))
	again, _ := m.encode(DefaultTermModelDim)
	require.Equal(t, data, again)
}

// v2Index returns the root of an updated index of latentTree whose term
// model file is rewritten in version 2, closed, and the model's version 3
// file and ID.
func v2Index(t *testing.T) (root string, data3 []byte, id3 string) {
	t.Helper()
	root = t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	id3 = ix.man.TermModel
	path := filepath.Join(ix.Dir(), termModelFile)
	data3, err := os.ReadFile(path)
	require.NoError(t, err)
	data2, id2 := encodeTermModelV2(ix.termModel(), DefaultTermModelDim)
	ix.man.TermModel = id2
	require.NoError(t, ix.man.save(filepath.Join(ix.Dir(), manifestFile)))
	require.NoError(t, saveTermModel(path, data2))
	require.NoError(t, ix.Close())
	return root, data3, id3
}

func TestTermModelFormatV2IndexSearchesAsV3(t *testing.T) {
	root3 := t.TempDir()
	writeTermTree(t, root3, latentTree())
	ix3 := openUpdated(t, root3)
	root2, _, _ := v2Index(t)
	ix2, err := Open(context.Background(), root2)
	require.NoError(t, err)
	t.Cleanup(func() { ix2.Close() })
	require.True(t, ix2.termModel().v2)
	for _, q := range []string{"halt sluggish", "deadline timer", "apple river stone"} {
		for _, mode := range []Mode{BM25, Hybrid} {
			want, err := ix3.Search(context.Background(), q, WithMode(mode))
			require.NoError(t, err)
			got, err := ix2.Search(context.Background(), q, WithMode(mode))
			require.NoError(t, err)
			require.Equal(t, want, got, "%q %v", q, mode)
		}
	}
}

func TestTermModelFormatV2IsRewrittenNotRetrainedByUpdate(t *testing.T) {
	root, data3, id3 := v2Index(t)
	ix, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	changed := ix.man.TermsChanged
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	require.Equal(t, id3, ix.man.TermModel, "the version 3 ID of the same model")
	require.Equal(t, changed, ix.man.TermsChanged, "not retrained")
	got, err := os.ReadFile(filepath.Join(ix.Dir(), termModelFile))
	require.NoError(t, err)
	require.Equal(t, data3, got, "the version 3 file of the same model")
	require.NoError(t, ix.Close())
	again, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { again.Close() })
	require.Equal(t, id3, again.man.TermModel, "the manifest records it")
	require.NotNil(t, again.termModel())
	require.False(t, again.termModel().v2)
}

func TestTermModelMappedSearchesDuringRetrainingUpdates(t *testing.T) {
	// Searches use a model mapped from its file (the index reopened)
	// while Update retrains it, which releases the mapping: run with -race.
	ctx := context.Background()
	root := t.TempDir()
	tree := latentTree()
	writeTermTree(t, root, tree)
	require.NoError(t, openUpdated(t, root).Close())
	ix, err := Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	if littleEndian {
		require.NotNil(t, ix.termModel().mapped)
	}
	var stop atomic.Bool
	var searches atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				q := []string{"halt sluggish", "deadline timer", "apple river stone"}[i%3]
				if _, err := ix.Search(ctx, q, WithMode([]Mode{BM25, Hybrid}[i%2])); err != nil {
					errs <- fmt.Errorf("search %q: %w", q, err)
					return
				}
				searches.Add(1)
			}
		}()
	}
	for round := range 4 {
		for f := range 4 { // every filler file: the model is retrained
			p := filepath.Join(root, "filler", fmt.Sprintf("f%d.go", f))
			require.NoError(t, os.WriteFile(p, []byte(tree[fmt.Sprintf("filler/f%d.go", f)]+fmt.Sprintf("\n// Round %d.\nfunc R%d() {}\n", round, round)), 0o644))
		}
		before := ix.man.TermModel
		_, err := ix.Update(ctx)
		require.NoError(t, err)
		require.NotEqual(t, before, ix.man.TermModel, "round %d retrained", round)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Positive(t, searches.Load())
}

func TestIndexCloseReleasesTheTermModelMapping(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	require.NoError(t, openUpdated(t, root).Close())
	ix, err := Open(context.Background(), root)
	require.NoError(t, err)
	m := ix.termModel()
	require.NotNil(t, m)
	require.NoError(t, ix.Close())
	require.Nil(t, m.mapped, "released")
	require.Nil(t, ix.terms)
	_, err = ix.Search(context.Background(), "halt sluggish")
	require.ErrorIs(t, err, ErrClosed)
}
