package codeindex

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The latent rankings: of the files ([WithLatentFileWeight]) and of the
// best chunks ([WithLatentChunkWeight]).
//
// The latent file ranking. When the term
// model is trained, every indexed file also gets a vector in the model's
// space: the sum of the vectors of the terms of its path and of its line
// comments, each weighted by (1 + log tf) × idf (document frequencies over
// the files' comments and paths), normalised. A query gets the sum of its
// terms' vectors weighted by their idf. A file whose comments speak of the
// same things as the question, in other words of the same vocabulary,
// then comes close to it where BM25, which needs the question's own
// words, does not find it.
//
// The vectors describe the files as they were when the model was trained:
// each records the hash of the content it was made of, and a file changed
// or added since has no latent score (its BM25 file score alone counts)
// until the model is trained again (see WithTermModel).

// modelFile is a file the term model has a vector of: its path and the
// SHA-256 of the content the vector was made of.
type modelFile struct {
	Path string
	Hash [32]byte
}

// commentText is what a file's latent vector is made of: its path and the
// text of its line comments (after "//", or "#" in a Python file).
func commentText(rel string, data []byte) string {
	marker := "//"
	if strings.HasSuffix(rel, ".py") {
		marker = "#"
	}
	var b strings.Builder
	b.WriteString(rel)
	b.WriteByte('\n')
	for line := range strings.Lines(string(data)) {
		if i := strings.Index(line, marker); i >= 0 {
			b.WriteString(line[i+len(marker):])
		}
	}
	return b.String()
}

// fileTermCounter gathers the terms of the files' comment texts (see
// commentText) while the term model is trained: one document per file.
type fileTermCounter struct {
	termCounter
	files []modelFile
}

// add counts the comment text of the file rel, of content data.
func (c *fileTermCounter) add(rel string, data []byte) {
	c.termCounter.add(commentText(rel, data))
	c.files = append(c.files, modelFile{Path: rel, Hash: sha256.Sum256(data)})
}

// setFiles gives m the IDF of its terms over the counted files and the
// files' vectors. The result depends only on the counted files, in any
// order: they are sorted by path, and every sum is taken in a fixed order.
func (m *termModel) setFiles(c *fileTermCounter) {
	if m.Dim == 0 {
		return
	}
	// The model's index of each counted term (-1 for a term it lacks),
	// and its IDF over the files.
	model := make([]int32, len(c.terms))
	m.IDF = make([]float32, len(m.Terms))
	for id, t := range c.terms {
		model[id] = -1
		if k, ok := m.index[t]; ok {
			model[id] = k
			m.IDF[k] = float32(math.Log(float64(len(c.files)) / float64(c.df[id])))
		}
	}
	order := make([]int, len(c.files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(c.files[a].Path, c.files[b].Path) })
	d := m.Dim
	m.Files = make([]modelFile, len(order))
	m.FileVecs = make([]float32, len(order)*d)
	var terms []termWeight
	for i, f := range order {
		m.Files[i] = c.files[f]
		terms = terms[:0]
		for _, tc := range c.docs[f] {
			if k := model[tc.id]; k >= 0 {
				terms = append(terms, termWeight{k, float32(1+math.Log(float64(tc.tf))) * m.IDF[k]})
			}
		}
		slices.SortFunc(terms, func(a, b termWeight) int { return cmp.Compare(a.k, b.k) })
		m.sumVectors(m.FileVecs[i*d:(i+1)*d], terms)
	}
}

// termWeight is a term of a term model (its index) and its weight in a
// sum of term vectors.
type termWeight struct {
	k int32
	w float32
}

// sumVectors adds to v the vectors of terms, in their order (a fixed order
// gives the same float sum every time), each times its weight, normalises
// v and returns it.
func (m *termModel) sumVectors(v []float32, terms []termWeight) []float32 {
	d := m.Dim
	for _, t := range terms {
		tv := m.Vecs[int(t.k)*d : (int(t.k)+1)*d]
		for j := range v {
			v[j] += t.w * tv[j]
		}
	}
	normalize(v)
	return v
}

// queryVector returns the unit vector of q in m's space (see the latent
// file ranking above), or nil when m knows none of q's terms.
func (m *termModel) queryVector(q string) []float32 {
	return m.termsVector(modelTerms(q))
}

// termsVector returns the unit vector of a query made of terms (its
// modelTerms), each occurrence weighted by its idf, or nil when m knows
// none of them.
func (m *termModel) termsVector(terms []string) []float32 {
	if m == nil || m.Dim == 0 || len(m.Files) == 0 {
		return nil
	}
	var weights []termWeight // each occurrence, in the query's order
	for _, t := range terms {
		if k, ok := m.index[t]; ok && m.IDF[k] != 0 {
			weights = append(weights, termWeight{k, m.IDF[k]})
		}
	}
	if len(weights) == 0 {
		return nil
	}
	return m.sumVectors(make([]float32, m.Dim), weights)
}

// A latentQuery is a query's vector in the term model's space and its
// distinct terms, made once per search for both latent rankings and the
// coverage of the best chunks.
type latentQuery struct {
	m     *termModel
	v     []float32
	words []string          // the query's terms (modelTerms), in order
	terms map[int32]float32 // the query's distinct terms the model knows, and their idf
	idf   float64           // the sum of terms' idf
}

// latentQueryOf returns the latent query of q; nil when the index has no
// term model or the model knows none of q's terms.
func (ix *Index) latentQueryOf(q string) *latentQuery {
	m := ix.termModel()
	ts := modelTerms(q)
	v := m.termsVector(ts)
	if v == nil {
		return nil
	}
	lq := &latentQuery{m: m, v: v, words: ts, terms: map[int32]float32{}}
	for _, t := range ts {
		if k, ok := m.index[t]; ok && m.IDF[k] > 0 {
			if _, dup := lq.terms[k]; !dup {
				lq.terms[k] = m.IDF[k]
				lq.idf += float64(m.IDF[k])
			}
		}
	}
	return lq
}

// tuned returns lq in the space of its model's vectors tuned on the doc
// comments (see tune.go), or lq when the model has none. The tuned model
// shares the terms, their idf and the files with lq's, so only the
// query's vector changes.
func (lq *latentQuery) tuned() *latentQuery {
	t := lq.m.tuned()
	if t == nil {
		return lq
	}
	tq := *lq
	tq.m, tq.v = t, t.termsVector(lq.words)
	return &tq
}

// latentFiles returns the file ranking files (BM25, best first) fused with
// the latent one: each file scores its BM25 score over the best one's plus
// weight times its cosine with lq (when positive) over the best cosine's,
// among the n best files of either ranking, best first. A file whose
// content is not the one its vector was made of (hash, see modelFile) has
// no cosine. Scores are scaled back by the best BM25 score, so that a
// caller reading files[0].score sees the scale it had. It returns files
// unchanged when lq is nil.
func (ix *Index) latentFiles(lq *latentQuery, files []scored, weight float64, n int) []scored {
	if lq == nil {
		return files
	}
	m, qv := lq.m, lq.v
	d := m.Dim
	fresh := func(i int) bool {
		e := ix.man.Files[m.Files[i].Path]
		return e != nil && e.Hash == m.Files[i].Hash
	}
	cos := make([]scored, 0, len(m.Files))
	for i := range m.Files {
		if c := float64(dot(qv, m.FileVecs[i*d:(i+1)*d])); c > 0 && fresh(i) {
			cos = append(cos, scored{id: m.Files[i].Path, score: c})
		}
	}
	if len(cos) == 0 {
		return files
	}
	slices.SortFunc(cos, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	bestCos := cos[0].score
	cosOf := make(map[string]float64, n+len(files))
	for _, c := range cos[:min(n, len(cos))] {
		cosOf[c.id] = c.score
	}
	for _, f := range files { // the BM25 files beyond the latent n best
		if _, ok := cosOf[f.id]; ok {
			continue
		}
		if i, ok := slices.BinarySearchFunc(m.Files, f.id, func(x modelFile, p string) int { return strings.Compare(x.Path, p) }); ok && fresh(i) {
			if c := float64(dot(qv, m.FileVecs[i*d:(i+1)*d])); c > 0 {
				cosOf[f.id] = c
			}
		}
	}
	other := make([]scored, 0, len(cosOf))
	for id, c := range cosOf {
		other = append(other, scored{id: id, score: c})
	}
	return fuseScaled(files, other, bestCos, weight, n)
}

// The latent chunk ranking. The first latentChunkCandidates chunks of a
// keyword or hybrid ranking each get a vector made as a file's is, of the
// terms of their symbol and text (of the LSA vectors, or of those tuned
// on the doc comments: see WithTunedChunks), and their cosine with the
// query's vector
// (over the best cosine among them, times the best score of the ranking,
// times the weight) is added to their score: among the definitions the
// ranking found, the one that speaks of what the question speaks of, in
// the repository's vocabulary, comes up. A chunk's text is read from its
// file under the root, and only if the file's content is still the one
// indexed (its hash): a file changed since the last Update adds nothing.
const latentChunkCandidates = 50

// textVector returns the unit vector of a text made of terms (its
// modelTerms) in m's space, weighted as a file's is ((1 + log tf) × idf,
// see setFiles), or nil when m knows none of them.
func (m *termModel) textVector(terms []string) []float32 {
	tf := map[int32]int{}
	for _, t := range terms {
		if k, ok := m.index[t]; ok && m.IDF[k] > 0 {
			tf[k]++
		}
	}
	if len(tf) == 0 {
		return nil
	}
	weights := make([]termWeight, 0, len(tf))
	for k, n := range tf {
		weights = append(weights, termWeight{k, float32(1+math.Log(float64(n))) * m.IDF[k]})
	}
	slices.SortFunc(weights, func(a, b termWeight) int { return cmp.Compare(a.k, b.k) })
	return m.sumVectors(make([]float32, m.Dim), weights)
}

// A rerankConfig says what rerankChunks adds to the best chunks' scores.
type rerankConfig struct {
	latent   float64  // the latent chunk ranking's weight (see above)
	coverage float64  // the coverage's weight (see coverage.go)
	code     bool     // the latent cosine is the mean of the whole text's and the code's (see WithChunkCode)
	memo     termMemo // the search's terms of the words of the chunks read (nil: none)
}

// rerankChunks returns ranked (best first) with the shares of the latent
// chunk ranking — its pooled cosine and, when ms is not nil, its late
// interaction (see maxsim.go) — and of the coverage of the query's terms
// for lq (see rerankConfig) added to its first n chunks, sorted again;
// ranked unchanged when lq is nil or none adds anything. All read the
// chunks' texts, once.
func (ix *Index) rerankChunks(lq *latentQuery, ms *maxSimQuery, ranked []scored, rc rerankConfig, n int) []scored {
	if lq == nil || len(ranked) == 0 {
		return ranked
	}
	n = min(n, len(ranked))
	texts := ix.chunkTexts(ranked[:n])
	terms := make([]chunkTerms, n) // each text's terms, made once for both shares
	for i, text := range texts {
		terms[i] = rc.memo.chunkTerms(text)
	}
	share := make([]float64, n)
	var any bool
	if ms != nil && rc.latent > 0 {
		sc := make([]float64, n)
		var best float64
		for i, ts := range terms {
			sc[i] = ms.chunkScore(ts)
			best = max(best, sc[i])
		}
		if best > 0 {
			for i, c := range sc {
				share[i] += rc.latent * c / best
				any = any || c > 0
			}
		}
	}
	if rc.latent > 0 {
		cos := make([]float64, n)
		var best float64
		for i, ts := range terms {
			if c := lq.chunkCosine(ts, rc.code); c > 0 {
				cos[i] = c
				best = max(best, c)
			}
		}
		if best > 0 {
			for i, c := range cos {
				share[i] += rc.latent * c / best
				any = any || c > 0
			}
		}
	}
	if w := rc.coverage * lq.coverageRamp(); w > 0 {
		for i, ts := range terms {
			if c := lq.coverage(ts.all); c > 0 {
				share[i] += w * c
				any = true
			}
		}
	}
	if !any {
		return ranked
	}
	var top float64
	for _, r := range ranked {
		top = max(top, r.score)
	}
	out := slices.Clone(ranked)
	for i, sh := range share {
		out[i].score += top * sh
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return out
}

// cosine returns the cosine of lq's vector with that of a text made of
// terms (its modelTerms; see textVector), or 0 when it has no vector or
// the cosine is not a number in (0, 1].
func (lq *latentQuery) cosine(terms []string) float64 {
	v := lq.m.textVector(terms)
	if v == nil {
		return 0
	}
	if c := float64(dot(lq.v, v)); c > 0 && c <= 1.001 { // NaN and Inf fail
		return c
	}
	return 0
}

// chunkCosine returns the latent chunk ranking's cosine of a chunk of
// terms t: that of its whole text with lq or, with code (see
// WithChunkCode), the mean of it and that of its code alone.
func (lq *latentQuery) chunkCosine(t chunkTerms, code bool) float64 {
	c := lq.cosine(t.all)
	if code {
		c = (c + lq.cosine(t.code)) / 2
	}
	return c
}

// chunkTerms are the terms (modelTerms) of a chunk's text (see
// chunkTexts), all of them in order, and those of its code alone: its
// symbol, declaration and body, without the doc comment its lines start
// with — what the tuned vectors were trained to bring a doc comment near
// (see pairCounter.add).
type chunkTerms struct {
	all, code []string
}

// chunkTermsOf returns the terms of a chunk's text: its symbol, a line
// break, then its lines. The text is split where no word runs across
// (line breaks), so it is tokenised once: all is modelTerms(text), code
// that of the symbol and the lines after the doc comment.
func chunkTermsOf(text string) chunkTerms { return termMemo(nil).chunkTerms(text) }

// A termMemo holds the terms (modelTerms) of each word it has been asked
// for, for one search: the chunks a search reads — hundreds, for a long
// question's best files (see fileChunks) — say the same identifiers over
// and over, and splitting and stemming each anew was most of the time
// spent reading them. A nil termMemo remembers nothing.
type termMemo map[string][]string

// terms returns modelTerms(text), a new slice: the terms of each of its
// words (see words) in order, each word's taken from tm when there.
func (tm termMemo) terms(text string) []string {
	if tm == nil {
		return modelTerms(text)
	}
	var out []string
	for w := range words(text) {
		ts, ok := tm[w]
		if !ok {
			ts = appendWordTerms(nil, w)
			tm[w] = ts
		}
		out = append(out, ts...)
	}
	return out
}

// chunkTerms is chunkTermsOf(text), its words' terms taken from tm.
func (tm termMemo) chunkTerms(text string) chunkTerms {
	symbol, lines, _ := strings.Cut(text, "\n")
	doc, body := splitDoc(lines)
	s, b := tm.terms(symbol), tm.terms(body)
	return chunkTerms{
		all:  append(append(s[:len(s):len(s)], tm.terms(doc)...), b...),
		code: append(s[:len(s):len(s)], b...),
	}
}

// chunkTexts returns the symbol and text of each chunk of chunks, "" for
// one whose file cannot be read under the root or is no longer the
// content indexed. Each file is read once, through an [os.Root], so that
// a path of the manifest never leads outside the root.
func (ix *Index) chunkTexts(chunks []scored) []string {
	out := make([]string, len(chunks))
	root, err := os.OpenRoot(ix.root)
	if err != nil {
		return out
	}
	defer root.Close()
	lines := map[string][]string{} // nil: unreadable or changed
	for i, c := range chunks {
		j := strings.LastIndexByte(c.id, '#')
		if j < 0 {
			continue
		}
		rel, k := c.id[:j], c.id[j+1:]
		e := ix.man.Files[rel]
		n, err := strconv.Atoi(k)
		if e == nil || err != nil || n < 0 || n >= len(e.Chunks) {
			continue
		}
		ls, ok := lines[rel]
		if !ok {
			if data, err := readRegular(root, filepath.FromSlash(rel), ix.cfg.maxFileSize); err == nil && sha256.Sum256(data) == e.Hash {
				ls = strings.Split(string(data), "\n")
			}
			lines[rel] = ls
		}
		meta := e.Chunks[n]
		if meta.StartLine < 1 || meta.EndLine > len(ls) || meta.StartLine > meta.EndLine {
			continue
		}
		out[i] = meta.Symbol + "\n" + strings.Join(ls[meta.StartLine-1:meta.EndLine], "\n")
	}
	return out
}

// readRegular reads the regular file name under root, of at most max
// bytes, without blocking on a FIFO or device.
func readRegular(root *os.Root, name string, max int64) ([]byte, error) {
	f, fi, err := openRegular(root.OpenFile, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, errors.New("not an indexable file")
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}
