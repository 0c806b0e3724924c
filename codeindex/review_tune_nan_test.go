package codeindex

// Review attack on tune's normalisation of a pooled vector of tiny norm.

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReviewTuneANearlyCancellingPoolWritesNoNaN(t *testing.T) {
	// tb is −ta but for a subnormal component: the doc comment {ta, tb}
	// pools to a vector of norm ~1e-45, not zero, and the gradient through
	// its normalisation (weight / norm) overflows float32: +Inf, then NaN
	// in AdaGrad's step, which the loader refuses (the whole model lost).
	a := []float32{1, 0, 0, 0}
	b := []float32{-1, math.Float32frombits(1), 0, 0} // a subnormal: the pool's norm ~1.4e-45
	m, c := reviewHandModel([][]float32{a, b, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, 10)
	pc := &pairCounter{pairs: []docPair{
		{doc: []termCount{{0, 1}, {1, 1}}, code: []termCount{{2, 1}}},
		{doc: []termCount{{3, 1}}, code: []termCount{{4, 1}}},
		{doc: []termCount{{4, 1}}, code: []termCount{{0, 1}, {1, 1}}},
	}}
	tuned, err := m.tune(context.Background(), c, pc, 10, tuneConfig{epochs: 20, batch: 3, scale: 20, rate: 0.05, seed: 1})
	require.NoError(t, err)
	require.NotNil(t, tuned)
	requireFiniteUnitVectors(t, tuned, m.Dim)
}
