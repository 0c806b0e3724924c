package codeindex

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChunkTermsOf(t *testing.T) {
	for _, tt := range []struct{ name, text, code string }{
		{"doc comment left out", "http.Reap\n// Reap drops a slow peer.\n// It waits.\nfunc Reap() {\n\t// inside\n}", "http.Reap\nfunc Reap() {\n\t// inside\n}"},
		{"no doc comment", "F\nfunc F() {}", "F\nfunc F() {}"},
		{"python", "mod.add_item\n# Adds an item.\ndef add_item():\n    pass", "mod.add_item\ndef add_item():\n    pass"},
		{"block comment", "lib.add\n/**\n * Adds numbers.\n */\nfunction add() {}", "lib.add\nfunction add() {}"},
		{"only a comment", "x.Only\n// only words here\n", "x.Only\n"},
		{"symbol alone", "pkg.Name", "pkg.Name"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkTermsOf(tt.text)
			require.Equal(t, modelTerms(tt.text), got.all, "every term of the text, in order")
			require.Equal(t, modelTerms(tt.code), got.code)
		})
	}
}

func TestChunkTermsOfDoesNotShareItsSlices(t *testing.T) {
	got := chunkTermsOf("pkg.ReadHeader\n// Reads it.\nfunc ReadHeader() { parse() }")
	code := slices.Clone(got.code)
	got.all[0] = "changed"
	require.Equal(t, code, got.code)
}

// handModel returns a term model of two dimensions whose terms are
// "deadlin" and "timer", both along the first axis, and "river", along the
// second, every idf 1.
func handModel() *termModel {
	m := &termModel{
		Dim:   2,
		Terms: []string{"deadlin", "river", "timer"},
		Vecs:  []float32{1, 0, 0, 1, 1, 0},
		IDF:   []float32{1, 1, 1},
		Files: []modelFile{{Path: "x.go"}},
		index: map[string]int32{"deadlin": 0, "river": 1, "timer": 2},
	}
	return m
}

func TestChunkCosine(t *testing.T) {
	m := handModel()
	lq := &latentQuery{m: m, v: m.termsVector(modelTerms("deadline"))}
	require.NotNil(t, lq.v)
	// A doc comment that repeats the question's word over code of
	// another topic, and code about the question's topic under no doc.
	docOnly := "pkg.Flow\n// Deadline, deadline.\nfunc Flow() { river() }"
	code := "pkg.Arm\nfunc Arm() { timer(); river(); river() }"
	for _, tt := range []struct {
		name       string
		text       string
		whole, mix float64 // the cosine without and with the code's
	}{
		{"doc comment of the question's words", docOnly, 0.861, 0.431},
		{"code of the question's topic", code, 0.509, 0.509},
		{"no known term", "pkg.G\nfunc G() {}", 0, 0},
		{"the doc comment alone knows a term", "pkg.H\n// deadline\nfunc H() {}", 1, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			terms := chunkTermsOf(tt.text)
			require.InDelta(t, tt.whole, lq.chunkCosine(terms, false), 1e-3)
			require.InDelta(t, tt.mix, lq.chunkCosine(terms, true), 1e-3)
		})
	}
	// Whole texts put the doc comment first; with the code, the code.
	require.Greater(t, lq.chunkCosine(chunkTermsOf(docOnly), false), lq.chunkCosine(chunkTermsOf(code), false))
	require.Less(t, lq.chunkCosine(chunkTermsOf(docOnly), true), lq.chunkCosine(chunkTermsOf(code), true))
}

func TestCosineOfNoVectorIsZero(t *testing.T) {
	m := handModel()
	lq := &latentQuery{m: m, v: m.termsVector(modelTerms("river"))}
	for _, tt := range []struct {
		name  string
		terms []string
		want  float64
	}{
		{"none", nil, 0},
		{"unknown", []string{"apple"}, 0},
		{"orthogonal", []string{"timer"}, 0},
		{"same", []string{"river"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, lq.cosine(tt.terms), 1e-6)
		})
	}
}
