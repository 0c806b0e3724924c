package codeindex_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashingEmbedderReturnsUnitVectorsOfItsDimension(t *testing.T) {
	e := codeindex.NewHashingEmbedder(64)
	vs, err := e.Embed(context.Background(), []string{"func parseHTTPRequest()", "type Cart struct"})
	require.NoError(t, err)
	require.Len(t, vs, 2)
	for _, v := range vs {
		require.Len(t, v, 64)
		require.InDelta(t, 1, math.Sqrt(dot(v, v)), 1e-5)
	}
}

func TestHashingEmbedderGivesZeroVectorForTextWithoutTokens(t *testing.T) {
	vs, err := codeindex.HashingEmbedder{}.Embed(context.Background(), []string{"{ } ( )"})
	require.NoError(t, err)
	require.Len(t, vs[0], codeindex.DefaultHashingDim)
	require.Zero(t, dot(vs[0], vs[0]))
}

func TestHashingEmbedderPutsSharedIdentifiersCloser(t *testing.T) {
	vs, err := codeindex.NewHashingEmbedder(256).Embed(context.Background(), []string{
		"parse the http request",
		"func parseHTTPRequest(r *Request) error",
		"type Cart struct { Items []string }",
	})
	require.NoError(t, err)
	require.Greater(t, dot(vs[0], vs[1]), dot(vs[0], vs[2]))
}

func TestHashingEmbedderIsDeterministic(t *testing.T) {
	e := codeindex.NewHashingEmbedder(32)
	a, err := e.Embed(context.Background(), []string{"ServeMux.Handle"})
	require.NoError(t, err)
	b, err := e.Embed(context.Background(), []string{"ServeMux.Handle"})
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func TestHashingEmbedderStopsOnCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := codeindex.HashingEmbedder{}.Embed(ctx, []string{"x"})
	require.True(t, errors.Is(err, context.Canceled))
}
