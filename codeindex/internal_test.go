package codeindex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestFuseAddsWeightedReciprocalRanks(t *testing.T) {
	kw := []scored{{id: "a"}, {id: "b"}, {id: "c"}}
	vec := []scored{{id: "c"}, {id: "d"}}
	tests := []struct {
		name   string
		k, wKW float64
		wVec   float64
		want   []scored
	}{
		{"equal weights", 1, 1, 1, []scored{
			{"c", 1.0/4 + 1.0/2}, {"a", 1.0 / 2}, {"b", 1.0 / 3}, {"d", 1.0 / 3},
		}},
		{"keyword only", 1, 1, 0, []scored{
			{"a", 1.0 / 2}, {"b", 1.0 / 3}, {"c", 1.0 / 4}, {"d", 0},
		}},
		{"vector weighted up", 0, 1, 3, []scored{
			{"c", 1.0/3 + 3}, {"d", 3.0 / 2}, {"a", 1}, {"b", 1.0 / 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := searchConfig{k: tt.k, bm25Weight: tt.wKW, vecWeight: tt.wVec}
			got := fuse(sc, kw, vec)
			require.Empty(t, cmp.Diff(tt.want, got, cmp.AllowUnexported(scored{})))
		})
	}
}

func TestFlatIndexSavesAndLoads(t *testing.T) {
	f := newFlatIndex()
	require.NoError(t, f.add("x", []float32{3, 4}))
	require.NoError(t, f.add("y", []float32{0, 2}))
	require.NoError(t, f.add("z", []float32{1, 0}))
	f.remove("x")
	path := filepath.Join(t.TempDir(), vectorFile)
	require.NoError(t, f.save(path))

	g, err := loadFlatIndex(path)
	require.NoError(t, err)
	got, err := g.search([]float32{0, 5}, 5)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff([]scored{{"y", 1}, {"z", 0}}, got, cmp.AllowUnexported(scored{})))
}

func TestFlatIndexRejectsOtherDimension(t *testing.T) {
	f := newFlatIndex()
	require.NoError(t, f.add("x", []float32{1, 0}))
	var de *DimensionError
	require.ErrorAs(t, f.add("y", []float32{1, 0, 0}), &de)
	_, err := f.search([]float32{1}, 1)
	require.ErrorAs(t, err, &de)
	require.Equal(t, DimensionError{Want: 2, Got: 1}, *de)
}

func TestLoadFlatIndexReportsCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), vectorFile)
	f := newFlatIndex()
	require.NoError(t, f.add("x", []float32{1, 0}))
	require.NoError(t, f.save(path))
	require.NoError(t, truncate(path, 12))
	_, err := loadFlatIndex(path)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
}

func truncate(path string, n int64) error { return os.Truncate(path, n) }

// A folder written by an older version of the package (another analyzer)
// is rebuilt by the next Update, not trusted and not refused.
func TestAFolderOfAnOlderVersionIsRebuilt(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// Hello greets.\nfunc Hello() {}\n"), 0o644))
	ix, err := Open(t.Context(), root)
	require.NoError(t, err)
	_, err = ix.Update(t.Context())
	require.NoError(t, err)
	ix.man.Version = manifestVersion - 1
	require.NoError(t, ix.man.save(filepath.Join(ix.dir, manifestFile)))
	require.NoError(t, ix.Close())

	ix, err = Open(t.Context(), root)
	require.NoError(t, err)
	defer ix.Close()
	st, err := ix.Update(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Added, "every file is indexed again")
	require.Zero(t, st.Unchanged)
	hits, err := ix.Search(t.Context(), "greets", WithMode(BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "a.Hello", hits[0].Symbol)
}
