package codeindex

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// A Hit is one chunk returned by [Index.Search].
type Hit struct {
	Path      string `json:"path"`       // slash-separated, relative to the indexed root
	StartLine int    `json:"start_line"` // 1-based
	EndLine   int    `json:"end_line"`   // 1-based, inclusive
	Symbol    string `json:"symbol"`     // empty for line windows
	Kind      Kind   `json:"kind"`
	// Score is the chunk's BM25 score, cosine similarity or fused score
	// (see [Fusion]), by mode; with the file ranking (see
	// [WithFileWeight]), over the best chunk's plus the file's share. It
	// need not fall down the hits: their order may also spread the first
	// hits over files and put test files' chunks last (see [Index.Search]).
	Score float64 `json:"score"`
}

// Search returns the chunks that best match query, best first: by BM25 over
// the code-aware analyzer, by cosine similarity of embeddings, or (the
// default) by a fusion of both ([WithFusion]). The keyword and hybrid
// rankings also weigh the file around each chunk, ranked by its whole
// text ([WithFileWeight]). Unless [WithTestsLast] is off or the query
// mentions tests, chunks of test files come after all others, and with
// the file ranking no file has more than three of the first five hits: a
// hit may thus follow one of lower score. A query with no search terms has no hits.
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
	demote := sc.testsLast && !mentionsTests(q)
	// Demoting test chunks needs a pool deeper than the limit, or the
	// non-test chunks ranked just below it would be missing.
	pool := sc.limit
	if demote || sc.mode == Hybrid {
		pool = max(sc.limit, candidates)
	}
	// The vector ranking of a hybrid search needs nothing of the others:
	// it runs beside all of them from the start, the term model's first
	// loading (see termModel) and the file ranking included. Whatever
	// returns waits for it, as it reads the index under ix.mu.
	var vec []scored
	var vecErr error
	vecDone := make(chan struct{})
	if sc.mode == Hybrid {
		go func() {
			defer close(vecDone)
			vec, vecErr = ix.searchVector(ctx, q, pool)
		}()
		defer func() { <-vecDone }()
	}
	// The file ranking first (see WithFileWeight): the keyword ranking
	// looks into its files too, and it weighs every ranking's chunks.
	// The keyword query's expansion (see WithExpansion) beside the file
	// ranking, which does not need it.
	var kq keywordQ
	kqDone := make(chan struct{})
	if sc.mode != Vector {
		go func() {
			defer close(kqDone)
			kq = ix.keywordQueryOf(q, sc.expansion)
		}()
	} else {
		close(kqDone)
	}
	// The query's latent vector and terms, once for both latent rankings
	// and the coverage.
	var lq *latentQuery
	if sc.mode != Vector && (sc.fileWeight > 0 && (sc.latentFileWeight > 0 || sc.commentWeight > 0) || sc.latentChunkWeight > 0 || sc.coverageWeight > 0) {
		lq = ix.latentQueryOf(q)
	}
	var files []scored
	if sc.fileWeight > 0 && sc.mode != Vector {
		var err error
		if files, err = ix.searchFiles(ctx, q, fileCandidates); err != nil {
			<-kqDone
			return nil, err
		}
		if w := sc.commentWeight * lq.coverageRamp(); w > 0 {
			var notes []scored
			if notes, err = ix.searchComments(ctx, q, fileCandidates); err != nil {
				<-kqDone
				return nil, err
			}
			files = fuseComments(files, notes, w, fileCandidates)
		}
		if sc.latentFileWeight > 0 {
			files = ix.latentFiles(lq, files, sc.latentFileWeight, fileCandidates)
		}
	}
	<-kqDone
	// The best files' chunks by the latent chunk ranking (see
	// WithFileChunks): for a long question (the coverage's full ramp),
	// when that ranking counts.
	memo := termMemo{} // the terms of the chunks' words, for fileChunks and rerankChunks
	var fc fileChunkConfig
	if sc.fileChunks && sc.latentChunkWeight > 0 && lq.coverageRamp() >= 1 {
		fc = fileChunkConfig{lq: lq, code: sc.chunkCode, memo: memo}
		if sc.tunedChunks {
			fc.lq = lq.tuned()
		}
	}
	var ranked []scored
	var err error
	switch sc.mode {
	case BM25:
		ranked, err = ix.keywordRanking(ctx, kq, files, sc.topFiles, pool, fc)
	case Vector:
		ranked, err = ix.searchVector(ctx, q, pool)
	case Hybrid:
		// The two rankings are independent: the vector one runs beside
		// (see above).
		var kw []scored
		kw, err = ix.keywordRanking(ctx, kq, files, sc.topFiles, pool, fc)
		<-vecDone
		if err == nil {
			err = vecErr
		}
		if err == nil {
			ranked = fuse(sc, kw, vec)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(files) > 0 {
		ranked = filePrior(ranked, files, sc.fileWeight)
	}
	if sc.mode != Vector && (sc.latentChunkWeight > 0 || sc.coverageWeight > 0) {
		lqc := lq // the latent chunk ranking's: in the tuned vectors' space with WithTunedChunks
		if sc.tunedChunks && lq != nil {
			lqc = lq.tuned()
		}
		var ms *maxSimQuery // the latent chunk ranking's late interaction, through the LSA vectors (see WithMaxSim)
		if sc.maxSim && sc.latentChunkWeight > 0 {
			ms = newMaxSim(lq)
		}
		ranked = ix.rerankChunks(lqc, ms, ranked, rerankConfig{latent: sc.latentChunkWeight, coverage: sc.coverageWeight, code: sc.chunkCode, memo: memo}, latentChunkCandidates)
	}
	if demote {
		ranked = testsLast(ranked)
	}
	if len(files) > 0 {
		ranked = spreadTop(ranked, topSpread, perFileTop, demote)
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

// testWords are the query terms that ask for tests, turning off
// [WithTestsLast] for that query.
var testWords = []string{"test", "tests", "testing", "benchmark", "benchmarks"}

// mentionsTests reports whether the query asks for tests.
func mentionsTests(q string) bool {
	return slices.ContainsFunc(Tokens(q), func(t string) bool { return slices.Contains(testWords, t) })
}

// testsLast moves the chunks of test files after all others, keeping the
// order within each group.
func testsLast(r []scored) []scored {
	out := make([]scored, 0, len(r))
	for _, pass := range []bool{false, true} {
		for _, s := range r {
			if isTestFile(chunkPath(s.id)) == pass {
				out = append(out, s)
			}
		}
	}
	return out
}

// chunkPath returns the file path of a chunk ID ("path#n").
func chunkPath(id string) string {
	if i := strings.LastIndexByte(id, '#'); i >= 0 {
		return id[:i]
	}
	return id
}

// isTestFile reports whether a slash-separated path names a test file by
// the usual conventions: Go's name_test.go, Python's test_name.py and
// name_test.py, JavaScript's and TypeScript's name.test.ext and
// name.spec.ext, and any file under a tests or __tests__ folder.
func isTestFile(p string) bool {
	base := path.Base(p)
	switch {
	case strings.HasSuffix(base, "_test.go"),
		strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")),
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec."):
		return true
	}
	return slices.ContainsFunc(strings.Split(path.Dir(p), "/"), func(d string) bool { return d == "tests" || d == "__tests__" })
}

// fuse merges the BM25 and vector rankings by sc.fusion, best first, ties
// broken by chunk ID.
func fuse(sc searchConfig, kw, vec []scored) []scored {
	sum := map[string]float64{}
	found := map[string]float64{} // FuseMNZ: how many rankings of non-zero weight returned the chunk
	for _, l := range []struct {
		w    float64
		hits []scored
	}{{sc.bm25Weight, kw}, {sc.vecWeight, vec}} {
		if sc.fusion == FuseMNZ && l.w > 0 {
			for _, h := range l.hits {
				found[h.id]++
			}
		}
		switch sc.fusion {
		case FuseRRF:
			// A chunk at 1-based rank r scores w/(k+r).
			for r, h := range l.hits {
				sum[h.id] += l.w / (sc.k + float64(r+1))
			}
		default:
			// Each score min-max normalised over the ranking's
			// candidates: the best scores w, the worst 0, and so does a
			// chunk missing from the ranking.
			if len(l.hits) == 0 {
				continue
			}
			lo, hi := l.hits[0].score, l.hits[0].score
			for _, h := range l.hits {
				lo, hi = min(lo, h.score), max(hi, h.score)
			}
			for _, h := range l.hits {
				norm := 1.0
				if hi > lo {
					norm = (h.score - lo) / (hi - lo)
				}
				sum[h.id] += l.w * norm
			}
		}
	}
	if sc.fusion == FuseMNZ {
		for id := range sum {
			sum[id] *= found[id]
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

// stopwords are English words too common in code comments and questions
// to tell chunks apart: a question's keyword query leaves them out (they
// stay in the index), which spares BM25 the longest posting lists at
// almost no cost to the ranking, where their weight is near zero.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"does": true, "do": true, "for": true, "from": true, "how": true, "i": true, "in": true, "is": true,
	"it": true, "its": true, "of": true, "on": true, "or": true, "that": true, "the": true, "this": true,
	"to": true, "what": true, "when": true, "where": true, "which": true, "who": true, "why": true,
	"with": true, "was": true, "were": true, "will": true, "can": true, "there": true, "if": true,
}

// keywordText is q without its stop words (q itself when nothing else
// is left).
func keywordText(q string) string {
	words := strings.Fields(q)
	kept := words[:0:0]
	for _, w := range words {
		if !stopwords[strings.ToLower(strings.Trim(w, "?.,!;:\"'()"))] {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return q
	}
	return strings.Join(kept, " ")
}

// A keywordQ is a keyword query: the question's text and the terms the
// term model adds to it (see WithExpansion), with their weight.
type keywordQ struct {
	text      string
	expansion []string
	weight    float64
}

// keywordQueryOf is the keyword query of q, expanded by the index's term
// model with weight w (none when w is 0 or there is no model).
func (ix *Index) keywordQueryOf(q string, w float64) keywordQ {
	kq := keywordQ{text: keywordText(q)}
	if w > 0 {
		if m := ix.termModel(); m != nil {
			kq.expansion, kq.weight = m.expand(kq.text), w
		}
	}
	return kq
}

// query is the keyword query of the chunks for kq (stop words left out):
// a match in any of the chunk fields, each with its boost, and of the
// expansion terms in the content, head and symbol fields, each with its
// boost times their weight.
func (kq keywordQ) query() query.Query {
	field := func(text, name string, boost float64) query.Query {
		m := bleve.NewMatchQuery(text)
		m.SetField(name)
		m.SetBoost(boost)
		return m
	}
	dq := bleve.NewDisjunctionQuery(field(kq.text, "content", boostContent), field(kq.text, "head", boostHead), field(kq.text, "symbol", boostSymbol), field(kq.text, "path", boostPath))
	if len(kq.expansion) > 0 {
		x := strings.Join(kq.expansion, " ")
		dq.AddQuery(field(x, "content", boostContent*kq.weight), field(x, "head", boostHead*kq.weight), field(x, "symbol", boostSymbol*kq.weight))
	}
	return dq
}

func (ix *Index) searchKeyword(ctx context.Context, kq keywordQ, n int) ([]scored, error) {
	stats, err := ix.bm25Stats(ctx)
	if err != nil {
		return nil, err
	}
	return ix.bm25(ctx, kq.query(), stats, n)
}

// keywordRanking is the keyword ranking of the chunks for q: the n best
// chunks of the whole index and, when files are given, the n best of the
// chunks of those files, which a query over the whole index may rank
// below its first n, and the best chunk of each of the first top files
// that has none among them (see WithTopFiles), and with fc's query, the
// chunks of the first files that fileChunks adds (see WithFileChunks).
//
// Each keyword query scans the postings of all the query's terms over
// the whole index, filtered or not (a filter is applied to the matches,
// see searchKeywordIn), and the scan is most of a search's time: the
// files' chunks are asked for once, all their matches (see fileMatches),
// beside the whole index's best, and the three lists are cut from them.
func (ix *Index) keywordRanking(ctx context.Context, kq keywordQ, files []scored, top, n int, fc fileChunkConfig) ([]scored, error) {
	if len(files) == 0 {
		return ix.searchKeyword(ctx, kq, n)
	}
	var kw []scored
	var kwErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		kw, kwErr = ix.searchKeyword(ctx, kq, n)
	}()
	all, err := ix.fileMatches(ctx, kq, files)
	<-done
	if kwErr != nil {
		return nil, kwErr
	}
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(kw))
	for _, s := range kw {
		seen[s.id] = true
	}
	for _, s := range all[:min(n, len(all))] { // the n best of the files' chunks
		if !seen[s.id] {
			seen[s.id] = true
			kw = append(kw, s)
		}
	}
	if top > 0 {
		best := bestChunks(all, files[:min(top, len(files))], seen)
		kw = append(kw, best...)
		for _, s := range best {
			seen[s.id] = true
		}
	}
	if fc.lq != nil {
		kw = append(kw, ix.fileChunks(all, fc, files[:min(fileChunkFiles, len(files))], seen, fileChunksPer)...)
	}
	slices.SortFunc(kw, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return kw, nil
}

// fileMatches returns every chunk of files that matches kq, best first
// (ties by chunk ID), scored as searchKeyword scores it: a filter does
// not change a match's score, so any of files' lists cut from it is the
// one searchKeywordIn would return for those files alone.
func (ix *Index) fileMatches(ctx context.Context, kq keywordQ, files []scored) ([]scored, error) {
	chunks := 0
	for _, f := range files {
		if e := ix.man.Files[f.id]; e != nil {
			chunks += len(e.Chunks)
		}
	}
	if chunks == 0 {
		return nil, nil
	}
	return ix.searchKeywordIn(ctx, kq, files, chunks)
}

// bestChunks returns, for each of files none of whose chunks is in seen
// (chunk IDs), its chunk of best keyword score among all (the matches of
// the files' chunks, best first; see fileMatches), if any matches.
func bestChunks(all, files []scored, seen map[string]bool) []scored {
	has := make(map[string]bool, len(seen))
	for id := range seen {
		has[chunkPath(id)] = true
	}
	missing := map[string]bool{}
	for _, f := range files {
		if !has[f.id] {
			missing[f.id] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	// The first of each file is its best.
	var out []scored
	for _, s := range all {
		if p := chunkPath(s.id); missing[p] {
			delete(missing, p)
			out = append(out, s)
		}
	}
	return out
}

// filePrior adds to the score of each chunk of ranked, over the best
// chunk's, weight times the score of its file among files (the file
// ranking; 0 for a file not in it) over the best file's, and sorts ranked
// again, best first, ties by chunk ID. A chunk's own match and that of
// the file around it then both count: the definition that matches best
// within the file that matches best comes first.
func filePrior(ranked, files []scored, weight float64) []scored {
	if len(ranked) == 0 {
		return ranked
	}
	fileScore := make(map[string]float64, len(files))
	var bestFile float64
	for _, f := range files {
		fileScore[f.id] = f.score
		bestFile = max(bestFile, f.score)
	}
	var best float64
	for _, r := range ranked {
		best = max(best, r.score)
	}
	out := make([]scored, len(ranked))
	for i, r := range ranked {
		s := 0.0
		if best > 0 {
			s = r.score / best
		}
		if bestFile > 0 {
			s += weight * fileScore[chunkPath(r.id)] / bestFile
		}
		out[i] = scored{id: r.id, score: s}
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return out
}

// topSpread and perFileTop bound how many of the first hits of a search
// with the file ranking come from one file: at most perFileTop of the
// first topSpread. The file's share lifts all the chunks of the best file,
// and the first hits would otherwise be that file's alone, down to its
// package clause, hiding the second file a question needs (the checkout
// and the coupon rule it calls): chunks beyond perFileTop wait until
// topSpread hits have been placed, and then come first.
const (
	topSpread  = 5
	perFileTop = 3
)

// spreadTop returns r with at most per chunks of one file among its
// first top, the others in their order (see topSpread). With testsLast,
// r has its test chunks last, and none of them passes a waiting chunk.
func spreadTop(r []scored, top, per int, testsLast bool) []scored {
	out := make([]scored, 0, len(r))
	var waiting []scored
	n := map[string]int{}
	for i, s := range r {
		p := chunkPath(s.id)
		if len(out) == top || testsLast && len(waiting) > 0 && isTestFile(p) {
			out = append(out, waiting...)
			return append(out, r[i:]...)
		}
		if n[p] == per {
			waiting = append(waiting, s)
			continue
		}
		n[p]++
		out = append(out, s)
	}
	return append(out, waiting...)
}

// searchKeywordIn is searchKeyword over the chunks of files alone.
func (ix *Index) searchKeywordIn(ctx context.Context, kq keywordQ, files []scored, n int) ([]scored, error) {
	var ids []string
	for _, f := range files {
		if e := ix.man.Files[f.id]; e != nil {
			for j := range e.Chunks {
				ids = append(ids, chunkID(f.id, j))
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	stats, err := ix.bm25Stats(ctx)
	if err != nil {
		return nil, err
	}
	// A filter, not a conjunction: a conjunction would add the ID
	// query's constant score to every chunk's, which then outscored the
	// same chunk found by searchKeyword.
	bq := bleve.NewBooleanQuery()
	bq.AddMust(kq.query())
	bq.AddFilter(bleve.NewDocIDQuery(ids))
	return ix.bm25(ctx, bq, stats, n)
}

// searchFiles ranks the files by the BM25 score of their documents (see
// fileText) for q: at most n, best first, each scored by its path (the
// file's key in the manifest).
func (ix *Index) searchFiles(ctx context.Context, q string, n int) ([]scored, error) {
	m := bleve.NewMatchQuery(keywordText(q))
	m.SetField(fileField)
	out, err := ix.bm25(ctx, m, ix.fileStats(), n)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].id = chunkPath(out[i].id)
	}
	return out, nil
}

// searchComments ranks the files by the BM25 score of their comment texts
// (see commentText) for q: at most n, best first, each scored by its path.
func (ix *Index) searchComments(ctx context.Context, q string, n int) ([]scored, error) {
	m := bleve.NewMatchQuery(keywordText(q))
	m.SetField(commentField)
	out, err := ix.bm25(ctx, m, ix.commentStats(), n)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].id = chunkPath(out[i].id)
	}
	return out, nil
}

// fuseComments returns the file ranking files (best first) fused with the
// comment ranking notes (best first; see searchComments): each file
// scores its score over the best file's plus weight times its comment
// score over the best comment score, among the files of either ranking,
// the n best, best first, ties by path. Scores are scaled back by the
// best file's score, so that the latent file ranking after it sees the
// scale it had. It returns files unchanged when notes is empty or weight
// is 0.
func fuseComments(files, notes []scored, weight float64, n int) []scored {
	if len(notes) == 0 || weight <= 0 || notes[0].score <= 0 {
		return files
	}
	return fuseScaled(files, notes, notes[0].score, weight, n)
}

// fuseScaled returns the n best, best first (ties by path), of the files
// of either ranking: each scores its file score over the best file's plus
// weight times its other score over best, scaled back by the best file's
// score (1 without files).
func fuseScaled(files, other []scored, best, weight float64, n int) []scored {
	scale := 1.0
	if len(files) > 0 && files[0].score > 0 {
		scale = files[0].score
	}
	score := make(map[string]float64, len(files)+len(other))
	for _, f := range files {
		score[f.id] += f.score / scale
	}
	for _, o := range other {
		score[o.id] += weight * o.score / best
	}
	out := make([]scored, 0, len(score))
	for id, s := range score {
		out = append(out, scored{id: id, score: s * scale})
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return out[:min(n, len(out))]
}

// bm25 returns the n best documents of the keyword index for kq, scored by
// BM25 with the collection statistics stats, ties ordered by ID.
func (ix *Index) bm25(ctx context.Context, kq query.Query, stats *search.BM25Stats, n int) ([]scored, error) {
	// Equal scores are ordered by chunk ID: otherwise their order, and
	// which of them make the cut at n, follows the index's segments and
	// varies. Sorting by ID in bleve costs a stored-field lookup for every
	// matching chunk, a quarter of the query's time, so the top n+tieSlack
	// are asked by score alone and ordered here; only when chunks tied with
	// the n-th may have been left out is the query asked again, sorted by ID.
	top := func(byID bool) (*bleve.SearchResult, error) {
		size := n + tieSlack
		if byID {
			size = n
		}
		req := bleve.NewSearchRequestOptions(kq, size, 0, false)
		if byID {
			req.SortBy([]string{"-_score", "_id"})
		}
		req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: stats}
		res, err := ix.kw.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("codeindex: keyword search: %w", err)
		}
		return res, nil
	}
	res, err := top(false)
	if err != nil {
		return nil, err
	}
	if !cutIsComplete(res, n) {
		if res, err = top(true); err != nil {
			return nil, err
		}
	}
	out := make([]scored, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = scored{id: h.ID, score: h.Score}
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	out = out[:min(n, len(out))]
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

// tieSlack is how many hits beyond the n asked for a keyword search fetches,
// so that chunks tied in score with the n-th are all among them.
const tieSlack = 10

// cutIsComplete reports whether res, the best hits by score in any order of
// equal scores, holds every matching chunk whose score equals that of its
// n-th: true when it holds all matches or ends on a lower score.
func cutIsComplete(res *bleve.SearchResult, n int) bool {
	h := res.Hits
	if len(h) <= n || uint64(len(h)) >= res.Total {
		return true
	}
	return h[len(h)-1].Score < h[n-1].Score
}
