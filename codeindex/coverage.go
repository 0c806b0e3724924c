package codeindex

// The coverage of a long query's terms ([WithCoverageWeight]). BM25 sums
// each query term's score on its own: a chunk that repeats two of a long
// question's words many times can outscore one that mentions most of
// them once. The coverage share puts back what BM25 leaves out, the
// breadth of the match: among the best chunks, each gets the share of the
// query's distinct terms (by the term model's idf, so rare words count
// more) that its symbol and text contain. It counts only for a query of
// more than coverageFrom distinct terms the term model knows, fully from
// coverageFull on: a short query, whose few words any good answer
// contains, is ranked as before.
const (
	coverageFrom = 6
	coverageFull = 12
)

// coverageRamp returns how much the coverage share counts for lq: 0 for a
// query of at most coverageFrom distinct known terms, 1 from coverageFull
// on, linearly between; 0 for a nil lq (no term model, or none of the
// query's terms known to it).
func (lq *latentQuery) coverageRamp() float64 {
	if lq == nil {
		return 0
	}
	n := len(lq.terms)
	return max(0, min(1, float64(n-coverageFrom)/float64(coverageFull-coverageFrom)))
}

// coverage returns the share, by idf, of lq's distinct terms that a text
// made of terms (its modelTerms) contains: 0 when it contains none of
// them, 1 when it contains all.
func (lq *latentQuery) coverage(terms []string) float64 {
	if lq.idf <= 0 {
		return 0
	}
	var found float64
	seen := make(map[int32]bool, len(lq.terms))
	for _, t := range terms {
		k, ok := lq.m.index[t]
		if !ok || seen[k] {
			continue
		}
		if w, ok := lq.terms[k]; ok {
			seen[k] = true
			found += float64(w)
		}
	}
	return found / lq.idf
}
