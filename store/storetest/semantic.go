package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/store"
)

// RunSemantic tests the semantic search of a [store.Store] (see
// [store.IndexConfig] and [store.Query]), one subtest per promise, as
// [Run] does for the rest of the contract.
//
// newStore is called once per subtest with the index configuration the
// subtest needs, or nil for a store without an index; it must return a
// new, empty store opened with it (store.WithIndex(*index) for
// [store.Memory], the backend's own WithIndex option otherwise), not
// shared with any other subtest, and release it with t.Cleanup. The
// configurations use a deterministic embedder of the suite's own: the
// vector of a text counts the words "apple", "banana", "cherry", "date"
// and "elder" in it, and texts containing "explode" fail to embed.
func RunSemantic(t *testing.T, newStore func(t *testing.T, index *store.IndexConfig) store.Store) {
	t.Helper()
	for _, c := range semanticCases {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("promise: %s", c.explanation)
				}
			})
			var index *store.IndexConfig
			if !c.noIndex {
				index = &store.IndexConfig{Embedder: fruitEmbedder{}, Dims: fruitDims, Fields: c.fields}
				if c.dims != 0 {
					index.Dims = c.dims
				}
			}
			s := newStore(t, index)
			e := &env{t: t, ctx: t.Context(), s: s}
			if cs, ok := s.(store.ClockSetter); ok {
				e.clock = &clock{now: start}
				cs.SetClock(e.clock.Now)
			} else if c.needsClock {
				t.Skip("the store does not implement store.ClockSetter; this subtest needs a clock the suite controls")
			}
			if sw, ok := s.(store.Sweeper); ok {
				e.sweeper = sw
			} else if c.needsSweeper {
				t.Skip("the store does not implement store.Sweeper")
			}
			c.run(e)
		})
	}
}

// errEmbed is the error the suite's embedder fails with, for texts
// containing "explode".
var errEmbed = errors.New("storetest: the text asked the embedder to explode")

// fruitWords are the dimensions of fruitEmbedder's vectors.
var fruitWords = []string{"apple", "banana", "cherry", "date", "elder"}

const fruitDims = 5

// fruitEmbedder counts fruit words: deterministic, offline, and simple
// enough that the tests can state exact scores.
type fruitEmbedder struct{}

func (fruitEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, fruitDims)
		for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if w == "explode" {
				return nil, errEmbed
			}
			for d, f := range fruitWords {
				if w == f {
					v[d]++
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

type semanticCase struct {
	name        string
	explanation string
	// fields are the index's Fields; nil for the default.
	fields []string
	// dims overrides the index's Dims when not 0.
	dims int
	// noIndex opens the store without an index.
	noIndex      bool
	needsClock   bool
	needsSweeper bool
	run          func(e *env)
}

var semanticCases = []semanticCase{
	{
		name:        "query-ranks-by-cosine-similarity",
		needsClock:  true,
		explanation: "Search with Query returns the items best first by the cosine similarity of their vectors to the query's, with Score set to it; items tied (here at 0) come most recently updated first; a Search without a query leaves Score nil",
		run: func(e *env) {
			ns := []string{"docs"}
			e.put(ns, "apple", obj(`{"text":"apple"}`))
			e.advance(time.Second)
			e.put(ns, "apple-banana", obj(`{"text":"apple banana"}`))
			e.advance(time.Second)
			e.put(ns, "banana", obj(`{"text":"banana"}`))
			e.advance(time.Second)
			e.put(ns, "cherry", obj(`{"text":"cherry"}`))
			e.advance(time.Second)
			e.put(ns, "apple3-banana", obj(`{"text":"apple apple apple banana"}`))
			got := e.search(ns, store.Query("apple"))
			e.requireRanked([]ranked{
				{"apple", 1}, {"apple3-banana", 3 / math.Sqrt(10)}, {"apple-banana", 1 / math.Sqrt2}, {"cherry", 0}, {"banana", 0},
			}, got)
			e.requireValue(obj(`{"text":"apple"}`), got[0].Value, "the best item")
			for _, it := range e.search(ns) {
				require.Nil(e.t, it.Score, "Search without a query: %s", it.Key)
			}
			for _, it := range e.search(ns, store.Query("")) {
				require.Nil(e.t, it.Score, "Query(\"\") is no query: %s", it.Key)
			}
		},
	},
	{
		name:        "query-ties-ordered-deterministically",
		needsClock:  true,
		explanation: "items with equal scores are ordered as a Search without a query orders them: most recently updated first, then by namespace and key, bytewise",
		run: func(e *env) {
			for _, id := range [][2]string{{"x", "b"}, {"x", "a"}, {"w", "c"}, {"x.y", "a"}} {
				e.put(strings.Split(id[0], "."), id[1], obj(`{"text":"date"}`))
			}
			want := []string{"w/c", "x/a", "x/b", "x.y/a"}
			require.Equal(e.t, want, e.ids(e.search(nil, store.Query("date"))))
			e.advance(time.Second)
			e.put([]string{"x"}, "b", obj(`{"text":"date"}`))
			require.Equal(e.t, []string{"x/b", "w/c", "x/a", "x.y/a"}, e.ids(e.search(nil, store.Query("date"))))
		},
	},
	{
		name:        "query-fields-and-paths",
		fields:      []string{"title", "meta.summary", "tags[*]", "chunks[-1].text"},
		explanation: "the index embeds the texts at its field paths (plain keys, dotted paths, [*] and [-1] array indexes), a non-string value as its JSON encoding; an item scores its best text; text outside the fields counts for nothing, and an item with none of the fields is not indexed",
		run: func(e *env) {
			ns := []string{"f"}
			e.put(ns, "title", obj(`{"title":"cherry","body":"apple apple"}`))
			e.put(ns, "summary", obj(`{"title":"date","meta":{"summary":"apple"}}`))
			e.put(ns, "tags", obj(`{"tags":["banana","apple",null,7]}`))
			e.put(ns, "last-chunk", obj(`{"chunks":[{"text":"banana"},{"text":"apple date"}]}`))
			e.put(ns, "first-chunk", obj(`{"chunks":[{"text":"apple"},{"text":"banana"}]}`))
			e.put(ns, "object-summary", obj(`{"meta":{"summary":{"k":"apple","n":1}}}`))
			e.put(ns, "none", obj(`{"body":"apple","meta":{"other":"apple"}}`))
			got := e.search(ns, store.Query("apple"), store.Limit(100))
			byKey := map[string]float64{}
			for _, it := range got {
				require.NotNil(e.t, it.Score, it.Key)
				byKey[it.Key] = *it.Score
			}
			require.NotContains(e.t, byKey, "none", "an item without any indexed field is not returned")
			want := map[string]float64{
				"title": 0, "summary": 1, "tags": 1, "last-chunk": 1 / math.Sqrt2, "first-chunk": 0, "object-summary": 1,
			}
			require.Len(e.t, byKey, len(want))
			for k, w := range want {
				require.InDelta(e.t, w, byKey[k], 1e-6, "score of %s", k)
			}
		},
	},
	{
		name:        "query-whole-value-by-default",
		explanation: "without Fields the index embeds the whole value as JSON, so a word anywhere in it counts",
		run: func(e *env) {
			ns := []string{"whole"}
			e.put(ns, "deep", obj(`{"a":{"b":["elder"]}}`))
			e.put(ns, "other", obj(`{"a":"cherry"}`))
			e.requireRanked([]ranked{{"deep", 1}, {"other", 0}}, e.search(ns, store.Query("elder")))
		},
	},
	{
		name:        "query-index-override-per-item",
		fields:      []string{"title"},
		explanation: "Put with IndexFields embeds those paths instead of the index's; NoIndex (or IndexFields()) leaves the item out of query searches, also when it replaces an indexed item, while Get and Search without a query still see it; an invalid path fails with store.ErrInvalidOption and stores nothing",
		run: func(e *env) {
			ns := []string{"o"}
			e.put(ns, "body", obj(`{"title":"banana","body":"apple"}`), store.IndexFields("body"))
			e.put(ns, "title", obj(`{"title":"apple","body":"banana"}`))
			e.put(ns, "skip", obj(`{"title":"apple"}`), store.NoIndex())
			e.put(ns, "skip2", obj(`{"title":"apple"}`), store.IndexFields())
			e.put(ns, "was-indexed", obj(`{"title":"apple"}`))
			require.Contains(e.t, e.ids(e.search(ns, store.Query("apple"))), "o/was-indexed")
			e.put(ns, "was-indexed", obj(`{"title":"apple"}`), store.NoIndex())

			got := e.search(ns, store.Query("apple"))
			require.ElementsMatch(e.t, []string{"o/body", "o/title"}, e.ids(got))
			for _, it := range got {
				require.InDelta(e.t, 1.0, *it.Score, 1e-6, it.Key)
			}
			require.Len(e.t, e.search(ns), 5, "a search without a query sees the unindexed items")
			require.NotNil(e.t, e.get(ns, "skip"))

			for _, path := range []string{"", "a..b", "a[", "a]", "[x]", "{a,b}", "a[0]b"} {
				err := e.s.Put(e.ctx, ns, "bad", obj(`{"title":"apple"}`), store.IndexFields(path))
				require.ErrorIs(e.t, err, store.ErrInvalidOption, "path %q", path)
			}
			require.Nil(e.t, e.get(ns, "bad"))
		},
	},
	{
		name:        "query-with-prefix-and-filter",
		explanation: "the namespace prefix and filters choose the candidates a query ranks",
		run: func(e *env) {
			e.put([]string{"u", "1"}, "a", obj(`{"text":"apple","kind":"fruit","n":1}`))
			e.put([]string{"u", "1"}, "b", obj(`{"text":"apple banana","kind":"fruit","n":2}`))
			e.put([]string{"u", "1"}, "c", obj(`{"text":"apple","kind":"tree","n":3}`))
			e.put([]string{"u", "2"}, "d", obj(`{"text":"apple","kind":"fruit","n":4}`))
			e.put([]string{"u1"}, "e", obj(`{"text":"apple","kind":"fruit","n":5}`))
			got := e.search([]string{"u", "1"}, store.Query("apple"), store.Filter(map[string]any{"kind": "fruit"}))
			e.requireRanked([]ranked{{"a", 1}, {"b", 1 / math.Sqrt2}}, got)
			got = e.search([]string{"u"}, store.Query("apple"), store.Filter(map[string]any{"n": map[string]any{"$gte": 2}}))
			require.ElementsMatch(e.t, []string{"u.1/b", "u.1/c", "u.2/d"}, e.ids(got))
			require.Equal(e.t, "u.1/b", e.ids(got)[2])
		},
	},
	{
		name:        "query-limit-offset",
		explanation: "Offset and Limit page the ranked results: Limit(2) Offset(1) returns the 2nd and 3rd best; an offset past the end returns nothing; the default limit is 10",
		run: func(e *env) {
			ns := []string{"p"}
			// key i has i apples and 5 bananas: more apples, higher score.
			for i := range 12 {
				e.put(ns, fmt.Sprintf("k%02d", i), map[string]any{"text": strings.Repeat("apple ", i) + strings.Repeat("banana ", 5)})
			}
			all := e.search(ns, store.Query("apple"), store.Limit(100))
			require.Len(e.t, all, 12)
			for i, it := range all {
				require.Equal(e.t, fmt.Sprintf("k%02d", 11-i), it.Key)
			}
			require.Equal(e.t, e.ids(all[1:3]), e.ids(e.search(ns, store.Query("apple"), store.Limit(2), store.Offset(1))))
			require.Equal(e.t, e.ids(all[10:]), e.ids(e.search(ns, store.Query("apple"), store.Offset(10))))
			require.Equal(e.t, e.ids(all[1:]), e.ids(e.search(ns, store.Query("apple"), store.Limit(math.MaxInt), store.Offset(1))), "a huge limit")
			require.Empty(e.t, e.search(ns, store.Query("apple"), store.Offset(12)))
			require.Empty(e.t, e.search(ns, store.Query("apple"), store.Limit(0)))
			require.Equal(e.t, e.ids(all[:10]), e.ids(e.search(ns, store.Query("apple"))))
		},
	},
	{
		name:        "query-overwrite-and-delete-replace-vectors",
		explanation: "overwriting an item replaces its vectors (the old text no longer scores), deleting it removes them (a query no longer returns it), and an item put again after a delete has only its new vectors",
		run: func(e *env) {
			ns := []string{"ow"}
			e.put(ns, "k", obj(`{"text":"apple"}`))
			e.put(ns, "other", obj(`{"text":"banana"}`))
			e.requireRanked([]ranked{{"k", 1}, {"other", 0}}, e.search(ns, store.Query("apple")))
			e.put(ns, "k", obj(`{"text":"cherry"}`))
			got := e.search(ns, store.Query("apple"))
			require.ElementsMatch(e.t, []string{"ow/k", "ow/other"}, e.ids(got))
			for _, it := range got {
				require.InDelta(e.t, 0, *it.Score, 1e-6, "%s keeps no vector of its old text", it.Key)
			}
			e.requireRanked([]ranked{{"k", 1}}, e.search(ns, store.Query("cherry"), store.Limit(1)))
			require.NoError(e.t, e.s.Delete(e.ctx, ns, "k"))
			require.Equal(e.t, []string{"ow/other"}, e.ids(e.search(ns, store.Query("cherry"))))
			e.put(ns, "k", obj(`{"text":"date"}`))
			e.requireRanked([]ranked{{"k", 0}, {"other", 0}}, e.search(ns, store.Query("cherry")), "after the delete, no cherry vector is left")
		},
	},
	{
		name:         "query-ttl",
		needsClock:   true,
		needsSweeper: true,
		explanation:  "a query search does not return expired items, refreshes the TTLs of the items it returns (unless RefreshTTL(false)), and after a sweep finds the items left",
		run: func(e *env) {
			ns := []string{"ttl"}
			e.put(ns, "short", obj(`{"text":"apple"}`), store.WithTTL(time.Minute))
			e.put(ns, "long", obj(`{"text":"apple banana"}`), store.WithTTL(time.Hour))
			e.advance(30 * time.Second)
			got := e.search(ns, store.Query("apple"), store.Limit(1))
			e.requireRanked([]ranked{{"short", 1}}, got)
			require.True(e.t, got[0].ExpiresAt.Equal(e.clock.Now().Add(time.Minute)), "refreshed: %v", got[0].ExpiresAt)
			e.advance(59 * time.Second)
			got = e.search(ns, store.Query("apple"), store.RefreshTTL(false))
			require.Len(e.t, got, 2)
			e.advance(time.Second)
			e.requireRanked([]ranked{{"long", 1 / math.Sqrt2}}, e.search(ns, store.Query("apple")))
			require.Equal(e.t, 1, e.sweep())
			e.requireRanked([]ranked{{"long", 1 / math.Sqrt2}}, e.search(ns, store.Query("apple")))
			e.put(ns, "short", obj(`{"text":"cherry"}`))
			e.requireRanked([]ranked{{"long", 1 / math.Sqrt2}, {"short", 0}}, e.search(ns, store.Query("apple")))
		},
	},
	{
		name:        "embedder-error-loses-nothing",
		explanation: "a Put whose texts fail to embed returns an error wrapping the embedder's and changes nothing (the old value and its vectors stay, a new key stays absent); a query that fails to embed makes Search fail with it",
		run: func(e *env) {
			ns := []string{"err"}
			e.put(ns, "k", obj(`{"text":"apple"}`))
			err := e.s.Put(e.ctx, ns, "k", obj(`{"text":"explode"}`))
			require.ErrorIs(e.t, err, errEmbed)
			e.requireValue(obj(`{"text":"apple"}`), e.get(ns, "k").Value, "the old value")
			e.requireRanked([]ranked{{"k", 1}}, e.search(ns, store.Query("apple")))
			require.ErrorIs(e.t, e.s.Put(e.ctx, ns, "new", obj(`{"text":"explode"}`)), errEmbed)
			require.Nil(e.t, e.get(ns, "new"))
			require.Equal(e.t, []string{"err/k"}, e.ids(e.search(ns)))
			e.put(ns, "unindexed", obj(`{"text":"explode"}`), store.NoIndex())
			_, err = e.s.Search(e.ctx, ns, store.Query("explode"))
			require.ErrorIs(e.t, err, errEmbed)
		},
	},
	{
		name:        "embedder-dimension-mismatch-fails",
		dims:        fruitDims + 1,
		explanation: "vectors of another dimension than the index's Dims make Put and Search fail, and Put stores nothing",
		run: func(e *env) {
			ns := []string{"dims"}
			require.Error(e.t, e.s.Put(e.ctx, ns, "k", obj(`{"text":"apple"}`)))
			require.Nil(e.t, e.get(ns, "k"))
			e.put(ns, "skip", obj(`{"text":"apple"}`), store.NoIndex())
			_, err := e.s.Search(e.ctx, ns, store.Query("apple"))
			require.Error(e.t, err)
		},
	},
	{
		name:        "query-without-index-fails",
		noIndex:     true,
		explanation: "on a store without an index, Search with a Query fails with store.ErrNoIndex (LangGraph ignores the query), while IndexFields and NoIndex are accepted and ignored by Put",
		run: func(e *env) {
			ns := []string{"plain"}
			e.put(ns, "a", obj(`{"text":"apple"}`), store.IndexFields("text"))
			e.put(ns, "b", obj(`{"text":"apple"}`), store.NoIndex())
			_, err := e.s.Search(e.ctx, ns, store.Query("apple"))
			require.ErrorIs(e.t, err, store.ErrNoIndex)
			require.Len(e.t, e.search(ns), 2)
		},
	},
	{
		name:        "query-concurrent-puts-and-searches",
		explanation: "goroutines putting, overwriting, deleting and query-searching at once never see an item with a score that does not belong to its value (no stale or missing vectors), and every write lands",
		run: func(e *env) {
			const writers, steps = 6, 8
			texts := []string{"apple", "banana", "apple banana", "cherry"}
			var wg sync.WaitGroup
			errs := make([]error, 2*writers)
			for w := range writers {
				wg.Go(func() {
					ns := []string{"cq", fmt.Sprint(w)}
					for i := range steps {
						text := texts[(w+i)%len(texts)]
						if err := e.s.Put(e.ctx, ns, fmt.Sprint(i), map[string]any{"text": text}); err != nil {
							errs[w] = err
							return
						}
						if err := e.s.Put(e.ctx, []string{"cq", "hot"}, "k", map[string]any{"text": text}); err != nil {
							errs[w] = err
							return
						}
						if err := e.s.Put(e.ctx, ns, "tmp", map[string]any{"text": "apple"}); err != nil {
							errs[w] = err
							return
						}
						if err := e.s.Delete(e.ctx, ns, "tmp"); err != nil {
							errs[w] = err
							return
						}
					}
				})
				wg.Go(func() {
					for range steps {
						items, err := e.s.Search(e.ctx, []string{"cq"}, store.Query("apple"), store.Limit(1000))
						if err == nil {
							err = checkScores("apple", items)
						}
						if err != nil {
							errs[writers+w] = err
							return
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(e.t, err)
			}
			items := e.search([]string{"cq"}, store.Query("apple"), store.Limit(1000))
			require.NoError(e.t, checkScores("apple", items))
			require.Len(e.t, items, writers*steps+1)
		},
	},
}

// checkScores returns an error unless each item's Score is the similarity
// of query to its value's text.
func checkScores(query string, items []store.Item) error {
	q, _ := fruitEmbedder{}.Embed(context.Background(), []string{query})
	for _, it := range items {
		text, _ := it.Value["text"].(string)
		v, _ := fruitEmbedder{}.Embed(context.Background(), []string{text})
		want := store.CosineSimilarity(q[0], v[0])
		if it.Score == nil || math.Abs(*it.Score-want) > 1e-6 {
			return fmt.Errorf("item %q in %q with text %q: score %v, want %v", it.Key, it.Namespace, text, it.Score, want)
		}
	}
	return nil
}

// ranked is an expected result of a query search: a key and its score.
type ranked struct {
	key   string
	score float64
}

// requireRanked checks the keys of a query search's results, in order,
// and their scores.
func (e *env) requireRanked(want []ranked, got []store.Item, msgAndArgs ...any) {
	e.t.Helper()
	var wantKeys, gotKeys []string
	for _, w := range want {
		wantKeys = append(wantKeys, w.key)
	}
	for _, it := range got {
		gotKeys = append(gotKeys, it.Key)
	}
	require.Equal(e.t, wantKeys, gotKeys, msgAndArgs...)
	for i, w := range want {
		require.NotNil(e.t, got[i].Score, "score of %s", w.key)
		require.InDelta(e.t, w.score, *got[i].Score, 1e-6, "score of %s", w.key)
	}
}
