package codeindex

import (
	"cmp"
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
// with fc's query (see latentQuery.chunkCosine; with fc.code, the mean of
// the whole text's and the code's) among its chunks in all (the keyword matches of
// chunks of files and maybe others, best first; see fileMatches) that are
// not in seen (chunk IDs), each with its keyword score; equal cosines in
// keyword order. It returns nil when fc's query is nil.
func (ix *Index) fileChunks(all []scored, fc fileChunkConfig, files []scored, seen map[string]bool, per int) []scored {
	if fc.lq == nil || per <= 0 {
		return nil
	}
	in := make(map[string]bool, len(files))
	for _, f := range files {
		in[f.id] = true
	}
	var cand []scored
	for _, s := range all {
		if !seen[s.id] && in[chunkPath(s.id)] {
			cand = append(cand, s)
		}
	}
	if len(cand) == 0 {
		return nil
	}
	texts := ix.chunkTexts(cand)
	cos := make([]float64, len(cand))
	for i, t := range texts {
		cos[i] = fc.lq.chunkCosine(fc.memo.chunkTerms(t), fc.code)
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
	return out
}

// A fileChunkConfig is what keywordRanking needs for fileChunks: the
// latent chunk ranking's query (nil: no chunks added), whether its
// cosine is the mean of a chunk's whole text's and its code's, and the
// search's terms of the words of the chunks read (see termMemo).
type fileChunkConfig struct {
	lq   *latentQuery
	code bool
	memo termMemo
}
