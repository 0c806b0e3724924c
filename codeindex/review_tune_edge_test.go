package codeindex

// Review attacks on tune (tune.go): batch edges and degenerate pairs. The
// loader refuses a model with a NaN or an infinity, which would silently
// drop the whole term model: tune must never write one.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewWords returns n distinct lowercase letter-only words.
func reviewWords(n int) []string {
	syl := []string{"ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze", "ba", "do"}
	var out []string
	for i := 0; len(out) < n; i++ {
		out = append(out, syl[i%12]+syl[i/12%12]+syl[i/144%12]+"x")
	}
	return out
}

// reviewDef is a definition: its symbol and content (doc comment and code).
type reviewDef struct{ symbol, content string }

// reviewFiller returns n undocumented definitions over a pool of 60 words,
// enough for the LSA model to have dimensions.
func reviewFiller(n int) []reviewDef {
	w := reviewWords(60)
	var out []reviewDef
	for i := range n {
		a, b, c := w[i*7%60], w[(i*11+3)%60], w[(i*13+5)%60]
		out = append(out, reviewDef{fmt.Sprintf("plain%s", a), fmt.Sprintf("func plain%d(x *T) { x.%s(x.%s, x.%s) }", i, a, b, c)})
	}
	return out
}

// reviewDocumented returns n documented definitions over the same pool.
func reviewDocumented(n int) []reviewDef {
	w := reviewWords(60)
	var out []reviewDef
	for i := range n {
		a, b, c, d := w[i*3%60], w[(i*5+1)%60], w[(i*17+2)%60], w[(i*19+7)%60]
		out = append(out, reviewDef{"Doc" + a, fmt.Sprintf("// Doc%d keeps the %s %s beside %s and %s.\nfunc Doc%d(x *T) { x.%s(x.%s) }", i, a, b, c, d, i, a, c)})
	}
	return out
}

// reviewTrain counts defs as trainTermModelWith does, trains the LSA model
// and tunes it with cfg.
func reviewTrain(t *testing.T, defs []reviewDef, cfg tuneConfig) (*termModel, []float32) {
	t.Helper()
	var c termCounter
	var pc pairCounter
	for _, d := range defs {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
	}
	docs := len(c.docs)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	tuned, err := m.tune(context.Background(), &c, &pc, docs, cfg)
	require.NoError(t, err)
	return m, tuned
}

// requireFiniteUnitVectors fails unless every float of vecs is finite and
// every dim-vector is of unit length or zero.
func requireFiniteUnitVectors(t *testing.T, vecs []float32, dim int) {
	t.Helper()
	require.NotZero(t, dim)
	require.Zero(t, len(vecs)%dim)
	for i := 0; i < len(vecs); i += dim {
		var ss float64
		for _, x := range vecs[i : i+dim] {
			require.False(t, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0), "vector %d: %v", i/dim, vecs[i:i+dim])
			ss += float64(x) * float64(x)
		}
		require.True(t, ss == 0 || math.Abs(math.Sqrt(ss)-1) < 1e-3, "vector %d of norm %v", i/dim, math.Sqrt(ss))
	}
}

func TestReviewTuneBatchEdgesGiveFiniteUnitVectorsOrNone(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 127, 128, 129, 257} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			defs := append(reviewFiller(200), reviewDocumented(n)...)
			m, tuned := reviewTrain(t, defs, defaultTuning())
			require.NotZero(t, m.Dim, "the filler gives the model dimensions")
			if n < 2 {
				require.Nil(t, tuned, "fewer than two pairs: no tuning")
				return
			}
			require.Len(t, tuned, len(m.Vecs))
			requireFiniteUnitVectors(t, tuned, m.Dim)
			m.Tuned = tuned
			m.IDF = make([]float32, len(m.Terms)) // as setFiles gives it
			data, id := m.encode(DefaultTermModelDim)
			path := t.TempDir() + "/" + termModelFile
			require.NoError(t, saveTermModel(path, data))
			back, err := loadTermModel(path, id)
			require.NoError(t, err, "the tuned model loads back")
			require.Equal(t, tuned, back.Tuned)
		})
	}
}

func TestReviewTuneIsDeterministic(t *testing.T) {
	defs := append(reviewFiller(200), reviewDocumented(300)...)
	_, a := reviewTrain(t, defs, defaultTuning())
	_, b := reviewTrain(t, defs, defaultTuning())
	require.NotNil(t, a)
	require.Equal(t, a, b)
}

func TestReviewTuneLeavesTheLSAVectorsAlone(t *testing.T) {
	defs := append(reviewFiller(200), reviewDocumented(150)...)
	var c termCounter
	var pc pairCounter
	for _, d := range defs {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
	}
	docs := len(c.docs)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	before := append([]float32(nil), m.Vecs...)
	tuned, err := m.tune(context.Background(), &c, &pc, docs, defaultTuning())
	require.NoError(t, err)
	require.NotNil(t, tuned)
	require.Equal(t, before, m.Vecs)
	require.NotEqual(t, m.Vecs, tuned, "tuning moved some vector")
}

func TestReviewTuneIdenticalDocCommentsStayFinite(t *testing.T) {
	defs := reviewFiller(200)
	w := reviewWords(60)
	for i := range 100 { // the same doc comment over a third of the definitions
		defs = append(defs, reviewDef{"Same", fmt.Sprintf("// Same keeps the %s %s beside %s and %s.\nfunc Same%d(x *T) { x.%s() }", w[0], w[1], w[2], w[3], i, w[i%60])})
	}
	m, tuned := reviewTrain(t, defs, defaultTuning())
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}

func TestReviewTuneIdenticalPairsStayFinite(t *testing.T) {
	defs := reviewFiller(200)
	w := reviewWords(60)
	for range 100 { // the same pair, doc and code, a hundred times: every logit equal
		defs = append(defs, reviewDef{"Same", fmt.Sprintf("// Same keeps the %s %s beside %s and %s.\nfunc Same(x *T) { x.%s() }", w[0], w[1], w[2], w[3], w[4])})
	}
	m, tuned := reviewTrain(t, defs, defaultTuning())
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}

func TestReviewTuneHugeDocCommentStaysFinite(t *testing.T) {
	defs := append(reviewFiller(200), reviewDocumented(50)...)
	w := reviewWords(60)
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "// %s %s\n", w[i%60], w[0])
	}
	defs = append(defs, reviewDef{"Huge", b.String() + "func Huge(x *T) { x." + w[5] + "() }"})
	m, tuned := reviewTrain(t, defs, defaultTuning())
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}

func TestReviewTunePairsWithoutCodeOrASCIITermsAreLeftOut(t *testing.T) {
	defs := reviewFiller(200)
	w := reviewWords(60)
	var pc pairCounter
	var c termCounter
	for _, d := range defs {
		c.add(d.symbol + "\n" + d.content)
	}
	odd := []reviewDef{
		{"", fmt.Sprintf("// %s %s %s %s\n{}", w[0], w[1], w[2], w[3])},                      // no code terms
		{"Функция", "// Функция возвращает значение ключа из кэша.\nfunc Функция() {}"},      // another script
		{"関数", "// 関数はキャッシュから値を返します。とても長い説明。\nfunc 関数() {}"},                                 // and another
		{"x", fmt.Sprintf("// %s %s %s %s\n}\n", w[0], w[1], w[2], w[3])},                    // a one-letter symbol
		{"", "// \xff\xfe\xfd invalid UTF-8 " + w[0] + " " + w[1] + " " + w[2] + " " + w[3]}, // all doc
	}
	for _, d := range odd {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
	}
	for _, p := range pc.pairs {
		require.NotEmpty(t, p.doc)
	}
	docs := len(c.docs)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	tuned, err := m.tune(context.Background(), &c, &pc, docs, defaultTuning())
	require.NoError(t, err)
	require.Nil(t, tuned, "none of these pairs has terms on both sides")
}

func TestReviewTuneMixedScriptsAndDuplicateSymbolsStayFinite(t *testing.T) {
	defs := reviewFiller(200)
	for i, d := range reviewDocumented(150) {
		d.symbol = "Dup"                                                    // every symbol the same
		d.content = "// Ключ 鍵 " + d.content[3:] + fmt.Sprintf(" // %d", i) // other scripts around the terms
		defs = append(defs, d)
	}
	m, tuned := reviewTrain(t, defs, defaultTuning())
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}

// reviewHandModel returns a model of dimension 4 whose terms are named
// t0…, with the given vectors, and a counter that knows them, each in
// every other of docs documents.
func reviewHandModel(vecs [][]float32, docs int) (*termModel, *termCounter) {
	m := &termModel{Dim: 4}
	c := &termCounter{ids: map[string]int32{}}
	for i, v := range vecs {
		name := fmt.Sprintf("t%c", 'a'+i)
		m.Terms = append(m.Terms, name)
		m.Vecs = append(m.Vecs, v...)
		c.ids[name] = int32(i)
		c.terms = append(c.terms, name)
		c.df = append(c.df, docs/2)
	}
	m.reindex()
	return m, c
}

func TestReviewTuneAPooledVectorThatCancelsToZeroWritesNoNaN(t *testing.T) {
	// ta and tb are opposite, of equal weight: the doc comment {ta, tb}
	// pools to exactly zero, and its normalisation would divide by zero.
	m, c := reviewHandModel([][]float32{
		{1, 0, 0, 0}, {-1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {0, 0, 0, 0},
	}, 10)
	pc := &pairCounter{pairs: []docPair{
		{doc: []termCount{{0, 1}, {1, 1}}, code: []termCount{{2, 1}}},
		{doc: []termCount{{0, 2}, {1, 2}}, code: []termCount{{3, 1}, {0, 1}, {1, 1}}}, // code pools to zero too
		{doc: []termCount{{5, 1}}, code: []termCount{{4, 1}}},                         // a zero vector
		{doc: []termCount{{3, 1}}, code: []termCount{{5, 1}}},
	}}
	tuned, err := m.tune(context.Background(), c, pc, 10, tuneConfig{epochs: 50, batch: 4, scale: 20, rate: 0.05, seed: 1})
	require.NoError(t, err)
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}

func TestReviewTuneStopsOnACanceledContext(t *testing.T) {
	defs := append(reviewFiller(200), reviewDocumented(300)...)
	var c termCounter
	var pc pairCounter
	for _, d := range defs {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
	}
	docs := len(c.docs)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tuned, err := m.tune(ctx, &c, &pc, docs, defaultTuning())
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, tuned)
}
