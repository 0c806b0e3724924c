package codeindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Tuning the term model on the repository's own doc comments.
//
// The LSA vectors (see termModel) put close the terms used in the same
// definitions, whatever part of them: a doc comment's words and the
// body's identifiers alike. A question is prose, and the code it asks for
// is mostly identifiers; the doc comments of the indexed repository are
// prose written about code, beside that code. tune makes each definition
// whose doc comment has at least minDocTerms terms a pair — its doc
// comment's terms on one side; its name's, declaration's, body's and
// in-body comments' terms, the doc comment left out, on the other — and
// trains a copy of the LSA vectors so that the pooled vector of a doc
// comment (the sum of its terms' vectors, each weighted by
// (1 + log tf) × idf, normalised) is nearer to the pooled vector of its
// own definition's code than to those of the other definitions of its
// batch: a bag-of-terms dual encoder with one table for both sides,
// trained by in-batch softmax over scaled cosines (InfoNCE, both ways)
// with AdaGrad, each vector kept of unit length. Nothing but the indexed
// files is used, and the result depends only on them: the pairs are
// shuffled with a fixed seed and every sum is taken in one goroutine, in
// a fixed order.

// minDocTerms is the number of terms (see modelTerms) a doc comment needs
// for its definition to be a training pair.
const minDocTerms = 4

// minPoolNorm is the least norm of a pooled vector that tune normalises
// and trains through; one below it counts as zero. A term's weight is at
// least log 2 (a model's terms are in at most half the documents), so a
// pool below it is terms that cancel.
const minPoolNorm = 1e-6

// tuneConfig says how the term vectors are tuned on the doc comments.
type tuneConfig struct {
	epochs int     // passes over the pairs; 0: no tuning
	batch  int     // pairs per batch: each doc comment is contrasted with the batch's other codes
	scale  float64 // cosines are multiplied by it before the softmax (1/temperature)
	rate   float64 // AdaGrad learning rate
	seed   uint64
}

// defaultTuning is the tuning of a term model.
func defaultTuning() tuneConfig {
	return tuneConfig{epochs: 3, batch: 128, scale: 20, rate: 0.05, seed: 1}
}

// splitDoc splits a definition chunk's content into its doc comment (the
// comment and blank lines it starts with) and the rest, its code.
func splitDoc(content string) (doc, code string) {
	rest := content
	for rest != "" {
		line, tail, _ := strings.Cut(rest, "\n")
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "//") && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "/*") && !strings.HasPrefix(t, "*") {
			break
		}
		rest = tail
	}
	return content[:len(content)-len(rest)], rest
}

// A docPair is a training pair: the terms of a doc comment and those of
// its definition's code, each as a counter's term ids and counts.
type docPair struct {
	doc, code []termCount
}

// pairCounter gathers the training pairs of the definitions a
// termCounter counts, in the counter's term ids.
type pairCounter struct {
	pairs []docPair
}

// add records the pair of the definition named symbol, of content
// content, if its doc comment has at least minDocTerms terms. c must
// have counted the definition already, so that its terms have ids.
func (p *pairCounter) add(c *termCounter, symbol, content string) {
	doc, code := splitDoc(content)
	dt := modelTerms(doc)
	if len(dt) < minDocTerms {
		return
	}
	p.pairs = append(p.pairs, docPair{doc: c.counts(dt), code: c.counts(modelTerms(symbol + "\n" + code))})
}

// counts returns terms as the counter's ids and counts, in the order of
// first use; terms the counter has not seen are left out.
func (c *termCounter) counts(terms []string) []termCount {
	var out []termCount
	at := map[int32]int{}
	for _, t := range terms {
		id, ok := c.ids[t]
		if !ok {
			continue
		}
		if i, ok := at[id]; ok {
			out[i].tf++
			continue
		}
		at[id] = len(out)
		out = append(out, termCount{id, 1})
	}
	return out
}

// tune returns m's term vectors tuned on the pairs p (see above), or nil
// when there is nothing to tune: no dimensions, no epochs or fewer than
// two pairs. c is the counter the pairs' ids come from (train keeps its
// terms and document frequencies), docs the number of documents it
// counted. m is not changed.
func (m *termModel) tune(ctx context.Context, c *termCounter, p *pairCounter, docs int, cfg tuneConfig) ([]float32, error) {
	if m.Dim == 0 || cfg.epochs == 0 || cfg.batch < 2 {
		return nil, nil
	}
	// The model's index and the idf over the definitions of each of the
	// counter's terms (-1 and 0 for a term the model lacks).
	model := make([]int32, len(c.terms))
	idf := make([]float32, len(c.terms))
	for id, t := range c.terms {
		model[id] = -1
		if k, ok := m.index[t]; ok {
			model[id] = k
			idf[id] = float32(math.Log(float64(docs) / float64(c.df[id])))
		}
	}
	bagOf := func(tcs []termCount) []termWeight {
		var b []termWeight
		for _, tc := range tcs {
			if k := model[tc.id]; k >= 0 && idf[tc.id] > 0 {
				b = append(b, termWeight{k, float32(1+math.Log(float64(tc.tf))) * idf[tc.id]})
			}
		}
		return b
	}
	type pair struct{ doc, code []termWeight }
	var pairs []pair
	for _, pr := range p.pairs {
		if d, cd := bagOf(pr.doc), bagOf(pr.code); len(d) > 0 && len(cd) > 0 {
			pairs = append(pairs, pair{d, cd})
		}
	}
	p.pairs = nil
	if len(pairs) < 2 {
		return nil, nil
	}
	d := m.Dim
	vecs := make([]float32, len(m.Vecs))
	copy(vecs, m.Vecs)
	acc := make([]float32, len(vecs)) // AdaGrad's sums of squared gradients
	for i := range acc {
		acc[i] = 1e-6
	}
	grad := make([]float32, len(vecs))
	touched := make([]bool, len(m.Terms))
	var rows []int32 // the terms of the batch, in the order first met
	rng := rand.New(rand.NewPCG(cfg.seed, 0x7e57))
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	b := min(cfg.batch, len(pairs))
	qs, cs := make([]float64, b*d), make([]float64, b*d) // the batch's pooled vectors, normalised
	qn, cn := make([]float64, b), make([]float64, b)     // and their norms before
	gq, gc := make([]float64, b*d), make([]float64, b*d) // the loss's gradients with respect to them
	sim, g := make([]float64, b*b), make([]float64, b*b)
	// pool sets out to the normalised sum of bag's vectors and returns
	// its norm before.
	pool := func(out []float64, bag []termWeight) float64 {
		clear(out)
		for _, t := range bag {
			v := vecs[int(t.k)*d : (int(t.k)+1)*d]
			for j := range out {
				out[j] += float64(t.w) * float64(v[j])
			}
		}
		var ss float64
		for _, x := range out {
			ss += x * x
		}
		n := math.Sqrt(ss)
		if n < minPoolNorm {
			// Terms that (nearly) cancel: a pool of no direction. Its
			// gradient, weight / n, would overflow float32 into +Inf and
			// NaN, which the loader refuses.
			clear(out)
			return 0
		}
		for j := range out {
			out[j] /= n
		}
		return n
	}
	// back adds to grad the gradient of bag's vectors, from gu, the
	// gradient with respect to the normalised pool u of norm n.
	back := func(gu, u []float64, n float64, bag []termWeight) {
		if n == 0 {
			return
		}
		var dot float64
		for j := range gu {
			dot += gu[j] * u[j]
		}
		for _, t := range bag {
			if !touched[t.k] {
				touched[t.k] = true
				rows = append(rows, t.k)
			}
			gr := grad[int(t.k)*d : (int(t.k)+1)*d]
			f := float64(t.w) / n
			for j := range gr {
				gr[j] += float32(f * (gu[j] - u[j]*dot))
			}
		}
	}
	// softmax adds to g the softmax of the scaled cosines at the b
	// indexes at(0)…at(b-1).
	softmax := func(at func(k int) int) {
		mx := math.Inf(-1)
		for k := range b {
			mx = max(mx, sim[at(k)])
		}
		var z float64
		for k := range b {
			z += math.Exp(sim[at(k)] - mx)
		}
		for k := range b {
			g[at(k)] += math.Exp(sim[at(k)]-mx) / z
		}
	}
	for range cfg.epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for start := 0; start+b <= len(order); start += b {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("codeindex: tune term model: %w", err)
			}
			batch := order[start : start+b]
			for i, pi := range batch {
				qn[i] = pool(qs[i*d:(i+1)*d], pairs[pi].doc)
				cn[i] = pool(cs[i*d:(i+1)*d], pairs[pi].code)
			}
			for i := range b {
				qi := qs[i*d : (i+1)*d]
				for j := range b {
					cj := cs[j*d : (j+1)*d]
					var s float64
					for k := range qi {
						s += qi[k] * cj[k]
					}
					sim[i*b+j] = cfg.scale * s
				}
			}
			// The loss is the mean over the batch of the cross-entropy of
			// each doc comment against the batch's codes and of each code
			// against its doc comments; g, its gradient with respect to
			// the scaled cosines, is softmax − one-hot, both ways.
			clear(g)
			for i := range b {
				softmax(func(k int) int { return i*b + k })
				softmax(func(k int) int { return k*b + i })
				g[i*b+i] -= 2
			}
			clear(gq)
			clear(gc)
			for i := range b {
				gi, qi := gq[i*d:(i+1)*d], qs[i*d:(i+1)*d]
				for j := range b {
					x := g[i*b+j] * cfg.scale / float64(b)
					if x == 0 {
						continue
					}
					gj, cj := gc[j*d:(j+1)*d], cs[j*d:(j+1)*d]
					for k := range gi {
						gi[k] += x * cj[k]
						gj[k] += x * qi[k]
					}
				}
			}
			for i, pi := range batch {
				back(gq[i*d:(i+1)*d], qs[i*d:(i+1)*d], qn[i], pairs[pi].doc)
				back(gc[i*d:(i+1)*d], cs[i*d:(i+1)*d], cn[i], pairs[pi].code)
			}
			// AdaGrad on the batch's terms, each vector then brought back
			// to unit length.
			for _, k := range rows {
				lo, hi := int(k)*d, (int(k)+1)*d
				v, gr, a := vecs[lo:hi], grad[lo:hi], acc[lo:hi]
				for j := range v {
					a[j] += gr[j] * gr[j]
					v[j] -= float32(cfg.rate/math.Sqrt(float64(a[j]))) * gr[j]
				}
				normalize(v)
				clear(gr)
				touched[k] = false
			}
			rows = rows[:0]
		}
	}
	return vecs, nil
}

// tuned returns m with its tuned vectors (see tune) in place of the LSA
// ones, or nil when m has none.
func (m *termModel) tuned() *termModel {
	if m == nil || m.Tuned == nil {
		return nil
	}
	t := *m
	t.Vecs, t.Tuned = m.Tuned, nil
	return &t
}
