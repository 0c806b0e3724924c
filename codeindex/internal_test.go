package codeindex

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

func TestFuseRRFAddsWeightedReciprocalRanks(t *testing.T) {
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
			sc := searchConfig{fusion: FuseRRF, k: tt.k, bm25Weight: tt.wKW, vecWeight: tt.wVec}
			got := fuse(sc, kw, vec)
			require.Empty(t, cmp.Diff(tt.want, got, cmp.AllowUnexported(scored{})))
		})
	}
}

func TestFuseMinMaxAddsWeightedNormalisedScores(t *testing.T) {
	// BM25 scores 8, 6, 4 normalise to 1, 0.5, 0; cosines 0.9, 0.3 to 1, 0.
	kw := []scored{{"a", 8}, {"b", 6}, {"c", 4}}
	vec := []scored{{"c", 0.9}, {"d", 0.3}}
	tests := []struct {
		name      string
		wKW, wVec float64
		kw, vec   []scored
		want      []scored
	}{
		{"equal weights", 1, 1, kw, vec, []scored{{"a", 1}, {"c", 1}, {"b", 0.5}, {"d", 0}}},
		{"vector weighted up", 1, 3, kw, vec, []scored{{"c", 3}, {"a", 1}, {"b", 0.5}, {"d", 0}}},
		{"keyword only", 1, 0, kw, vec, []scored{{"a", 1}, {"b", 0.5}, {"c", 0}, {"d", 0}}},
		{"a ranking of equal scores counts each as its best", 1, 1, kw, []scored{{"d", 0.5}, {"e", 0.5}},
			[]scored{{"a", 1}, {"d", 1}, {"e", 1}, {"b", 0.5}, {"c", 0}}},
		{"an empty ranking adds nothing", 1, 1, kw, nil, []scored{{"a", 1}, {"b", 0.5}, {"c", 0}}},
		{"scores need not come sorted", 1, 1, []scored{{"c", 4}, {"a", 8}, {"b", 6}}, nil,
			[]scored{{"a", 1}, {"b", 0.5}, {"c", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := searchConfig{fusion: FuseMinMax, bm25Weight: tt.wKW, vecWeight: tt.wVec}
			got := fuse(sc, tt.kw, tt.vec)
			require.Empty(t, cmp.Diff(tt.want, got, cmp.AllowUnexported(scored{}), cmpopts.EquateApprox(0, 1e-12)))
		})
	}
}

func TestFuseMNZMultipliesNormalisedSumsByTheRankingsThatFoundAChunk(t *testing.T) {
	// BM25 scores 8, 6, 4 normalise to 1, 0.5, 0; cosines 0.9, 0.5, 0.1
	// to 1, 0.5, 0.
	kw := []scored{{"a", 8}, {"b", 6}, {"c", 4}}
	vec := []scored{{"d", 0.9}, {"b", 0.5}, {"e", 0.1}}
	tests := []struct {
		name      string
		wKW, wVec float64
		want      []scored
	}{
		// b, found by both at 0.5, passes a and d, each first in one.
		{"equal weights", 1, 1, []scored{{"b", 2}, {"a", 1}, {"d", 1}, {"c", 0}, {"e", 0}}},
		{"vector weighted up", 1, 3, []scored{{"b", 4}, {"d", 3}, {"a", 1}, {"c", 0}, {"e", 0}}},
		// A ranking of weight zero neither adds to a chunk nor counts it as found.
		{"keyword only", 1, 0, []scored{{"a", 1}, {"b", 0.5}, {"c", 0}, {"d", 0}, {"e", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := searchConfig{fusion: FuseMNZ, bm25Weight: tt.wKW, vecWeight: tt.wVec}
			got := fuse(sc, kw, vec)
			require.Empty(t, cmp.Diff(tt.want, got, cmp.AllowUnexported(scored{}), cmpopts.EquateApprox(0, 1e-12)))
		})
	}
}

func TestGoHeadIsTheDocCommentAndDeclaration(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"function with doc comment",
			"// Parse reads a line.\n//\n// It fails on EOF.\nfunc Parse(s string) error {\n\treturn nil\n}",
			"// Parse reads a line.\n//\n// It fails on EOF.\nfunc Parse(s string) error {"},
		{"signature over several lines",
			"func (s *S) Do(\n\tctx context.Context,\n\tn int,\n) error {\n\tpanic(1)\n}",
			"func (s *S) Do(\n\tctx context.Context,\n\tn int,\n) error {"},
		{"one-line function", "func F() int { return 1 }", "func F() int { return 1 }"},
		{"function without a body", "// F is in assembly.\nfunc F() int", "// F is in assembly.\nfunc F() int"},
		{"struct type", "// Server serves.\ntype Server struct {\n\tAddr string\n}", "// Server serves.\ntype Server struct {"},
		{"a brace in the doc comment does not end it", "// F returns {}.\nfunc F() T {\n\treturn T{}\n}", "// F returns {}.\nfunc F() T {"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, goHead(tt.content))
		})
	}
}

func TestEmbedTextOfADefinitionLeavesOutItsBody(t *testing.T) {
	tests := []struct {
		name  string
		chunk func(t *testing.T) Chunk
		want  string
	}{
		{"go function", func(t *testing.T) Chunk {
			cs, err := ChunkGo("a.go", []byte("package a\n\n// Parse reads a line.\nfunc Parse(s string) error {\n\treturn bodyOnly()\n}\n"))
			require.NoError(t, err)
			return cs[1]
		}, "a.Parse\na.go\n// Parse reads a line.\nfunc Parse(s string) error {"},
		{"python method", func(t *testing.T) Chunk {
			cs, err := ChunkPython("a.py", []byte("class A:\n    def parse(self, s):\n        \"\"\"Read a line.\"\"\"\n        return body_only()\n"), 60, 10)
			require.NoError(t, err)
			return cs[1]
		}, "a.A.parse\na.py\n    def parse(self, s):\n        \"\"\"Read a line.\"\"\""},
		{"go const group, whole", func(t *testing.T) Chunk {
			cs, err := ChunkGo("a.go", []byte("package a\n\nconst (\n\tA = 1\n)\n"))
			require.NoError(t, err)
			return cs[1]
		}, "a.A\na.go\nconst (\n\tA = 1\n)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, embedText(tt.chunk(t)))
		})
	}
}

func TestCutIsComplete(t *testing.T) {
	hits := func(scores ...float64) search.DocumentMatchCollection {
		var out search.DocumentMatchCollection
		for _, s := range scores {
			out = append(out, &search.DocumentMatch{Score: s})
		}
		return out
	}
	tests := []struct {
		name string
		res  *bleve.SearchResult
		n    int
		want bool
	}{
		{"no more hits than asked", &bleve.SearchResult{Hits: hits(3, 2), Total: 2}, 2, true},
		{"every match fetched", &bleve.SearchResult{Hits: hits(3, 2, 2, 2), Total: 4}, 2, true},
		{"fetched hits end below the n-th", &bleve.SearchResult{Hits: hits(3, 2, 2, 1), Total: 9}, 2, true},
		{"ties with the n-th may go on", &bleve.SearchResult{Hits: hits(3, 2, 2, 2), Total: 9}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, cutIsComplete(tt.res, tt.n))
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

// helloIndex returns a folder holding one Go file (a.go: func Hello,
// "Hello greets.") and its index, opened and updated.
func helloIndex(t *testing.T) (string, *Index) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// Hello greets.\nfunc Hello() {}\n"), 0o644))
	ix, err := Open(t.Context(), root)
	require.NoError(t, err)
	_, err = ix.Update(t.Context())
	require.NoError(t, err)
	return root, ix
}

// A folder written by an older version of the package (another analyzer)
// is rebuilt by the next Update, not trusted and not refused.
func TestAFolderOfAnOlderVersionIsRebuilt(t *testing.T) {
	root, ix := helloIndex(t)
	ix.man.Version = manifestVersion - 1
	require.NoError(t, ix.man.save(filepath.Join(ix.dir, manifestFile)))
	require.NoError(t, ix.Close())

	ix, err := Open(t.Context(), root)
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

func TestBM25StatisticsAreKeptAcrossOpenUntilTheKeywordIndexChanges(t *testing.T) {
	root, ix := helloIndex(t)
	statsPath := filepath.Join(ix.dir, statsFile)
	require.NoFileExists(t, statsPath, "computed by the first keyword search, not by Update")
	want, err := ix.Search(t.Context(), "greets", WithMode(BM25))
	require.NoError(t, err)
	require.FileExists(t, statsPath)
	require.NoError(t, ix.Close())

	ix, err = Open(t.Context(), root)
	require.NoError(t, err)
	defer ix.Close()
	require.NotNil(t, ix.stats, "read from the file")
	got, err := ix.Search(t.Context(), "greets", WithMode(BM25))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, got))

	require.NoError(t, os.WriteFile(filepath.Join(root, "b.go"), []byte("package a\n\n// Bye waves.\nfunc Bye() {}\n"), 0o644))
	_, err = ix.Update(t.Context())
	require.NoError(t, err)
	require.Nil(t, ix.stats)
	require.NoFileExists(t, statsPath)
}

func TestADamagedBM25StatisticsFileIsComputedAgain(t *testing.T) {
	root, ix := helloIndex(t)
	want, err := ix.Search(t.Context(), "greets", WithMode(BM25))
	require.NoError(t, err)
	require.NoError(t, ix.Close())

	statsPath := filepath.Join(root, DefaultDir, statsFile)
	for name, data := range map[string][]byte{"garbage": []byte("not gob"), "empty": nil} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(statsPath, data, 0o644))
			ix, err := Open(t.Context(), root)
			require.NoError(t, err)
			defer ix.Close()
			require.Nil(t, ix.stats)
			got, err := ix.Search(t.Context(), "greets", WithMode(BM25))
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(want, got))
			require.NotNil(t, loadStats(statsPath), "written again")
		})
	}
}

func TestAKeywordQueryLeavesOutStopWords(t *testing.T) {
	for _, tt := range []struct{ q, want string }{
		{"how does the bufio scanner split input into lines", "bufio scanner split input into lines"},
		{"What is it?", "What is it?"}, // nothing but stop words: kept whole
		{"Convert a string to an integer", "Convert string integer"},
		{"ReadFrom in io.Copy", "ReadFrom io.Copy"},
	} {
		require.Equal(t, tt.want, keywordText(tt.q), tt.q)
	}
}

func TestUpdateRewritesAVersion1VectorFileInTheCurrentFormat(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// F adds.\nfunc F(x, y int) int { return x + y }\n"), 0o644))
	ix, err := Open(t.Context(), root)
	require.NoError(t, err)
	_, err = ix.Update(t.Context())
	require.NoError(t, err)
	require.NoError(t, ix.Close())

	// Write the same vectors back in format 1.
	path := filepath.Join(root, DefaultDir, vectorFile)
	f, err := loadFlatIndex(path)
	require.NoError(t, err)
	f.materialize()
	b := append([]byte(vectorMagicV1), binary.LittleEndian.AppendUint32(nil, uint32(f.dim))...)
	b = binary.LittleEndian.AppendUint32(b, uint32(f.rows()))
	for r, id := range f.ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(id)))
		b = append(b, id...)
		for _, x := range f.vecs[r*f.dim : (r+1)*f.dim] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))

	ix, err = Open(t.Context(), root)
	require.NoError(t, err)
	hits, err := ix.Search(t.Context(), "adds", WithMode(Vector))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	st, err := ix.Update(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Unchanged)
	require.NoError(t, ix.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, vectorMagic, string(data[:len(vectorMagic)]))
}
