package llm_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
)

// The offline embedder plugs into a store's index as it is.
var _ store.Embedder = llm.NewHashingEmbedder(8)

func cosine(a, b []float32) float64 { return store.CosineSimilarity(a, b) }

func embed(t *testing.T, e *llm.HashingEmbedder, texts ...string) [][]float32 {
	t.Helper()
	vecs, err := e.Embed(t.Context(), texts)
	require.NoError(t, err)
	require.Len(t, vecs, len(texts))
	return vecs
}

func TestHashingEmbedderVectorsAreUnitLength(t *testing.T) {
	e := llm.NewHashingEmbedder(64)
	for _, text := range []string{"a", "Hello, world!", "žluťoučký kůň 日本語 🐴", "x y z " + string(make([]byte, 1000))} {
		v := embed(t, e, text)[0]
		require.Len(t, v, 64)
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		require.InDelta(t, 1, math.Sqrt(norm), 1e-6, "%q", text)
	}
}

func TestHashingEmbedderTextWithoutWordsIsZero(t *testing.T) {
	for _, text := range []string{"", "   ", "?!.,-", "\x00\x01"} {
		v := embed(t, llm.NewHashingEmbedder(16), text)[0]
		require.Equal(t, make([]float32, 16), v, "%q", text)
	}
}

func TestHashingEmbedderIsDeterministic(t *testing.T) {
	a := embed(t, llm.NewHashingEmbedder(32), "The quick brown fox", "jumps")
	b := embed(t, llm.NewHashingEmbedder(32), "jumps", "The quick brown fox")
	require.Equal(t, a[0], b[1])
	require.Equal(t, a[1], b[0])
	// Pinned: the vectors must not change between versions, or stored
	// vectors stop matching new queries.
	require.Equal(t, fmt.Sprint(embed(t, llm.NewHashingEmbedder(4), "go")[0]), hashingGolden)
}

// hashingGolden is the 4-dimensional vector of "go".
const hashingGolden = "[-0.31622776 0 0.9486833 0]"

func TestHashingEmbedderCaseAndPunctuationInsensitive(t *testing.T) {
	v := embed(t, llm.NewHashingEmbedder(0), "Hello, World!", "hello world")
	require.Equal(t, v[0], v[1])
}

func TestHashingEmbedderRanksRelatedTextsHigher(t *testing.T) {
	e := llm.NewHashingEmbedder(0)
	tests := []struct {
		query, near, far string
	}{
		{"the cat sat on the mat", "a cat sat on a mat", "stock markets fell sharply"},
		{"embeddings", "embedding vectors", "postgres migrations"},
		{"user prefers dark mode", "the user likes a dark theme", "invoice total due"},
		{"recieve", "receive", "transmit"},
	}
	for _, tt := range tests {
		v := embed(t, e, tt.query, tt.near, tt.far)
		near, far := cosine(v[0], v[1]), cosine(v[0], v[2])
		require.Greater(t, near, far, "%q: %q (%.3f) vs %q (%.3f)", tt.query, tt.near, near, tt.far, far)
	}
}

func TestHashingEmbedderDims(t *testing.T) {
	require.Equal(t, llm.DefaultHashingDim, llm.NewHashingEmbedder(0).Dims())
	require.Equal(t, llm.DefaultHashingDim, llm.NewHashingEmbedder(-3).Dims())
	require.Equal(t, llm.DefaultHashingDim, new(llm.HashingEmbedder).Dims(), "the zero value")
	require.Len(t, embed(t, new(llm.HashingEmbedder), "x")[0], llm.DefaultHashingDim)
	require.Equal(t, 7, llm.NewHashingEmbedder(7).Dims())
	require.Len(t, embed(t, llm.NewHashingEmbedder(1), "x")[0], 1)
	require.Empty(t, embed(t, llm.NewHashingEmbedder(8)), "no texts, no vectors")
}

func TestHashingEmbedderCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := llm.NewHashingEmbedder(8).Embed(ctx, []string{"x"})
	require.ErrorIs(t, err, context.Canceled)
}

func TestHashingEmbedderConcurrentUse(t *testing.T) {
	e := llm.NewHashingEmbedder(32)
	want := embed(t, e, "shared text")[0]
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			for range 50 {
				v, err := e.Embed(context.Background(), []string{"shared text"})
				if err == nil && fmt.Sprint(v[0]) != fmt.Sprint(want) {
					err = fmt.Errorf("goroutine %d got another vector", i)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// The offline embedder gives a store semantic search without a model or
// a network: here it finds the memory about food for a question that
// shares its words.
func ExampleNewHashingEmbedder() {
	ctx := context.Background()
	e := llm.NewHashingEmbedder(256)
	s := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: e, Dims: e.Dims(), Fields: []string{"text"}}))
	ns := []string{"users", "u-42", "memories"}
	_ = s.Put(ctx, ns, "food", map[string]any{"text": "likes spicy ramen and pizza"})
	_ = s.Put(ctx, ns, "music", map[string]any{"text": "listens to jazz while working"})
	_ = s.Put(ctx, ns, "pet", map[string]any{"text": "has a cat called Miso"})

	items, err := s.Search(ctx, []string{"users", "u-42"}, store.Query("which pizza does the user like?"), store.Limit(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range items {
		fmt.Printf("%s %.2f\n", it.Key, *it.Score)
	}
	// Output:
	// food 0.31
	// music 0.09
}
