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
	"syscall"
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
// commentText) while the term model is trained.
type fileTermCounter struct {
	ids   map[string]int32
	terms []string
	files []modelFile
	tfs   [][]termCount // per file, by id
}

// add counts the comment text of the file rel, of content data.
func (c *fileTermCounter) add(rel string, data []byte) {
	if c.ids == nil {
		c.ids = map[string]int32{}
	}
	tf := map[int32]int32{}
	for _, t := range modelTerms(commentText(rel, data)) {
		id, ok := c.ids[t]
		if !ok {
			id = int32(len(c.terms))
			c.ids[t] = id
			c.terms = append(c.terms, t)
		}
		tf[id]++
	}
	counts := make([]termCount, 0, len(tf))
	for id, n := range tf {
		counts = append(counts, termCount{id, n})
	}
	slices.SortFunc(counts, func(a, b termCount) int { return cmp.Compare(a.id, b.id) })
	c.files = append(c.files, modelFile{Path: rel, Hash: sha256.Sum256(data)})
	c.tfs = append(c.tfs, counts)
}

// setFiles gives m the IDF of its terms over the counted files and the
// files' vectors. The result depends only on the counted files, in any
// order: they are sorted by path, and every sum is taken in a fixed order.
func (m *termModel) setFiles(c *fileTermCounter) {
	if m.Dim == 0 {
		return
	}
	order := make([]int, len(c.files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(c.files[a].Path, c.files[b].Path) })
	// The model's index of each counted term (-1 for a term it lacks).
	model := make([]int32, len(c.terms))
	for id, t := range c.terms {
		model[id] = -1
		if k, ok := m.index[t]; ok {
			model[id] = k
		}
	}
	df := make([]int, len(m.Terms))
	for _, tf := range c.tfs {
		for _, tc := range tf {
			if k := model[tc.id]; k >= 0 {
				df[k]++
			}
		}
	}
	m.IDF = make([]float32, len(m.Terms))
	for k, n := range df {
		if n > 0 {
			m.IDF[k] = float32(math.Log(float64(len(c.files)) / float64(n)))
		}
	}
	d := m.Dim
	m.Files = make([]modelFile, len(order))
	m.FileVecs = make([]float32, len(order)*d)
	type weighted struct {
		k int32
		w float32
	}
	var terms []weighted
	for i, f := range order {
		m.Files[i] = c.files[f]
		terms = terms[:0]
		for _, tc := range c.tfs[f] {
			if k := model[tc.id]; k >= 0 {
				terms = append(terms, weighted{k, float32(1+math.Log(float64(tc.tf))) * m.IDF[k]})
			}
		}
		slices.SortFunc(terms, func(a, b weighted) int { return cmp.Compare(a.k, b.k) })
		v := m.FileVecs[i*d : (i+1)*d]
		for _, t := range terms {
			tv := m.Vecs[int(t.k)*d : (int(t.k)+1)*d]
			for j := range v {
				v[j] += t.w * tv[j]
			}
		}
		normalize(v)
	}
}

// queryVector returns the unit vector of q in m's space (see the latent
// file ranking above), or nil when m knows none of q's terms.
func (m *termModel) queryVector(q string) []float32 {
	if m == nil || m.Dim == 0 || len(m.Files) == 0 {
		return nil
	}
	d := m.Dim
	v := make([]float32, d)
	known := false
	for _, t := range modelTerms(q) {
		k, ok := m.index[t]
		if !ok || m.IDF[k] == 0 {
			continue
		}
		known = true
		w, tv := m.IDF[k], m.Vecs[int(k)*d:(int(k)+1)*d]
		for j := range v {
			v[j] += w * tv[j]
		}
	}
	if !known {
		return nil
	}
	normalize(v)
	return v
}

// latentFiles returns the file ranking files (BM25, best first) fused with
// the latent one: each file scores its BM25 score over the best one's plus
// weight times its cosine with q (when positive) over the best cosine's,
// among the n best files of either ranking, best first. A file whose
// content is not the one its vector was made of (hash, see modelFile) has
// no cosine. Scores are scaled back by the best BM25 score, so that a
// caller reading files[0].score sees the scale it had.
func (ix *Index) latentFiles(q string, files []scored, weight float64, n int) []scored {
	m := ix.termModel()
	qv := m.queryVector(q)
	if qv == nil {
		return files
	}
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
	scale := 1.0
	if len(files) > 0 && files[0].score > 0 {
		scale = files[0].score
	}
	score := make(map[string]float64, len(cosOf)+len(files))
	for _, f := range files {
		score[f.id] += f.score / scale
	}
	for id, c := range cosOf {
		score[id] += weight * c / bestCos
	}
	out := make([]scored, 0, len(score))
	for id, s := range score {
		out = append(out, scored{id: id, score: s * scale})
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return out[:min(n, len(out))]
}

// The latent chunk ranking. The first latentChunkCandidates chunks of a
// keyword or hybrid ranking each get a vector made as a file's is, of the
// terms of their symbol and text, and their cosine with the query's vector
// (over the best cosine among them, times the best score of the ranking,
// times the weight) is added to their score: among the definitions the
// ranking found, the one that speaks of what the question speaks of, in
// the repository's vocabulary, comes up. A chunk's text is read from its
// file under the root, and only if the file's content is still the one
// indexed (its hash): a file changed since the last Update adds nothing.
const latentChunkCandidates = 50

// textVector returns the unit vector of text in m's space, weighted as a
// file's is ((1 + log tf) × idf, see setFiles), or nil when m knows none
// of its terms.
func (m *termModel) textVector(text string) []float32 {
	tf := map[int32]int{}
	for _, t := range modelTerms(text) {
		if k, ok := m.index[t]; ok && m.IDF[k] > 0 {
			tf[k]++
		}
	}
	if len(tf) == 0 {
		return nil
	}
	ks := make([]int32, 0, len(tf))
	for k := range tf {
		ks = append(ks, k)
	}
	slices.Sort(ks) // a fixed order of the sums
	d := m.Dim
	v := make([]float32, d)
	for _, k := range ks {
		w, tv := float32(1+math.Log(float64(tf[k])))*m.IDF[k], m.Vecs[int(k)*d:(int(k)+1)*d]
		for j := range v {
			v[j] += w * tv[j]
		}
	}
	normalize(v)
	return v
}

// latentChunks returns ranked (best first) with the latent chunk ranking's
// share (see above) added to its first n chunks, sorted again.
func (ix *Index) latentChunks(q string, ranked []scored, weight float64, n int) []scored {
	m := ix.termModel()
	qv := m.queryVector(q)
	if qv == nil || len(ranked) == 0 {
		return ranked
	}
	n = min(n, len(ranked))
	texts := ix.chunkTexts(ranked[:n])
	cos := make([]float64, n)
	var best float64
	for i, text := range texts {
		if v := m.textVector(text); v != nil {
			if c := float64(dot(qv, v)); c > 0 && c <= 1.001 { // NaN and Inf fail
				cos[i] = c
				best = max(best, c)
			}
		}
	}
	if best <= 0 {
		return ranked
	}
	var top float64
	for _, r := range ranked {
		top = max(top, r.score)
	}
	out := slices.Clone(ranked)
	for i, c := range cos {
		if c > 0 {
			out[i].score += weight * top * c / best
		}
	}
	slices.SortFunc(out, func(a, b scored) int { return rankCompare(a.score, a.id, b.score, b.id) })
	return out
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
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, errors.New("not an indexable file")
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}
