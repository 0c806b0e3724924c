package codeindex

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
)

// DefaultTermModelDim is the dimension of the term model when
// [WithTermModel] is not given.
const DefaultTermModelDim = 128

// termModelVersion names how the term model is trained (the terms, the
// documents, the weights, the SVD, the tuning on the doc comments); a
// change retrains it.
const termModelVersion = "lsa-tuned-v1"

// termModelFile is the term model's file in the index folder.
const termModelFile = "terms.bin"

// Query expansion by the term model (see [WithExpansion]): each query
// term brings its expansionTerms nearest terms whose cosine is at least
// expansionMinCos.
const (
	expansionTerms  = 2
	expansionMinCos = 0.5
)

// A term model has at most one dimension per termsPerDim terms and
// documents, and none below minTermDim dimensions (see train).
const (
	termsPerDim = 8
	minTermDim  = 4
)

// retrainShare is the share of the index's files that may be added,
// changed or removed since the term model was trained before Update
// trains it again.
const retrainShare = 4 // one in four

// A termModel is a latent semantic model of the terms of the indexed
// files (latent semantic analysis, Deerwester et al., 1990): a unit
// vector per term, from a truncated SVD of the matrix of definitions ×
// terms, so that terms used in the same definitions — the words of doc
// comments and the parts of the identifiers beside them — have close
// vectors. It is trained by Update on the index's own files, so it knows
// the vocabulary of whatever repository is indexed, and it expands a
// keyword query with the terms nearest to the query's.
type termModel struct {
	Dim   int
	Terms []string  // sorted
	Vecs  []float32 // len(Terms)*Dim: term t's unit vector at [t*Dim:(t+1)*Dim]

	// The latent file ranking's (see filevec.go): each term's IDF over
	// the files' comment texts (0 for a term none of them uses), the
	// files, sorted by path, and their unit vectors, file i's at
	// [i*Dim:(i+1)*Dim].
	IDF      []float32
	Files    []modelFile
	FileVecs []float32

	// The term vectors tuned on the doc comments (see tune.go), term t's
	// at [t*Dim:(t+1)*Dim] as in Vecs; nil when the model was not tuned.
	Tuned []float32

	index map[string]int32

	// The mapping of the model's file when some of its floats are used
	// in place from it (see loadTermModel); nil otherwise.
	mapped *mappedFile
	v2     bool // read from a version 2 file, which Update rewrites
}

// modelTerms returns the terms of text for the term model: each
// identifier split into its parts (as [Tokens] splits them), lowercased
// and stemmed, stop words, one-letter parts and parts that start with a
// digit left out, and identifiers of other scripts too.
func modelTerms(text string) []string {
	var out []string
	for w := range words(text) {
		out = appendWordTerms(out, w)
	}
	return out
}

// appendWordTerms appends the terms of word, one word of [words], to out
// (see modelTerms).
func appendWordTerms(out []string, word string) []string {
	if len(word) > maxWordLen {
		return out
	}
	for _, p := range splitIdent(word) {
		lp := strings.ToLower(p)
		if len(lp) < 2 || stopwords[lp] || lp[0] >= '0' && lp[0] <= '9' {
			continue
		}
		out = append(out, stem(lp))
	}
	return out
}

// words yields the words of text for the term model: its runs of ASCII
// letters, digits and underscores (see isWordByte), in order.
func words(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(text); {
			if !isWordByte(text[i]) {
				i++
				continue
			}
			j := i + 1
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			if !yield(text[i:j]) {
				return
			}
			i = j
		}
	}
}

// isWordByte reports whether c is part of a word for the term model (see
// words).
func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// termCounter gathers the documents a term model is trained on, each as
// its terms' counts.
type termCounter struct {
	ids   map[string]int32
	terms []string
	df    []int
	docs  [][]termCount
}

type termCount struct{ id, tf int32 }

// add counts the terms of one document.
func (c *termCounter) add(text string) {
	if c.ids == nil {
		c.ids = map[string]int32{}
	}
	tf := map[int32]int32{}
	for _, t := range modelTerms(text) {
		id, ok := c.ids[t]
		if !ok {
			id = int32(len(c.terms))
			c.ids[t] = id
			c.terms = append(c.terms, t)
			c.df = append(c.df, 0)
		}
		tf[id]++
	}
	doc := make([]termCount, 0, len(tf))
	for id, n := range tf {
		doc = append(doc, termCount{id, n})
		c.df[id]++
	}
	slices.SortFunc(doc, func(a, b termCount) int { return cmp.Compare(a.id, b.id) })
	c.docs = append(c.docs, doc)
}

// termTrainConfig says how a term model is trained.
type termTrainConfig struct {
	dim   int     // vector dimension
	minDF int     // a term must occur in at least this many documents
	maxDF float64 // and in at most this share of them
	power int     // power iterations of the randomized SVD
	seed  uint64
}

// defaultTermTraining is the training of [WithTermModel] with dimension dim.
func defaultTermTraining(dim int) termTrainConfig {
	return termTrainConfig{dim: dim, minDF: 3, maxDF: 0.5, power: 2, seed: 1}
}

// train learns a term model from the counted documents, and forgets
// them (the counter cannot be trained twice). The result
// depends only on the documents, in their order, and cfg: the SVD is
// randomized with a fixed seed and computed in one goroutine.
func (c *termCounter) train(ctx context.Context, cfg termTrainConfig) (*termModel, error) {
	n := len(c.docs)
	var terms []string
	for id, t := range c.terms {
		if c.df[id] >= cfg.minDF && float64(c.df[id]) <= cfg.maxDF*float64(n) {
			terms = append(terms, t)
		}
	}
	slices.Sort(terms)
	m := len(terms)
	col := make(map[int32]int32, m) // counter id → column
	for i, t := range terms {
		col[c.ids[t]] = int32(i)
	}
	// The document × term matrix, rows in CSR form, each entry
	// (1 + log tf) × idf.
	nnz := 0
	for _, d := range c.docs {
		for _, tc := range d {
			if _, ok := col[tc.id]; ok {
				nnz++
			}
		}
	}
	rowStart := make([]int, 1, n+1)
	cols, vals := make([]int32, 0, nnz), make([]float64, 0, nnz)
	for _, d := range c.docs {
		for _, tc := range d {
			k, ok := col[tc.id]
			if !ok {
				continue
			}
			cols = append(cols, k)
			vals = append(vals, (1+math.Log(float64(tc.tf)))*float64(float32(math.Log(float64(n)/float64(c.df[tc.id])))))
		}
		rowStart = append(rowStart, len(cols))
	}
	c.docs, c.ids = nil, nil // the matrix holds what training needs of them
	// Within each row, columns ascending (the counter's ids follow first
	// use, the columns the sorted terms).
	for d := range n {
		lo, hi := rowStart[d], rowStart[d+1]
		idx := make([]int, hi-lo)
		for i := range idx {
			idx[i] = lo + i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(cols[a], cols[b]) })
		cs, vs := make([]int32, len(idx)), make([]float64, len(idx))
		for i, p := range idx {
			cs[i], vs[i] = cols[p], vals[p]
		}
		copy(cols[lo:hi], cs)
		copy(vals[lo:hi], vs)
	}
	// Terms come close only in a space much smaller than the matrix's
	// rank (with all the dimensions every term is orthogonal to every
	// other): at most one dimension per termsPerDim terms and documents,
	// and no model at all below minTermDim.
	dim := min(cfg.dim, m/termsPerDim, n/termsPerDim)
	if dim < minTermDim {
		dim = 0
	}
	l := min(dim+10, m, n)
	model := &termModel{Dim: dim, Terms: terms}
	if dim == 0 {
		model.Terms = nil
		model.reindex()
		return model, nil
	}
	// Randomized SVD (Halko, Martinsson and Tropp, 2011) of A (n × m):
	// Q spans the top right singular vectors, found from A^T A Ω. Blocks
	// are column-major (column j of an r-row block at [j*r:(j+1)*r]), so
	// that orthonormalize works in place, and Ω is drawn row by row as
	// A^T Ω needs it, never held whole.
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	row := make([]float64, l)
	// Two blocks, reused: the n × l one (A q) and the m × l one (A^T z).
	zbuf, ybuf := make([]float64, n*l), make([]float64, m*l)
	at := func(z []float64) []float64 { // A^T z into ybuf: m × l from n × l; Ω for z nil
		y := ybuf
		clear(y)
		for d := 0; d < n; d++ {
			for j := range row {
				if z == nil {
					row[j] = rng.NormFloat64()
				} else {
					row[j] = z[j*n+d]
				}
			}
			for p := rowStart[d]; p < rowStart[d+1]; p++ {
				t, v := int(cols[p]), vals[p]
				for j, x := range row {
					y[j*m+t] += v * x
				}
			}
		}
		return y
	}
	a := func(q []float64) []float64 { // A q into zbuf: n × l from m × l
		z := zbuf
		for d := 0; d < n; d++ {
			clear(row)
			for p := rowStart[d]; p < rowStart[d+1]; p++ {
				t, v := int(cols[p]), vals[p]
				for j := range row {
					row[j] += v * q[j*m+t]
				}
			}
			for j, x := range row {
				z[j*n+d] = x
			}
		}
		return z
	}
	q := orthonormalize(at(nil), m, l)
	for range cfg.power {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("codeindex: train term model: %w", err)
		}
		z := orthonormalize(a(q), n, l)
		q = orthonormalize(at(z), m, l)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("codeindex: train term model: %w", err)
	}
	// B = A Q (n × l); the eigenvectors W of B^T B rotate Q onto the right
	// singular vectors, its eigenvalues are the squared singular values.
	b := a(q)
	gram := make([]float64, l*l)
	for d := 0; d < n; d++ {
		for j := range row {
			row[j] = b[j*n+d]
		}
		for i := range l {
			if row[i] == 0 {
				continue
			}
			for j := i; j < l; j++ {
				gram[i*l+j] += row[i] * row[j]
			}
		}
	}
	for i := range l {
		for j := 0; j < i; j++ {
			gram[i*l+j] = gram[j*l+i]
		}
	}
	eig, w := symEigen(gram, l)
	order := make([]int, l)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(eig[y], eig[x]) })
	vecs := make([]float32, m*dim)
	for k := range dim {
		col := order[k]
		if eig[col] <= 0 {
			continue
		}
		for t := range m {
			var s float64
			for j := range l {
				s += q[j*m+t] * w[j*l+col]
			}
			vecs[t*dim+k] = float32(s)
		}
	}
	for t := range m {
		normalize(vecs[t*dim : (t+1)*dim])
	}
	model.Vecs = vecs
	model.reindex()
	return model, nil
}

// orthonormalize makes the l columns of the column-major rows × l
// matrix y orthonormal in place (modified Gram-Schmidt, twice for
// accuracy), and returns it. A column that vanishes is left zero.
func orthonormalize(y []float64, rows, l int) []float64 {
	for range 2 {
		for j := range l {
			cj := y[j*rows : (j+1)*rows]
			for i := 0; i < j; i++ {
				ci := y[i*rows : (i+1)*rows]
				var d float64
				for r := range cj {
					d += ci[r] * cj[r]
				}
				for r := range cj {
					cj[r] -= d * ci[r]
				}
			}
			var ss float64
			for _, x := range cj {
				ss += x * x
			}
			if ss < 1e-300 {
				clear(cj)
				continue
			}
			inv := 1 / math.Sqrt(ss)
			for r := range cj {
				cj[r] *= inv
			}
		}
	}
	return y
}

// symEigen returns the eigenvalues and eigenvectors (as the columns of a
// row-major l × l matrix) of the symmetric l × l matrix c, by cyclic
// Jacobi rotations. c is overwritten.
func symEigen(c []float64, l int) ([]float64, []float64) {
	v := make([]float64, l*l)
	for i := range l {
		v[i*l+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		var off float64
		for i := range l {
			for j := i + 1; j < l; j++ {
				off += c[i*l+j] * c[i*l+j]
			}
		}
		if off < 1e-22 {
			break
		}
		for p := range l {
			for q := p + 1; q < l; q++ {
				apq := c[p*l+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				app, aqq := c[p*l+p], c[q*l+q]
				theta := (aqq - app) / (2 * apq)
				t := 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				if theta < 0 {
					t = -t
				}
				cs := 1 / math.Sqrt(t*t+1)
				sn := t * cs
				for k := range l {
					akp, akq := c[k*l+p], c[k*l+q]
					c[k*l+p] = cs*akp - sn*akq
					c[k*l+q] = sn*akp + cs*akq
				}
				for k := range l {
					apk, aqk := c[p*l+k], c[q*l+k]
					c[p*l+k] = cs*apk - sn*aqk
					c[q*l+k] = sn*apk + cs*aqk
				}
				for k := range l {
					vkp, vkq := v[k*l+p], v[k*l+q]
					v[k*l+p] = cs*vkp - sn*vkq
					v[k*l+q] = sn*vkp + cs*vkq
				}
			}
		}
	}
	eig := make([]float64, l)
	for i := range l {
		eig[i] = c[i*l+i]
	}
	return eig, v
}

func (m *termModel) reindex() {
	m.index = make(map[string]int32, len(m.Terms))
	for i, t := range m.Terms {
		m.index[t] = int32(i)
	}
}

// expand returns the terms the model puts nearest to the terms of q: for
// each of q's terms it knows, in order, the expansionTerms other terms of
// highest cosine, if at least expansionMinCos, leaving out q's own terms
// and those already given. The cosines of all of q's terms are computed
// in one pass over the model's vectors, four rows at a time.
func (m *termModel) expand(q string) []string {
	if m == nil || m.Dim == 0 {
		return nil
	}
	qt := modelTerms(q)
	own := make(map[string]bool, len(qt))
	for _, t := range qt {
		own[t] = true
	}
	var known []int32 // q's terms the model knows, each once, in order
	for _, t := range qt {
		if id, ok := m.index[t]; ok && !slices.Contains(known, id) {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		return nil
	}
	type near struct {
		t int
		c float32
	}
	best := make([][]near, len(known))
	consider := func(j, i int, c float32) {
		b := best[j]
		if c < expansionMinCos || own[m.Terms[i]] || len(b) == expansionTerms && c <= b[len(b)-1].c {
			return
		}
		b = append(b, near{i, c})
		slices.SortStableFunc(b, func(x, y near) int { return cmp.Compare(y.c, x.c) })
		best[j] = b[:min(len(b), expansionTerms)]
	}
	d := m.Dim
	rows := make([][]float32, len(known))
	for j, id := range known {
		rows[j] = m.Vecs[int(id)*d : (int(id)+1)*d]
	}
	i := 0
	for ; i+4 <= len(m.Terms); i += 4 {
		block := m.Vecs[i*d : (i+4)*d]
		for j, q := range rows {
			s0, s1, s2, s3 := dot4(q, block)
			consider(j, i, s0)
			consider(j, i+1, s1)
			consider(j, i+2, s2)
			consider(j, i+3, s3)
		}
	}
	for ; i < len(m.Terms); i++ {
		for j, q := range rows {
			consider(j, i, dot(q, m.Vecs[i*d:(i+1)*d]))
		}
	}
	var out []string
	given := map[string]bool{}
	for _, b := range best {
		for _, n := range b {
			if t := m.Terms[n.t]; !given[t] {
				given[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// termModelID names a term model trained with dimension dim whose
// encoding (see encode) is payload: the training and a hash of the model.
func termModelID(dim int, payload []byte) string {
	sum := sha256.Sum256(payload)
	return fmt.Sprintf("%s/%d/%x", termModelVersion, dim, sum[:8])
}

// trainsAs reports whether the recorded term model id was trained as a
// model of dimension dim would be now.
func trainsAs(id string, dim int) bool {
	return strings.HasPrefix(id, fmt.Sprintf("%s/%d/", termModelVersion, dim))
}

// The term model's file formats: each starts with its magic line, then
// the model's ID (see termModelID) and a newline. termMagic is the one
// encode writes, termMagicV2 the one before it, which is still read.
const (
	termMagic   = "coderag-terms 3\n"
	termMagicV2 = "coderag-terms 2\n"
)

// termAlign is the alignment, in the file, of a version 3 file's payload
// and of each of its blocks of floats, so that a little-endian machine
// uses them in place from the file's mapping; a cache line.
const termAlign = 64

// encode returns the content of the model's file and the model's ID (see
// termModelID) for the dimension dim it was asked to have: a header line
// with the ID, zeros up to a multiple of termAlign bytes, then the payload:
// the dimension and the number of terms (uint32), the terms (each a
// uvarint length and its bytes), the vectors (float32), the terms' IDF
// (float32), the number of files (uint32), each file's path (a uvarint
// length and its bytes) and hash (32 bytes), and the files' vectors
// (float32), then the number of tuned vectors' floats (uint32, 0 for none)
// and those (float32), little-endian; each block of floats after zeros up
// to the next multiple of termAlign bytes of the file (version 3; version
// 2 had neither the header's nor the blocks' zeros). The ID, a hash of the
// payload, in the header lets a reader tell the recorded model from
// another without hashing it.
func (m *termModel) encode(dim int) (data []byte, id string) {
	// The header's length is known before the payload's hash: the ID's
	// hash part has a fixed length.
	headLen := len(termMagic) + len(termModelID(dim, nil)) + 1
	headPad := alignUp(headLen, termAlign) - headLen
	payload := m.appendPayload(nil, termAlign)
	id = termModelID(dim, payload)
	data = make([]byte, 0, headLen+headPad+len(payload))
	data = append(data, termMagic+id+"\n"...)
	data = append(data, make([]byte, headPad)...)
	data = append(data, payload...)
	return data, id
}

// alignUp is n rounded up to a multiple of a.
func alignUp(n, a int) int { return (n + a - 1) / a * a }

// appendPayload appends the model's payload (see encode) to b, each
// block of floats after zeros up to a multiple of align bytes of b's
// start (1: none, as version 2 wrote them).
func (m *termModel) appendPayload(b []byte, align int) []byte {
	start := len(b)
	floats := func(b []byte, xs []float32) []byte {
		n := start + alignUp(len(b)-start, align)
		b = append(b, make([]byte, n-len(b))...)
		return appendFloats(b, xs)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(m.Dim))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Terms)))
	for _, t := range m.Terms {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	b = floats(b, m.Vecs)
	b = floats(b, m.IDF)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Files)))
	for _, f := range m.Files {
		b = binary.AppendUvarint(b, uint64(len(f.Path)))
		b = append(b, f.Path...)
		b = append(b, f.Hash[:]...)
	}
	b = floats(b, m.FileVecs)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Tuned)))
	return floats(b, m.Tuned)
}

// saveTermModel writes data, an encoded term model, to path, through a
// temporary file renamed over it.
func saveTermModel(path string, data []byte) error {
	err := writeFileAtomic(path, ".terms-*", func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("codeindex: save term model: %w", err)
	}
	return nil
}

// errStaleTermModel reports a term model file that is not the one the
// manifest records: written by an Update that stopped before its
// manifest, or changed since.
var errStaleTermModel = errors.New("codeindex: term model file is not the one the manifest records")

// loadTermModel reads the term model of path, which must be the one
// recorded as id; errStaleTermModel if it is not, or cannot be read.
//
// The file is mapped, not read. A version 3 file's blocks of floats are
// used in place from the mapping where the machine is little-endian
// (nearly every one): the model then holds the mapping until its close,
// and the file must not change in place meanwhile (Update replaces it by
// a rename, which leaves the mapped file as it was). A version 2 file's
// floats, unaligned, are copied out of the mapping (as are a version 3
// file's on a big-endian machine), and the mapping is released before
// loadTermModel returns.
func loadTermModel(path, id string) (*termModel, error) {
	mf, err := openMapped(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("codeindex: load term model: %w", err)
	}
	if err != nil {
		return nil, errStaleTermModel
	}
	m, err := decodeTermModel(mf, id)
	if m == nil || m.mapped == nil {
		mf.close()
	}
	return m, err
}

// A termDecoder reads a term model file's payload (see encode).
type termDecoder struct {
	mf      *mappedFile
	p       []byte // the rest of the file
	off     int    // p's offset in the file
	aligned bool   // version 3: each block of floats at a multiple of termAlign
	inPlace bool   // a block of floats is in the mapping
}

// skip drops the first n bytes of the rest.
func (d *termDecoder) skip(n int) {
	d.p = d.p[n:]
	d.off += n
}

// floats reads n float32s, in place from the mapping where it can (see
// loadTermModel); ok is false when the file is too short, the zeros
// before an aligned block are not zeros, or one of the floats is NaN or
// infinite.
func (d *termDecoder) floats(n int) (xs []float32, ok bool) {
	if d.aligned {
		pad := alignUp(d.off, termAlign) - d.off
		if pad > len(d.p) || !allZero(d.p[:pad]) {
			return nil, false
		}
		d.skip(pad)
	}
	if n < 0 || n > len(d.p)/4 {
		return nil, false
	}
	if d.aligned && n > 0 {
		if xs, ok := d.mf.float32s(d.off, n); ok {
			if !allFinite(xs) {
				return nil, false
			}
			d.inPlace = true
			d.skip(4 * n)
			return xs, true
		}
	}
	xs, rest, ok := readFloats(d.p, n)
	if !ok {
		return nil, false
	}
	d.skip(len(d.p) - len(rest))
	return xs, true
}

// decodeTermModel decodes the term model file mapped as mf, which must
// be the one recorded as id (see loadTermModel). The model holds mf when
// a block of floats is used in place from it; otherwise the caller
// releases it.
func decodeTermModel(mf *mappedFile, id string) (*termModel, error) {
	data := mf.data
	d := &termDecoder{mf: mf}
	switch {
	case bytes.HasPrefix(data, []byte(termMagic+id+"\n")):
		// The payload starts at the next multiple of termAlign, after zeros.
		head := alignUp(len(termMagic)+len(id)+1, termAlign)
		if head > len(data) || !allZero(data[len(termMagic)+len(id)+1:head]) {
			return nil, errStaleTermModel
		}
		d.aligned = true
		d.p, d.off = data[head:], head
	case bytes.HasPrefix(data, []byte(termMagicV2+id+"\n")):
		head := len(termMagicV2) + len(id) + 1
		d.p, d.off = data[head:], head
	default:
		return nil, errStaleTermModel
	}
	if len(d.p) < 8 {
		return nil, errStaleTermModel
	}
	n := int(binary.LittleEndian.Uint32(d.p[4:]))
	dim := int64(binary.LittleEndian.Uint32(d.p))
	// Each term takes at least a length byte, its vector and its IDF.
	if n < 0 || int64(n) > int64(len(d.p))/(5+4*dim) {
		return nil, errStaleTermModel
	}
	m := &termModel{Dim: int(dim), Terms: make([]string, 0, n)}
	d.skip(8)
	for range n {
		l, k := binary.Uvarint(d.p)
		if k <= 0 || l > uint64(len(d.p)-k) {
			return nil, errStaleTermModel
		}
		m.Terms = append(m.Terms, string(d.p[k:k+int(l)]))
		d.skip(k + int(l))
	}
	var ok bool
	if m.Dim < 0 || n > 0 && m.Dim > len(d.p)/4/n {
		return nil, errStaleTermModel
	}
	if m.Vecs, ok = d.floats(n * m.Dim); !ok {
		return nil, errStaleTermModel
	}
	if m.IDF, ok = d.floats(n); !ok || len(d.p) < 4 {
		return nil, errStaleTermModel
	}
	files := int(binary.LittleEndian.Uint32(d.p))
	d.skip(4)
	if files < 0 {
		return nil, errStaleTermModel
	}
	m.Files = make([]modelFile, 0, min(files, len(d.p)/33))
	for range files {
		l, k := binary.Uvarint(d.p)
		if k <= 0 || l > uint64(len(d.p)-k) || len(d.p)-k-int(l) < 32 {
			return nil, errStaleTermModel
		}
		f := modelFile{Path: string(d.p[k : k+int(l)])}
		copy(f.Hash[:], d.p[k+int(l):])
		m.Files = append(m.Files, f)
		d.skip(k + int(l) + 32)
	}
	if m.Dim > 0 && files > len(d.p)/4/m.Dim {
		return nil, errStaleTermModel
	}
	if m.FileVecs, ok = d.floats(files * m.Dim); !ok || len(d.p) < 4 {
		return nil, errStaleTermModel
	}
	tuned := int(binary.LittleEndian.Uint32(d.p))
	d.skip(4)
	if tuned != 0 && tuned != n*m.Dim {
		return nil, errStaleTermModel
	}
	// Read even when empty: a version 3 file pads an empty block too.
	xs, ok := d.floats(tuned)
	if !ok {
		return nil, errStaleTermModel
	}
	if tuned != 0 {
		m.Tuned = xs
	}
	if len(d.p) != 0 {
		return nil, errStaleTermModel
	}
	if d.inPlace {
		m.mapped = mf
	}
	m.v2 = !d.aligned
	m.reindex()
	return m, nil
}

// allZero reports whether every byte of b is 0.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// allFinite reports whether no x of xs is NaN or infinite.
func allFinite(xs []float32) bool {
	for _, x := range xs {
		if math.Float32bits(x)&floatExpMask == floatExpMask {
			return false
		}
	}
	return true
}

// close releases the file the model's floats are mapped from (see
// loadTermModel); the model must not be used afterwards. A model that
// holds no mapping is left as it is.
func (m *termModel) close() error {
	if m == nil || m.mapped == nil {
		return nil
	}
	mf := m.mapped
	*m = termModel{}
	return mf.close()
}

// appendFloats appends xs to b, little-endian.
func appendFloats(b []byte, xs []float32) []byte {
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// floatExpMask is a float32's exponent bits: all set, the value is NaN or
// an infinity.
const floatExpMask = 0x7f800000

// readFloats reads n little-endian float32s from p and returns them and
// the rest of p; ok is false when p is too short.
func readFloats(p []byte, n int) (xs []float32, rest []byte, ok bool) {
	if n < 0 || n > len(p)/4 {
		return nil, p, false
	}
	xs = make([]float32, n)
	q := p[:4*n]
	for i := range xs {
		bits := binary.LittleEndian.Uint32(q[4*i : 4*i+4])
		if bits&floatExpMask == floatExpMask { // NaN or ±Inf
			return nil, p, false
		}
		xs[i] = math.Float32frombits(bits)
	}
	return xs, p[4*n:], true
}
