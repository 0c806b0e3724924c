package codeindex

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// vecModel returns a term model whose terms are the model terms of words
// (one each), with the given vectors (unit, of dimension dim) and idf.
func vecModel(t *testing.T, dim int, words []string, vecs [][]float32, idf []float32) *termModel {
	t.Helper()
	m := &termModel{Dim: dim, Files: []modelFile{{Path: "x.go"}}, index: map[string]int32{}}
	for i, w := range words {
		ts := modelTerms(w)
		require.Len(t, ts, 1, w)
		m.Terms = append(m.Terms, ts[0])
		m.index[ts[0]] = int32(i)
		m.Vecs = append(m.Vecs, vecs[i]...)
		m.IDF = append(m.IDF, idf[i])
	}
	return m
}

func TestMaxSimScore(t *testing.T) {
	// "deadline" and "timer" along the first axis, "river" along the
	// second, "late" against the first; "river" three times as rare.
	m := vecModel(t, 2, []string{"deadline", "river", "timer", "late"}, [][]float32{{1, 0}, {0, 1}, {1, 0}, {-1, 0}}, []float32{1, 3, 1, 1})
	q := newMaxSim(&latentQuery{m: m, v: m.termsVector(modelTerms("deadline river")), terms: map[int32]float32{0: 1, 1: 3}, idf: 4})
	require.NotNil(t, q)
	for _, tt := range []struct {
		name, text string
		want       float64
	}{
		{"both terms", "deadline river", 1},
		{"a synonym of the first and the second", "timer river", 1},
		{"the rare term alone", "river", 0.75},
		{"the common term alone", "deadline", 0.25},
		{"its synonym alone", "timer timer timer", 0.25},
		{"a repeated term counts once", "deadline deadline deadline", 0.25},
		{"an opposite term counts 0", "late", 0},
		{"no known term", "apple pear", 0},
		{"nothing", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, q.score(modelTerms(tt.text)), 1e-6)
		})
	}
}

func TestNewMaxSimOfNoQuery(t *testing.T) {
	require.Nil(t, newMaxSim(nil))
	m := handModel()
	require.Nil(t, newMaxSim(&latentQuery{m: m, terms: map[int32]float32{}}), "no term of positive idf")
}

// A long question's general words outweigh its one specific word in its
// pooled vector: the pooled cosine puts first the chunk that says the
// general words, the late interaction the one that also says the
// specific word.
func TestMaxSimKeepsTheSpecificWord(t *testing.T) {
	m := vecModel(t, 3, []string{"read", "data", "file", "checksum", "crc"}, [][]float32{{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}}, []float32{1, 1, 1, 1, 1})
	question := "read the data of a file and its checksum"
	lq := &latentQuery{m: m, v: m.termsVector(modelTerms(question)), terms: map[int32]float32{0: 1, 1: 1, 2: 1, 3: 1}, idf: 4}
	q := newMaxSim(lq)
	general := chunkTermsOf("pkg.ReadFile\n// ReadFile reads the data of a file.\nfunc ReadFile(file string) (data []byte) { return read(file) }")
	specific := chunkTermsOf("pkg.Update\n// Update adds data to the checksum.\nfunc Update(crc uint32, data []byte) uint32 { return crc }")
	require.Greater(t, lq.chunkCosine(general, true), lq.chunkCosine(specific, true), "the pooled cosine")
	require.Less(t, q.chunkScore(general), q.chunkScore(specific), "the late interaction")
	require.InDelta(t, 0.75, q.chunkScore(general), 1e-6)
	require.InDelta(t, 1, q.chunkScore(specific), 1e-6)
}

func TestMaxSimChunkScoreIsTheMeanOfTextAndCode(t *testing.T) {
	m := handModel()
	lq := &latentQuery{m: m, v: m.termsVector(modelTerms("deadline river")), terms: map[int32]float32{0: 1, 1: 1}, idf: 2}
	q := newMaxSim(lq)
	// The doc comment says the river, the code the timer: the whole
	// text covers both terms, the code the first only.
	c := chunkTermsOf("pkg.Flow\n// Flow follows the river.\nfunc Flow() { timer() }")
	require.InDelta(t, 1, q.score(c.all), 1e-6)
	require.InDelta(t, 0.5, q.score(c.code), 1e-6)
	require.InDelta(t, 0.75, q.chunkScore(c), 1e-6)
}
