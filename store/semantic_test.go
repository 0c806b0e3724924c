package store_test

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/store"
)

// recorder embeds every text as [len(text), 1] and records the texts it
// is given.
type recorder struct {
	mu    sync.Mutex
	texts []string
}

func (r *recorder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, texts...)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// embedFunc adapts a function to store.Embedder.
type embedFunc func(ctx context.Context, texts []string) ([][]float32, error)

func (f embedFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

func TestIndexEmbedValueExtractsFieldTexts(t *testing.T) {
	value := map[string]any{
		"text":   "hello",
		"n":      1.5,
		"ok":     true,
		"null":   nil,
		"meta":   map[string]any{"title": "T", "tags": []any{"a", "b", map[string]any{"z": 1.0, "a": "<&>"}}},
		"chunks": []any{map[string]any{"text": "first"}, map[string]any{"text": "last"}},
	}
	tests := []struct {
		name   string
		fields []string
		want   []string // field=text
	}{
		{"plain key", []string{"text"}, []string{"text=hello"}},
		{"number and bool as JSON", []string{"n", "ok"}, []string{"n=1.5", "ok=true"}},
		{"null and missing give nothing", []string{"null", "missing", "text.deeper"}, nil},
		{"dotted path", []string{"meta.title"}, []string{"meta.title=T"}},
		{"array by index", []string{"meta.tags[1]", "chunks[-1].text", "chunks[5].text", "chunks[-3].text"}, []string{"meta.tags[1]=b", "chunks[-1].text=last"}},
		{"every element", []string{"chunks[*].text"}, []string{"chunks[*].text.0=first", "chunks[*].text.1=last"}},
		{"object as sorted JSON", []string{"meta.tags[2]"}, []string{`meta.tags[2]={"a":"<&>","z":1}`}},
		{"wildcard key", []string{"meta.*"}, []string{`meta.*.0=["a","b",{"a":"<&>","z":1}]`, "meta.*.1=T"}},
		{"index on an object gives nothing", []string{"meta[0]", "text[*]"}, nil},
		{"path listed twice embeds once", []string{"text", "text"}, []string{"text=hello"}},
		{"whole value", []string{"$"}, []string{`$={"chunks":[{"text":"first"},{"text":"last"}],"meta":{"tags":["a","b",{"a":"<&>","z":1}],"title":"T"},"n":1.5,"null":null,"ok":true,"text":"hello"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			x, err := store.NewIndex(store.IndexConfig{Embedder: rec, Dims: 2, Fields: tt.fields})
			require.NoError(t, err)
			vecs, err := x.EmbedValue(t.Context(), value, store.PutConfig{})
			require.NoError(t, err)
			var got []string
			for i, v := range vecs {
				got = append(got, v.Field+"="+rec.texts[i])
				require.Equal(t, []float32{float32(len(rec.texts[i])), 1}, v.Vector)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("texts (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 {
				require.Empty(t, rec.texts, "nothing to embed: the embedder is not called")
			}
		})
	}
}

func TestIndexEmbedValueOverride(t *testing.T) {
	rec := &recorder{}
	x, err := store.NewIndex(store.IndexConfig{Embedder: rec, Dims: 2, Fields: []string{"a"}})
	require.NoError(t, err)
	value := map[string]any{"a": "x", "b": "yy"}
	for _, tt := range []struct {
		opts []store.PutOption
		want []string
	}{
		{nil, []string{"a"}},
		{[]store.PutOption{store.IndexFields("b")}, []string{"b"}},
		{[]store.PutOption{store.IndexFields("a", "b")}, []string{"a", "b"}},
		{[]store.PutOption{store.NoIndex()}, nil},
		{[]store.PutOption{store.IndexFields()}, nil},
		{[]store.PutOption{store.NoIndex(), store.IndexFields("b")}, []string{"b"}},
	} {
		cfg, err := store.NewPutConfig(tt.opts...)
		require.NoError(t, err)
		vecs, err := x.EmbedValue(t.Context(), value, cfg)
		require.NoError(t, err)
		var got []string
		for _, v := range vecs {
			got = append(got, v.Field)
		}
		require.Equal(t, tt.want, got)
	}
}

func TestNewIndexRejectsInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]store.IndexConfig{
		"no embedder":       {Dims: 2},
		"no dims":           {Embedder: &recorder{}},
		"negative dims":     {Embedder: &recorder{}, Dims: -1},
		"empty path":        {Embedder: &recorder{}, Dims: 2, Fields: []string{""}},
		"empty key":         {Embedder: &recorder{}, Dims: 2, Fields: []string{"a..b"}},
		"trailing dot":      {Embedder: &recorder{}, Dims: 2, Fields: []string{"a."}},
		"bad index":         {Embedder: &recorder{}, Dims: 2, Fields: []string{"a[one]"}},
		"unclosed bracket":  {Embedder: &recorder{}, Dims: 2, Fields: []string{"a[0"}},
		"stray bracket":     {Embedder: &recorder{}, Dims: 2, Fields: []string{"a]"}},
		"text after index":  {Embedder: &recorder{}, Dims: 2, Fields: []string{"a[0]b"}},
		"multi-field":       {Embedder: &recorder{}, Dims: 2, Fields: []string{"{a,b}"}},
		"empty fields list": {Embedder: &recorder{}, Dims: 2, Fields: []string{}},
	} {
		_, err := store.NewIndex(cfg)
		if name == "empty fields list" {
			require.NoError(t, err, "an empty list indexes nothing")
			continue
		}
		require.ErrorIs(t, err, store.ErrInvalidOption, name)
	}
}

func TestIndexRejectsBadEmbeddings(t *testing.T) {
	boom := errors.New("boom")
	for name, f := range map[string]embedFunc{
		"error":      func(context.Context, []string) ([][]float32, error) { return nil, boom },
		"too few":    func(context.Context, []string) ([][]float32, error) { return [][]float32{}, nil },
		"wrong dims": func(context.Context, []string) ([][]float32, error) { return [][]float32{{1, 2, 3}}, nil },
		"NaN": func(context.Context, []string) ([][]float32, error) {
			return [][]float32{{float32(math.NaN()), 1}}, nil
		},
		"infinity": func(context.Context, []string) ([][]float32, error) {
			return [][]float32{{float32(math.Inf(-1)), 1}}, nil
		},
		"nil vector set": func(context.Context, []string) ([][]float32, error) { return nil, nil },
	} {
		x, err := store.NewIndex(store.IndexConfig{Embedder: f, Dims: 2})
		require.NoError(t, err)
		_, err = x.EmbedQuery(t.Context(), "q")
		require.Error(t, err, name)
		_, err = x.EmbedValue(t.Context(), map[string]any{"a": "b"}, store.PutConfig{})
		require.Error(t, err, name)
		if name == "error" {
			require.ErrorIs(t, err, boom)
		}
	}
}

func TestCosineSimilarity(t *testing.T) {
	for _, tt := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{2, 0}, 1},
		{[]float32{1, 0}, []float32{0, 3}, 0},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		{[]float32{1, 1}, []float32{1, 0}, 1 / math.Sqrt2},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{[]float32{1, 0}, []float32{1, 0, 0}, 0},
		{nil, nil, 0},
	} {
		require.InDelta(t, tt.want, store.CosineSimilarity(tt.a, tt.b), 1e-12, "%v %v", tt.a, tt.b)
	}
}

func TestMemoryInvalidIndexFailsPutAndSearch(t *testing.T) {
	m := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: &recorder{}}))
	err := m.Put(t.Context(), []string{"a"}, "k", nil)
	require.ErrorIs(t, err, store.ErrInvalidOption)
	_, err = m.Search(t.Context(), nil, store.Query("q"))
	require.ErrorIs(t, err, store.ErrInvalidOption)
	got, err := m.Get(t.Context(), []string{"a"}, "k")
	require.NoError(t, err)
	require.Nil(t, got)
}

// TestMemoryPutEmbedsOutsideLock blocks one Put in its embedder: other
// calls proceed meanwhile, and the blocked Put lands once released.
func TestMemoryPutEmbedsOutsideLock(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	emb := embedFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		if texts[0] == "slow" {
			close(entered)
			<-release
		}
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = []float32{1, 0}
		}
		return out, nil
	})
	m := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: emb, Dims: 2, Fields: []string{"t"}}))
	done := make(chan error)
	go func() { done <- m.Put(context.Background(), []string{"a"}, "slow", map[string]any{"t": "slow"}) }()
	<-entered
	require.NoError(t, m.Put(t.Context(), []string{"a"}, "fast", map[string]any{"t": "fast"}))
	items, err := m.Search(t.Context(), nil, store.Query("q"))
	require.NoError(t, err)
	require.Len(t, items, 1, "the slow item is not written before it is embedded")
	close(release)
	require.NoError(t, <-done)
	items, err = m.Search(t.Context(), nil, store.Query("q"))
	require.NoError(t, err)
	require.Len(t, items, 2)
}

// randomEmbedder gives each text a pseudo-random vector seeded by its
// hash, of dims dimensions.
type randomEmbedder int

func (d randomEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0))
		out[i] = make([]float32, int(d))
		for j := range out[i] {
			out[i][j] = float32(rng.NormFloat64())
		}
	}
	return out, nil
}

// BenchmarkMemoryQuerySearch ranks 10,000 items of 256 dimensions.
func BenchmarkMemoryQuerySearch(b *testing.B) {
	const dims = 256
	m := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: randomEmbedder(dims), Dims: dims, Fields: []string{"t"}}))
	for i := range 10000 {
		require.NoError(b, m.Put(b.Context(), []string{"docs"}, strconv.Itoa(i), map[string]any{"t": strconv.Itoa(i)}))
	}
	b.ResetTimer()
	for b.Loop() {
		items, err := m.Search(b.Context(), []string{"docs"}, store.Query("q"), store.Limit(10))
		require.NoError(b, err)
		require.Len(b, items, 10)
	}
}

// TestMemoryKeepsItsOwnVectors uses an embedder that returns the same
// buffer on every call: the vectors a store keeps must not change with it.
func TestMemoryKeepsItsOwnVectors(t *testing.T) {
	var mu sync.Mutex
	buf := make([]float32, 2)
	emb := embedFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		mu.Lock()
		defer mu.Unlock()
		out := make([][]float32, len(texts))
		for i, text := range texts {
			buf[0], buf[1] = 0, 0
			if text == "x" {
				buf[0] = 1
			} else {
				buf[1] = 1
			}
			out[i] = buf
		}
		return out, nil
	})
	m := store.NewMemory(store.WithIndex(store.IndexConfig{Embedder: emb, Dims: 2, Fields: []string{"t"}}))
	require.NoError(t, m.Put(t.Context(), []string{"a"}, "x", map[string]any{"t": "x"}))
	require.NoError(t, m.Put(t.Context(), []string{"a"}, "y", map[string]any{"t": "y"}))
	items, err := m.Search(t.Context(), nil, store.Query("x"))
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, "x", items[0].Key)
	require.InDelta(t, 1, *items[0].Score, 1e-12)
	require.InDelta(t, 0, *items[1].Score, 1e-12)
}
