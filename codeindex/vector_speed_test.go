package codeindex

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
)

// benchIndex builds an index of rows random dim-dimensional vectors.
func benchIndex(b *testing.B, rows, dim int) *flatIndex {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFlatIndex()
	f.ids = make([]string, 0, rows)
	f.vecs = make([]float32, 0, rows*dim)
	vec := make([]float32, dim)
	for r := range rows {
		for i := range vec {
			vec[i] = float32(rng.NormFloat64())
		}
		if err := f.add(fmt.Sprintf("pkg/file%d.go#%d", r/20, r%20), vec); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// BenchmarkFlatSearch is the vector side of a query on an index the size of
// GOROOT/src (about 99k chunks of 256 dimensions), for the candidate pool
// search asks for (50) and for a plain top 10; impl=fullsort is the search
// before the heap and the parallel scan (referenceSearch), for comparison
// under the same load.
func BenchmarkFlatSearch(b *testing.B) {
	f := benchIndex(b, 100_000, 256)
	q := make([]float32, 256)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("rows=100k/dim=256/n=%d/impl=heap", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.search(q, n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=100k/dim=256/n=%d/impl=heap-mapped", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "vectors")
			if err := f.save(path); err != nil {
				b.Fatal(err)
			}
			m, err := loadFlatIndex(path)
			if err != nil {
				b.Fatal(err)
			}
			defer m.close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.search(q, n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=100k/dim=256/n=%d/impl=fullsort", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				referenceSearch(f, q, n)
			}
		})
	}
}

// BenchmarkFlatSearchWorkers compares one goroutine with GOMAXPROCS of them
// on small indexes; parallelRows is where the second starts to win.
func BenchmarkFlatSearchWorkers(b *testing.B) {
	q := make([]float32, 256)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for _, rows := range []int{1024, 2048, 4096, 8192, 16384, 32768} {
		f := benchIndex(b, rows, 256)
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("rows=%d/workers=%d", rows, workers), func(b *testing.B) {
				for b.Loop() {
					if _, err := f.searchWorkers(q, 50, workers); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
