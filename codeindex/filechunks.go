package codeindex

import (
	"cmp"
	"context"
	"slices"
)

// The best files' chunks by the latent chunk ranking (see
// WithFileChunks). The file ranking often has the answering file among
// its first few while none of the keyword candidates is the answering
// definition: the question's words are not the definition's, and other
// definitions of the file (or the file's best keyword chunk, see
// WithTopFiles) match them better. Among each of the first
// fileChunkFiles files' chunks that match the keyword query and are not
// candidates yet, the fileChunksPer of highest latent chunk cosine with
// the query (the pooled cosine the latent chunk ranking reranks the best
// chunks by, see rerankChunks) join the keyword candidates, each with its
// keyword score. The latent chunk ranking, the file ranking's share and
// the late interaction then weigh them as any candidate.
const (
	fileChunkFiles = 10
	fileChunksPer  = 2
)

// fileChunks returns, for each of files, its per chunks of highest cosine
// with lq (see latentQuery.chunkCosine; with code, the mean of the whole
// text's and the code's) among its chunks that match kq and are not in
// seen (chunk IDs), each with its keyword score; equal cosines in keyword
// order. It returns nil when lq is nil.
func (ix *Index) fileChunks(ctx context.Context, kq keywordQ, lq *latentQuery, code bool, files []scored, seen map[string]bool, per int) ([]scored, error) {
	if lq == nil || per <= 0 {
		return nil, nil
	}
	chunks := 0
	for _, f := range files {
		if e := ix.man.Files[f.id]; e != nil {
			chunks += len(e.Chunks)
		}
	}
	if chunks == 0 {
		return nil, nil
	}
	all, err := ix.searchKeywordIn(ctx, kq, files, chunks)
	if err != nil {
		return nil, err
	}
	cand := all[:0:0]
	for _, s := range all {
		if !seen[s.id] {
			cand = append(cand, s)
		}
	}
	texts := ix.chunkTexts(cand)
	cos := make([]float64, len(cand))
	for i, t := range texts {
		cos[i] = lq.chunkCosine(chunkTermsOf(t), code)
	}
	order := make([]int, len(cand))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cos[b], cos[a]) })
	n := map[string]int{}
	var out []scored
	for _, i := range order {
		if p := chunkPath(cand[i].id); n[p] < per {
			n[p]++
			out = append(out, cand[i])
		}
	}
	return out, nil
}

// A fileChunkConfig is what keywordRanking needs for fileChunks: the
// latent chunk ranking's query (nil: no chunks added) and whether its
// cosine is the mean of a chunk's whole text's and its code's.
type fileChunkConfig struct {
	lq   *latentQuery
	code bool
}
