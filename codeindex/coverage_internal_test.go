package codeindex

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// coverageWords are words of termTree's filler files, known to its term
// model.
var coverageWords = []string{"apple", "river", "stone", "cloud", "lamp", "garden", "violin", "rabbit", "copper", "meadow", "anchor", "pepper"}

// coverageIndex returns the updated index of latentTree with two more
// files: broad.Broad's comment names every coverage word once, and
// narrow.Narrow's repeats two of them.
func coverageIndex(t *testing.T) *Index {
	t.Helper()
	tree := latentTree()
	tree["broad/broad.go"] = "package broad\n\n// Broad: " + strings.Join(coverageWords, ", ") + ".\nfunc Broad() {}\n"
	tree["narrow/narrow.go"] = "package narrow\n\n// Narrow: " + strings.Repeat("apple river ", 6) + ".\nfunc Narrow() {}\n"
	root := t.TempDir()
	writeTermTree(t, root, tree)
	return openUpdated(t, root)
}

// chunkOf returns the ID of the chunk of ix defining symbol in the file rel.
func chunkOf(t *testing.T, ix *Index, rel, symbol string) string {
	t.Helper()
	e := ix.man.Files[rel]
	require.NotNil(t, e, rel)
	for n, c := range e.Chunks {
		if c.Symbol == symbol {
			return chunkID(rel, n)
		}
	}
	t.Fatalf("no chunk of %s defines %s", rel, symbol)
	return ""
}

func TestCoverageIsTheIdfShareOfTheQuerysTermsATextContains(t *testing.T) {
	ix := coverageIndex(t)
	lq := ix.latentQueryOf(strings.Join(coverageWords, " "))
	require.NotNil(t, lq)
	require.Len(t, lq.terms, len(coverageWords), "the model knows every word")
	var total float64
	for _, w := range lq.terms {
		total += float64(w)
	}
	apple, river := float64(lq.terms[lq.m.index[modelTerms("apple")[0]]]), float64(lq.terms[lq.m.index[modelTerms("river")[0]]])
	require.Positive(t, apple)
	require.Positive(t, river)
	tests := []struct {
		text string
		want float64
	}{
		{strings.Join(coverageWords, " "), 1},
		{"zebra walnut", 0},
		{"", 0},
		{"apple river", (apple + river) / total},
		{"apple apple apple river", (apple + river) / total},
		{"Apples by the rivers", (apple + river) / total},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, lq.coverage(modelTerms(tt.text)), 1e-9, "%q", tt.text)
	}
}

func TestCoverageCountsOnlyForAQueryOfMoreThanSixKnownTerms(t *testing.T) {
	ix := coverageIndex(t)
	tests := []struct {
		terms int
		want  float64
	}{{1, 0}, {6, 0}, {7, 1.0 / 6}, {9, 0.5}, {12, 1}}
	for _, tt := range tests {
		lq := ix.latentQueryOf(strings.Join(coverageWords[:tt.terms], " ") + " " + strings.Join(coverageWords[:tt.terms], " "))
		require.Len(t, lq.terms, tt.terms, "a repeated word is one term")
		require.InDelta(t, tt.want, lq.coverageRamp(), 1e-9, "%d terms", tt.terms)
	}
}

func TestCoveragePutsTheBroadestMatchOfALongQueryFirst(t *testing.T) {
	ix := coverageIndex(t)
	narrow, broad := chunkOf(t, ix, "narrow/narrow.go", "narrow.Narrow"), chunkOf(t, ix, "broad/broad.go", "broad.Broad")
	ranked := []scored{{id: narrow, score: 2}, {id: broad, score: 1.5}}
	long := ix.latentQueryOf(strings.Join(coverageWords, " "))
	require.Equal(t, []string{broad, narrow}, fileIDs(ix.rerankChunks(long, nil, ranked, rerankConfig{coverage: DefaultCoverageWeight}, latentChunkCandidates)))
	require.Equal(t, ranked, ix.rerankChunks(long, nil, ranked, rerankConfig{}, latentChunkCandidates), "weight 0: unchanged")
	short := ix.latentQueryOf(strings.Join(coverageWords[:4], " "))
	require.Equal(t, ranked, ix.rerankChunks(short, nil, ranked, rerankConfig{coverage: DefaultCoverageWeight}, latentChunkCandidates), "a short query: unchanged")
}

func TestCoverageOfAChunkWhoseFileChangedIsNothing(t *testing.T) {
	ix := coverageIndex(t)
	narrow, broad := chunkOf(t, ix, "narrow/narrow.go", "narrow.Narrow"), chunkOf(t, ix, "broad/broad.go", "broad.Broad")
	ranked := []scored{{id: narrow, score: 2}, {id: broad, score: 1.5}}
	writeTermTree(t, ix.root, map[string]string{"broad/broad.go": "package broad\n\n// Broad: " + strings.Join(coverageWords, ", ") + ", again.\nfunc Broad() {}\n"})
	long := ix.latentQueryOf(strings.Join(coverageWords, " "))
	require.Equal(t, []string{narrow, broad}, fileIDs(ix.rerankChunks(long, nil, ranked, rerankConfig{coverage: DefaultCoverageWeight}, latentChunkCandidates)),
		"the file is no longer the content indexed: its chunk gains nothing, the other does")
}

func TestSearchOfAShortQueryIsTheSameWithAndWithoutCoverage(t *testing.T) {
	ix := coverageIndex(t)
	for _, mode := range []Mode{BM25, Hybrid} {
		for _, q := range []string{"apple river", strings.Join(coverageWords[:6], " ")} {
			with, err := ix.Search(context.Background(), q, WithMode(mode), WithCoverageWeight(DefaultCoverageWeight))
			require.NoError(t, err)
			without, err := ix.Search(context.Background(), q, WithMode(mode), WithCoverageWeight(0))
			require.NoError(t, err)
			require.Equal(t, without, with, "%q, %v", q, mode)
		}
	}
}
