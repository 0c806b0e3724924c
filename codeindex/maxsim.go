package codeindex

import "slices"

// Late interaction ([WithMaxSim]). The latent chunk ranking compares a
// question with a chunk by one pooled vector each: a long question's
// vector is the sum of a dozen or more terms, and the one or two words
// that name what it asks for weigh little in it. The late interaction
// (MaxSim, as in ColBERT: Khattab and Zaharia, 2020) keeps every term of
// the question apart: each of the question's distinct terms the model
// knows is matched with the chunk's term nearest to it — the largest
// cosine of their LSA vectors, 1 for the term itself, none below 0 — and
// the chunk scores the mean of these, each term weighted by its idf. It
// is a soft coverage (see coverage.go): a chunk that says each of the
// question's things, in its own words or the question's, scores near 1.
// Each chunk scores the mean of its whole text's and its code's (the
// doc comment left out, see chunkTerms), as the pooled cosine does with
// WithChunkCode; among the best chunks, that score over the best one's,
// times the latent chunk ranking's weight (see WithLatentChunkWeight),
// is added beside the latent share: the late interaction is a second
// score of that ranking, and off with it.

// A maxSimQuery is a query's distinct terms for the late interaction,
// with the cosines of the chunks' terms with them, computed once per
// search for all the chunks.
type maxSimQuery struct {
	lq    *latentQuery
	terms []int32   // lq's distinct terms, ascending
	idf   []float64 // their idf
	sims  map[int32][]float32
}

// newMaxSim returns the late interaction of lq, through lq's model's
// vectors; nil when lq is nil or has no term of positive idf.
func newMaxSim(lq *latentQuery) *maxSimQuery {
	if lq == nil || lq.idf <= 0 {
		return nil
	}
	q := &maxSimQuery{lq: lq, sims: map[int32][]float32{}}
	for k := range lq.terms {
		q.terms = append(q.terms, k)
	}
	slices.Sort(q.terms)
	for _, k := range q.terms {
		q.idf = append(q.idf, float64(lq.terms[k]))
	}
	return q
}

// score returns the late interaction of q with a text made of terms (its
// modelTerms): the idf-weighted mean, over q's terms, of the largest
// cosine (at least 0) of each with any of the text's terms; 0 for a text
// of no known term.
func (q *maxSimQuery) score(terms []string) float64 {
	m := q.lq.m
	d := m.Dim
	best := make([]float32, len(q.terms))
	seen := make(map[int32]bool, len(terms))
	for _, t := range terms {
		k, ok := m.index[t]
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		cs, ok := q.sims[k]
		if !ok {
			cs = make([]float32, len(q.terms))
			tv := m.Vecs[int(k)*d : (int(k)+1)*d]
			for j, qk := range q.terms {
				if qk == k {
					cs[j] = 1
				} else {
					cs[j] = dot(m.Vecs[int(qk)*d:(int(qk)+1)*d], tv)
				}
			}
			q.sims[k] = cs
		}
		for j, c := range cs {
			best[j] = max(best[j], c)
		}
	}
	var s, sum float64
	for j, w := range q.idf {
		sum += w
		if b := float64(best[j]); b > 0 && b <= 1.001 { // NaN fails
			s += w * b
		}
	}
	return s / sum
}

// chunkScore returns the late interaction of q with a chunk of terms t:
// the mean of its whole text's and its code's.
func (q *maxSimQuery) chunkScore(t chunkTerms) float64 {
	return (q.score(t.all) + q.score(t.code)) / 2
}
