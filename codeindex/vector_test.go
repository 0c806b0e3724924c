package codeindex

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// referenceSearch is flatIndex.search as it was before the heap and the
// parallel scan: score every row, sort everything, cut at n.
func referenceSearch(f *flatIndex, q []float32, n int) []scored {
	if len(f.ids) == 0 || n <= 0 {
		return nil
	}
	q = slices.Clone(q)
	normalize(q)
	all := make([]scored, len(f.ids))
	for r, id := range f.ids {
		var dot float32
		for i, x := range f.vecs[r*f.dim : (r+1)*f.dim] {
			dot += x * q[i]
		}
		all[r] = scored{id: id, score: float64(dot)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return all[:min(n, len(all))]
}

// randomIndex holds rows vectors of dim dimensions. With ties, the
// components are small integers and every third row repeats an earlier one
// under another id, so many scores are exactly equal; ids are added in a
// shuffled order so that row order and id order differ.
func randomIndex(t *testing.T, rng *rand.Rand, rows, dim int, ties bool) *flatIndex {
	t.Helper()
	f := newFlatIndex()
	var kept [][]float32
	for _, r := range rng.Perm(rows) {
		vec := make([]float32, dim)
		switch {
		case ties && len(kept) > 0 && r%3 == 0:
			copy(vec, kept[rng.IntN(len(kept))])
		case ties:
			for i := range vec {
				vec[i] = float32(rng.IntN(3) - 1)
			}
		default:
			for i := range vec {
				vec[i] = float32(rng.NormFloat64())
			}
		}
		kept = append(kept, slices.Clone(vec))
		require.NoError(t, f.add(fmt.Sprintf("f%05d.go#%d", r, r%7), vec))
	}
	return f
}

func TestFlatSearchMatchesFullSort(t *testing.T) {
	tests := []struct {
		name      string
		rows, dim int
		ties      bool
		ns        []int
	}{
		{"one row", 1, 4, false, []int{1, 5}},
		{"fewer rows than four", 3, 8, true, []int{1, 2, 3, 10}},
		{"small random", 37, 16, false, []int{1, 5, 36, 37, 50}},
		{"small with ties", 101, 3, true, []int{1, 7, 50, 101, 200}},
		{"ties, 2 dimensions", 500, 2, true, []int{1, 10, 50, 499}},
		{"large random", 20_000, 32, false, []int{1, 10, 50, 1000}},
		{"large with ties", 20_003, 4, true, []int{1, 10, 50, 1000}},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := randomIndex(t, rng, tt.rows, tt.dim, tt.ties)
			for range 5 {
				q := make([]float32, tt.dim)
				for i := range q {
					if tt.ties {
						q[i] = float32(rng.IntN(3) - 1)
					} else {
						q[i] = float32(rng.NormFloat64())
					}
				}
				for _, n := range tt.ns {
					want := referenceSearch(f, q, n)
					for _, workers := range []int{1, 2, 3, 8, searchWorkers(tt.rows)} {
						got, err := f.searchWorkers(q, n, workers)
						require.NoError(t, err)
						require.Empty(t, gocmp.Diff(want, got, gocmp.AllowUnexported(scored{})),
							"n=%d workers=%d", n, workers)
					}
					got, err := f.search(q, n)
					require.NoError(t, err)
					require.Empty(t, gocmp.Diff(want, got, gocmp.AllowUnexported(scored{})), "search n=%d", n)
				}
			}
		})
	}
}

func TestFlatSearchBreaksTiesBySmallerID(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		n    int
		want []string
	}{
		{"all equal, added out of order", []string{"c", "a", "d", "b"}, 2, []string{"a", "b"}},
		{"all equal, all asked", []string{"z", "y", "x"}, 5, []string{"x", "y", "z"}},
		{"equal past the cut", []string{"b#2", "b#10", "a#9", "b#1", "a#10"}, 3, []string{"a#10", "a#9", "b#1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlatIndex()
			for _, id := range tt.ids {
				require.NoError(t, f.add(id, []float32{1, 1}))
			}
			for _, workers := range []int{1, 2, len(tt.ids)} {
				got, err := f.searchWorkers([]float32{1, 0}, tt.n, workers)
				require.NoError(t, err)
				ids := make([]string, len(got))
				for i, s := range got {
					ids[i] = s.id
				}
				require.Equal(t, tt.want, ids, "workers=%d", workers)
			}
		})
	}
}

func TestFlatSearchOrdersNaNLikeFullSort(t *testing.T) {
	f := newFlatIndex()
	require.NoError(t, f.add("a", []float32{1, 0}))
	require.NoError(t, f.add("nan", []float32{float32(math.NaN()), 1}))
	require.NoError(t, f.add("b", []float32{0, 1}))
	require.NoError(t, f.add("c", []float32{-1, 0}))
	q := []float32{1, 0.5}
	for _, n := range []int{1, 2, 3, 4} {
		for _, workers := range []int{1, 2, 4} {
			got, err := f.searchWorkers(q, n, workers)
			require.NoError(t, err)
			want := referenceSearch(f, q, n)
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].id, got[i].id, "n=%d workers=%d", n, workers)
			}
		}
	}
}

// savedAndLoaded saves f and loads it back, mapped.
func savedAndLoaded(t *testing.T, f *flatIndex) *flatIndex {
	t.Helper()
	path := filepath.Join(t.TempDir(), vectorFile)
	require.NoError(t, f.save(path))
	g, err := loadFlatIndex(path)
	require.NoError(t, err)
	t.Cleanup(func() { g.close() })
	return g
}

func TestAMappedIndexSearchesAsTheIndexItWasSavedFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, ties := range []bool{false, true} {
		f := randomIndex(t, rng, 5000, 16, ties)
		g := savedAndLoaded(t, f)
		if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && littleEndian {
			require.NotNil(t, g.mapped, "the file is mapped, not read")
			require.Nil(t, g.ids, "no id is read on open")
		}
		require.Equal(t, f.rows(), g.rows())
		for range 20 {
			q := make([]float32, 16)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			for _, workers := range []int{1, 2} {
				want, err := f.searchWorkers(q, 10, workers)
				require.NoError(t, err)
				got, err := g.searchWorkers(q, 10, workers)
				require.NoError(t, err)
				require.Empty(t, gocmp.Diff(want, got, gocmp.AllowUnexported(scored{})))
			}
		}
	}
}

func TestAMappedIndexIsCopiedIntoMemoryBeforeItChanges(t *testing.T) {
	f := newFlatIndex()
	require.NoError(t, f.add("x", []float32{3, 4}))
	require.NoError(t, f.add("y", []float32{0, 2}))
	g := savedAndLoaded(t, f)
	require.NoError(t, g.add("z", []float32{1, 0}))
	g.remove("x")
	require.Nil(t, g.mapped)
	got, err := g.search([]float32{1, 0}, 5)
	require.NoError(t, err)
	require.Empty(t, gocmp.Diff([]scored{{"z", 1}, {"y", 0}}, got, gocmp.AllowUnexported(scored{})))
}

func TestAVersion1VectorFileIsStillRead(t *testing.T) {
	var b []byte
	b = append(b, vectorMagicV1...)
	b = binary.LittleEndian.AppendUint32(b, 2)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, 'x')
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(0.6))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(0.8))
	path := filepath.Join(t.TempDir(), vectorFile)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	f, err := loadFlatIndex(path)
	require.NoError(t, err)
	got, err := f.search([]float32{0, 1}, 1)
	require.NoError(t, err)
	require.Equal(t, "x", got[0].id)
	require.InDelta(t, 0.8, got[0].score, 1e-6)
}

func TestLoadFlatIndexRejectsHostileLayouts(t *testing.T) {
	f := newFlatIndex()
	require.NoError(t, f.add("xy", []float32{1, 0}))
	require.NoError(t, f.add("z", []float32{0, 1}))
	path := filepath.Join(t.TempDir(), vectorFile)
	require.NoError(t, f.save(path))
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	offs := vectorHeader + 4*2*2 // the id offsets
	tests := []struct {
		name   string
		change func([]byte) []byte
	}{
		{"huge row count", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], math.MaxUint32); return b }},
		{"huge dimension", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], math.MaxUint32); return b }},
		{"more rows than the file holds", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 3); return b }},
		{"an id offset past the end", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[offs+8:], 1<<40); return b }},
		{"decreasing id offsets", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[offs+8:], 3)
			binary.LittleEndian.PutUint64(b[offs+16:], 2)
			return b
		}},
		{"first offset not zero", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[offs:], 1); return b }},
		{"trailing bytes", func(b []byte) []byte { return append(b, 'q') }},
		{"cut in the header", func(b []byte) []byte { return b[:10] }},
		{"cut in the ids", func(b []byte) []byte { return b[:len(b)-1] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), vectorFile)
			require.NoError(t, os.WriteFile(p, tt.change(slices.Clone(good)), 0o644))
			_, err := loadFlatIndex(p)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
		})
	}
}
