package codeindex

// Review of tune's gradient: the loss the doc describes, computed here
// independently of tune, must fall in both directions when tune trains
// on one batch of all the pairs.

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewLoss returns the mean cross-entropy of each doc comment against
// the pairs' codes and of each code against their doc comments, over
// the scaled cosines of their pooled vectors in vecs (see tune.go).
func reviewLoss(m *termModel, c *termCounter, pairs []docPair, docs int, vecs []float32, scale float64) (docToCode, codeToDoc float64) {
	d := m.Dim
	pool := func(tcs []termCount) []float64 {
		out := make([]float64, d)
		for _, tc := range tcs {
			k, ok := m.index[c.terms[tc.id]]
			idf := math.Log(float64(docs) / float64(c.df[tc.id]))
			if !ok || idf <= 0 {
				continue
			}
			w := (1 + math.Log(float64(tc.tf))) * float64(float32(idf))
			for j := range out {
				out[j] += w * float64(vecs[int(k)*d+j])
			}
		}
		var ss float64
		for _, x := range out {
			ss += x * x
		}
		for j := range out {
			out[j] /= math.Sqrt(ss)
		}
		return out
	}
	n := len(pairs)
	q, cd := make([][]float64, n), make([][]float64, n)
	for i, p := range pairs {
		q[i], cd[i] = pool(p.doc), pool(p.code)
	}
	sim := func(i, j int) float64 {
		var s float64
		for k := range q[i] {
			s += q[i][k] * cd[j][k]
		}
		return scale * s
	}
	for i := range n {
		var zr, zc float64
		for j := range n {
			zr += math.Exp(sim(i, j))
			zc += math.Exp(sim(j, i))
		}
		docToCode += (math.Log(zr) - sim(i, i)) / float64(n)
		codeToDoc += (math.Log(zc) - sim(i, i)) / float64(n)
	}
	return docToCode, codeToDoc
}

func TestReviewTuneLowersTheInBatchLossBothWays(t *testing.T) {
	defs := append(reviewFiller(200), reviewDocumented(64)...)
	var c termCounter
	var pc pairCounter
	for _, d := range defs {
		c.add(d.symbol + "\n" + d.content)
		pc.add(&c, d.symbol, d.content)
	}
	docs := len(c.docs)
	pairs := append([]docPair(nil), pc.pairs...)
	require.Len(t, pairs, 64)
	m, err := c.train(context.Background(), defaultTermTraining(DefaultTermModelDim))
	require.NoError(t, err)
	cfg := tuneConfig{epochs: 20, batch: 64, scale: 20, rate: 0.05, seed: 1}
	tuned, err := m.tune(context.Background(), &c, &pc, docs, cfg)
	require.NoError(t, err)
	require.NotNil(t, tuned)
	d0, c0 := reviewLoss(m, &c, pairs, docs, m.Vecs, cfg.scale)
	d1, c1 := reviewLoss(m, &c, pairs, docs, tuned, cfg.scale)
	t.Logf("doc→code %.3f → %.3f, code→doc %.3f → %.3f", d0, d1, c0, c1)
	require.Less(t, d1, 0.8*d0, "doc comments against codes")
	require.Less(t, c1, 0.8*c0, "codes against doc comments")
}
