package codeindex

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// A Hit is one chunk returned by [Index.Search].
type Hit struct {
	Path      string  `json:"path"`       // slash-separated, relative to the indexed root
	StartLine int     `json:"start_line"` // 1-based
	EndLine   int     `json:"end_line"`   // 1-based, inclusive
	Symbol    string  `json:"symbol"`     // empty for line windows
	Kind      Kind    `json:"kind"`
	Score     float64 `json:"score"` // BM25 score, cosine similarity or fused RRF score, by mode
}

// Search returns the chunks that best match query, best first: by BM25 over
// the code-aware analyzer, by cosine similarity of embeddings, or (the
// default) by reciprocal rank fusion of both. A query with no search terms
// has no hits.
func (ix *Index) Search(ctx context.Context, q string, opts ...SearchOption) ([]Hit, error) {
	sc := defaultSearchConfig()
	for _, o := range opts {
		o(&sc)
	}
	if err := sc.validate(); err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	if len(Tokens(q)) == 0 {
		return nil, nil
	}
	var ranked []scored
	var err error
	switch sc.mode {
	case BM25:
		ranked, err = ix.searchKeyword(ctx, q, sc.limit)
	case Vector:
		ranked, err = ix.searchVector(ctx, q, sc.limit)
	case Hybrid:
		n := max(sc.limit, candidates)
		var kw, vec []scored
		if kw, err = ix.searchKeyword(ctx, q, n); err != nil {
			return nil, err
		}
		if vec, err = ix.searchVector(ctx, q, n); err != nil {
			return nil, err
		}
		ranked = fuse(sc, kw, vec)
	}
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, min(len(ranked), sc.limit))
	for _, r := range ranked {
		if len(hits) == sc.limit {
			break
		}
		if h, ok := ix.hit(r); ok {
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// fuse merges rankings by weighted reciprocal rank fusion: a chunk at 1-based
// rank r of a ranking of weight w scores w/(k+r), summed over rankings.
func fuse(sc searchConfig, kw, vec []scored) []scored {
	sum := map[string]float64{}
	for _, l := range []struct {
		w    float64
		hits []scored
	}{{sc.bm25Weight, kw}, {sc.vecWeight, vec}} {
		for r, h := range l.hits {
			sum[h.id] += l.w / (sc.k + float64(r+1))
		}
	}
	out := make([]scored, 0, len(sum))
	for id, s := range sum {
		out = append(out, scored{id: id, score: s})
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

func (ix *Index) searchKeyword(ctx context.Context, q string, n int) ([]scored, error) {
	field := func(name string, boost float64) query.Query {
		m := bleve.NewMatchQuery(q)
		m.SetField(name)
		m.SetBoost(boost)
		return m
	}
	dq := bleve.NewDisjunctionQuery(field("content", boostContent), field("symbol", boostSymbol), field("path", boostPath))
	req := bleve.NewSearchRequestOptions(dq, n, 0, false)
	res, err := ix.kw.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("codeindex: keyword search: %w", err)
	}
	out := make([]scored, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = scored{id: h.ID, score: h.Score}
	}
	return out, nil
}

func (ix *Index) searchVector(ctx context.Context, q string, n int) ([]scored, error) {
	vec, err := ix.vectors()
	if err != nil {
		return nil, err
	}
	qv, err := ix.cfg.embedder.Embed(ctx, []string{q})
	if err != nil {
		return nil, fmt.Errorf("codeindex: embed query: %w", err)
	}
	if len(qv) != 1 {
		return nil, fmt.Errorf("codeindex: embed query: embedder returned %d vectors for 1 text", len(qv))
	}
	out, err := vec.search(qv[0], n)
	if err != nil {
		return nil, fmt.Errorf("codeindex: vector search: %w", err)
	}
	return out, nil
}

// hit resolves a chunk ID ("path#n") through the manifest.
func (ix *Index) hit(s scored) (Hit, bool) {
	i := strings.LastIndexByte(s.id, '#')
	if i < 0 {
		return Hit{}, false
	}
	n, err := strconv.Atoi(s.id[i+1:])
	e := ix.man.Files[s.id[:i]]
	if err != nil || e == nil || n < 0 || n >= len(e.Chunks) {
		return Hit{}, false
	}
	c := e.Chunks[n]
	return Hit{Path: s.id[:i], StartLine: c.StartLine, EndLine: c.EndLine, Symbol: c.Symbol, Kind: c.Kind, Score: s.score}, true
}
