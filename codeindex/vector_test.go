package codeindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
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
