package codeindex

// Review attacks on what the latent rankings change, and what they must
// leave alone.

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func searchOf(t *testing.T, ix *Index, q string, opts ...SearchOption) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q, opts...)
	require.NoError(t, err)
	for _, h := range hits {
		require.False(t, math.IsNaN(h.Score) || math.IsInf(h.Score, 0), "%q: %s scores %v", q, h.Symbol, h.Score)
	}
	return hits
}

var latentOff = []SearchOption{WithLatentFileWeight(0), WithLatentChunkWeight(0)}
var latentHigh = []SearchOption{WithLatentFileWeight(5), WithLatentChunkWeight(5)}

func with(base []SearchOption, more ...SearchOption) []SearchOption {
	return append(append([]SearchOption(nil), base...), more...)
}

func TestReviewLatentLeavesAloneWhatItCannotRank(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	require.NotNil(t, ix.termModel())
	for _, mode := range []Mode{BM25, Hybrid, Vector} {
		m := WithMode(mode)
		// Words the model does not know (BM25 finds some of them).
		for _, q := range []string{"halt", "zebra quux", "stop ring", "F12"} {
			require.Equal(t, searchOf(t, ix, q, with(latentOff, m)...), searchOf(t, ix, q, with(latentHigh, m)...), "%q %v: no known term, no change", q, mode)
		}
		// WithFileWeight(0): the latent file ranking needs the file ranking.
		require.Equal(t, searchOf(t, ix, "halt sluggish", m, WithFileWeight(0), WithLatentChunkWeight(0), WithLatentFileWeight(0)),
			searchOf(t, ix, "halt sluggish", m, WithFileWeight(0), WithLatentChunkWeight(0), WithLatentFileWeight(5)), "%v", mode)
	}
	// Vector mode: neither latent ranking applies.
	for _, q := range []string{"halt sluggish", "deadline", "apple river"} {
		require.Equal(t, searchOf(t, ix, q, with(latentOff, WithMode(Vector))...), searchOf(t, ix, q, with(latentHigh, WithMode(Vector))...), q)
	}
}

func TestReviewLatentTinyCorpusHasNoModelAndSearchesAsWithout(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, map[string]string{
		"a.go": "package a\n\n// Halt stops the sluggish timer.\nfunc Halt() {}\n",
		"b.go": "package a\n\n// Ring rings the bell.\nfunc Ring() {}\n",
	})
	ix := openUpdated(t, root)
	m := ix.termModel()
	require.NotNil(t, m)
	require.Zero(t, m.Dim, "too few terms for a model")
	require.Nil(t, m.queryVector("halt sluggish"))
	for _, mode := range []Mode{BM25, Hybrid, Vector} {
		for _, q := range []string{"halt sluggish", "bell", "nothing here"} {
			require.Equal(t, searchOf(t, ix, q, with(latentOff, WithMode(mode))...), searchOf(t, ix, q, with(latentHigh, WithMode(mode))...), "%q %v", q, mode)
		}
	}
}

// TestReviewLatentScoresAreFiniteAndStable: every mode, every fusion,
// weights from tiny to huge, queries the model knows, half knows or does
// not know; repeated searches give the same hits.
func TestReviewLatentScoresAreFiniteAndStable(t *testing.T) {
	root := t.TempDir()
	tree := latentTree()
	// Files whose comments have no term the model knows: zero vectors.
	tree["empty/none.go"] = "package empty\n\nfunc None() {}\n"
	tree["empty/zz.go"] = "package empty\n\n// zzz qqq\nfunc Zz() {}\n"
	writeTermTree(t, root, tree)
	ix := openUpdated(t, root)
	require.NotNil(t, ix.termModel())
	for _, q := range []string{"sluggish", "halt sluggish", "timer deadline set", "zzz", "apple river stone cloud package"} {
		for _, w := range []float64{1e-12, 1e6} {
			for _, fusion := range []Fusion{FuseMNZ, FuseRRF} {
				for _, mode := range []Mode{BM25, Hybrid} {
					opts := []SearchOption{WithMode(mode), WithFusion(fusion), WithLatentFileWeight(w), WithLatentChunkWeight(w), WithLimit(100)}
					first := searchOf(t, ix, q, opts...)
					for range 1 {
						require.Equal(t, first, searchOf(t, ix, q, opts...), fmt.Sprintf("%q w=%v %v %v", q, w, fusion, mode))
					}
				}
			}
		}
	}
}

// TestReviewLatentFileRankingWhenBM25FindsNoFile: files only the latent
// ranking finds, with no BM25 file ranking to scale them.
func TestReviewLatentFileRankingWhenBM25FindsNoFile(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	out := ix.latentFiles(ix.latentQueryOf("sluggish deadline"), nil, DefaultLatentFileWeight, fileCandidates)
	require.NotEmpty(t, out)
	for _, f := range out {
		require.False(t, math.IsNaN(f.score) || math.IsInf(f.score, 0), "%s %v", f.id, f.score)
		require.LessOrEqual(t, f.score, DefaultLatentFileWeight+1e-9)
	}
	// And a BM25 ranking whose best score is 0.
	zero := []scored{{id: "clock/bell.go", score: 0}, {id: "netx/timer.go", score: 0}}
	out = ix.latentFiles(ix.latentQueryOf("sluggish deadline"), zero, DefaultLatentFileWeight, fileCandidates)
	for _, f := range out {
		require.False(t, math.IsNaN(f.score) || math.IsInf(f.score, 0), "%s %v", f.id, f.score)
	}
	// Chunks all scored 0.
	chunks := []scored{{id: "netx/timer.go#0", score: 0}, {id: "netx/timer.go#1", score: 0}, {id: "clock/bell.go#1", score: 0}}
	for _, c := range ix.rerankChunks(ix.latentQueryOf("sluggish deadline"), nil, chunks, rerankConfig{latent: DefaultLatentChunkWeight}, latentChunkCandidates) {
		require.False(t, math.IsNaN(c.score) || math.IsInf(c.score, 0), "%s %v", c.id, c.score)
	}
}
