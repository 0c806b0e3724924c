package codeindex

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
)

// vectorMagic starts the flat vector file; the digit is its format
// version. Version 2 keeps the vectors in one block, so that the file can
// be mapped into memory and searched without being read: see
// [flatIndex.save]. Version 1 files (vectorMagicV1) are still read.
const (
	vectorMagic   = "CIVEC2\n"
	vectorMagicV1 = "CIVEC1\n"
)

// flatIndex is an exact (brute-force) cosine index: vectors are stored
// L2-normalised, so cosine similarity is a dot product.
//
// An index loaded from a version 2 file is mapped: vecs is the file's
// vector block, mapped read-only, and the ids are read from the file's
// id block when asked for (id), so opening it reads nothing but the
// header. The first change (add, remove) copies it into memory.
type flatIndex struct {
	dim  int
	ids  []string  // nil while mapped
	vecs []float32 // rows()*dim
	row  map[string]int

	v1     bool        // read from a version 1 file
	mapped *mappedFile // non-nil while mapped
	n      int         // rows, while mapped
	idOffs []byte      // while mapped: n+1 little-endian uint64 offsets into idData
	idData []byte      // while mapped: the ids, one after another
}

func newFlatIndex() *flatIndex { return &flatIndex{row: map[string]int{}} }

// rows returns the number of vectors.
func (f *flatIndex) rows() int {
	if f.mapped != nil {
		return f.n
	}
	return len(f.ids)
}

// id returns the id of row r.
func (f *flatIndex) id(r int) string {
	if f.mapped == nil {
		return f.ids[r]
	}
	return string(f.idBytes(r))
}

// materialize copies a mapped index into memory, so that it can change,
// and unmaps the file.
func (f *flatIndex) materialize() {
	if f.mapped == nil {
		return
	}
	ids := make([]string, f.n)
	row := make(map[string]int, f.n)
	for r := range ids {
		ids[r] = f.id(r)
		row[ids[r]] = r
	}
	vecs := slices.Clone(f.vecs)
	m := f.mapped
	*f = flatIndex{dim: f.dim, ids: ids, vecs: vecs, row: row}
	m.close()
}

// close releases the file a mapped index reads from; the index must not
// be used afterwards unless it was materialized.
func (f *flatIndex) close() error {
	if f == nil || f.mapped == nil {
		return nil
	}
	m := f.mapped
	*f = flatIndex{dim: f.dim, row: map[string]int{}}
	return m.close()
}

// add inserts or replaces the vector of id; vec is normalised in place.
func (f *flatIndex) add(id string, vec []float32) error {
	f.materialize()
	if f.dim == 0 {
		f.dim = len(vec)
	}
	if len(vec) != f.dim {
		return &DimensionError{Want: f.dim, Got: len(vec)}
	}
	normalize(vec)
	if r, ok := f.row[id]; ok {
		copy(f.vecs[r*f.dim:(r+1)*f.dim], vec)
		return nil
	}
	f.row[id] = len(f.ids)
	f.ids = append(f.ids, id)
	f.vecs = append(f.vecs, vec...)
	return nil
}

// remove deletes id, moving the last row into its place.
func (f *flatIndex) remove(id string) {
	f.materialize()
	r, ok := f.row[id]
	if !ok {
		return
	}
	last := len(f.ids) - 1
	if r != last {
		f.ids[r] = f.ids[last]
		copy(f.vecs[r*f.dim:(r+1)*f.dim], f.vecs[last*f.dim:])
		f.row[f.ids[r]] = r
	}
	f.ids = f.ids[:last]
	f.vecs = f.vecs[:last*f.dim]
	delete(f.row, id)
}

type scored struct {
	id    string
	score float64
}

// search returns the n rows most similar to q (any length-dim vector), best
// first; ties go to the smaller id so results are deterministic.
//
// It is exact: every row is scored, as a dot product summed in dimension
// order, but only the best n are kept (a bounded heap per scan) instead of
// sorting all scores, and indexes of at least parallelRows rows are scanned
// by up to GOMAXPROCS goroutines whose top-n lists are merged. The result is
// the one a full sort by rankCompare would give.
func (f *flatIndex) search(q []float32, n int) ([]scored, error) {
	return f.searchWorkers(q, n, searchWorkers(f.rows()))
}

// parallelRows is the least number of rows each goroutine of the scan gets:
// below about twice that, starting and joining goroutines costs as much as it
// saves. BenchmarkFlatSearchWorkers at 256 dimensions on a 2-core machine:
// 8192 rows take about 1.1 ms in one goroutine and 0.65 ms in two; at 4096
// rows and below the two are within the noise of each other.
const parallelRows = 4096

// searchWorkers is the number of goroutines search uses for rows rows.
func searchWorkers(rows int) int {
	return max(1, min(runtime.GOMAXPROCS(0), rows/parallelRows))
}

// searchWorkers is search with the scan split across workers goroutines.
func (f *flatIndex) searchWorkers(q []float32, n, workers int) ([]scored, error) {
	if f.rows() == 0 || n <= 0 {
		return nil, nil
	}
	if len(q) != f.dim {
		return nil, &DimensionError{Want: f.dim, Got: len(q)}
	}
	q = slices.Clone(q)
	normalize(q)
	rows := f.rows()
	n = min(n, rows)
	workers = max(1, min(workers, rows))
	var best []rowScore
	if workers == 1 {
		best = f.topRows(q, n, 0, rows)
	} else {
		parts := make([][]rowScore, workers)
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := w*rows/workers, (w+1)*rows/workers
			wg.Go(func() { parts[w] = f.topRows(q, n, lo, hi) })
		}
		wg.Wait()
		best = slices.Concat(parts...)
	}
	slices.SortFunc(best, f.rowCompare)
	out := make([]scored, min(n, len(best)))
	for i := range out {
		out[i] = scored{id: f.id(best[i].row), score: best[i].score}
	}
	return out, nil
}

// rankCompare orders search results: higher score first, then smaller id.
// It is negative when (sa, ida) ranks before (sb, idb).
func rankCompare(sa float64, ida string, sb float64, idb string) int {
	if c := cmp.Compare(sb, sa); c != 0 {
		return c
	}
	return cmp.Compare(ida, idb)
}

// rowCompare is rankCompare for two rows of f: their ids are read only
// when the scores tie, and a mapped index compares them in place, without
// making strings of them.
func (f *flatIndex) rowCompare(a, b rowScore) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if f.mapped == nil {
		return cmp.Compare(f.ids[a.row], f.ids[b.row])
	}
	return bytes.Compare(f.idBytes(a.row), f.idBytes(b.row))
}

// idBytes is the id of row r of a mapped index, in the mapping.
func (f *flatIndex) idBytes(r int) []byte {
	lo := binary.LittleEndian.Uint64(f.idOffs[8*r:])
	hi := binary.LittleEndian.Uint64(f.idOffs[8*r+8:])
	return f.idData[lo:hi]
}

// rowScore is a row of the index and its similarity to the query.
type rowScore struct {
	score float64
	row   int
}

// topRows returns, in no particular order, the n best rows of [lo, hi) by
// rankCompare (fewer if the range is shorter). It keeps them in a min-heap
// whose root is the worst kept row, so most rows cost one comparison.
func (f *flatIndex) topRows(q []float32, n, lo, hi int) []rowScore {
	h := rowHeap{f: f, s: make([]rowScore, 0, min(n, hi-lo))}
	offer := func(r int, dot float32) {
		s := float64(dot)
		if len(h.s) < n {
			h.s = append(h.s, rowScore{s, r})
			h.up(len(h.s) - 1)
			return
		}
		root := h.s[0]
		if s < root.score || f.rowCompare(rowScore{s, r}, root) >= 0 {
			return
		}
		h.s[0] = rowScore{s, r}
		h.down(0)
	}
	dim := f.dim
	r := lo
	// Four rows at a time: each row's sum is still accumulated in dimension
	// order (so its score is bit-for-bit the one-row loop's), but the four
	// independent sums overlap in the CPU instead of waiting on each other.
	for ; r+4 <= hi; r += 4 {
		d0, d1, d2, d3 := dot4(q, f.vecs[r*dim:(r+4)*dim])
		offer(r, d0)
		offer(r+1, d1)
		offer(r+2, d2)
		offer(r+3, d3)
	}
	for ; r < hi; r++ {
		offer(r, dot(q, f.vecs[r*dim:(r+1)*dim]))
	}
	return h.s
}

// dot is the dot product of q and v (len(v) >= len(q)), summed in order.
func dot(q, v []float32) float32 {
	v = v[:len(q)]
	var s float32
	for i, x := range v {
		s += x * q[i]
	}
	return s
}

// dot4 is dot of q and each of the four consecutive rows in v
// (len(v) == 4*len(q)), each summed in order.
func dot4(q, v []float32) (s0, s1, s2, s3 float32) {
	d := len(q)
	v0, v1, v2, v3 := v[:d], v[d:2*d], v[2*d:3*d], v[3*d:4*d]
	for i, x := range q {
		s0 += v0[i] * x
		s1 += v1[i] * x
		s2 += v2[i] * x
		s3 += v3[i] * x
	}
	return
}

// rowHeap is a min-heap of rows by rankCompare: s[0] ranks last.
type rowHeap struct {
	f *flatIndex
	s []rowScore
}

// after reports whether s[i] ranks after s[j].
func (h *rowHeap) after(i, j int) bool {
	return h.f.rowCompare(h.s[i], h.s[j]) > 0
}

func (h *rowHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.after(i, p) {
			return
		}
		h.s[i], h.s[p] = h.s[p], h.s[i]
		i = p
	}
}

func (h *rowHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h.s) {
			return
		}
		if c+1 < len(h.s) && h.after(c+1, c) {
			c++
		}
		if !h.after(c, i) {
			return
		}
		h.s[i], h.s[c] = h.s[c], h.s[i]
		i = c
	}
}

// save writes the index to path atomically (a temporary file renamed over
// path), in format version 2, little-endian:
//
//	"CIVEC2\n" (7 bytes), a zero byte, dim uint32, n uint32, 8 zero bytes
//	n*dim float32 vectors, row after row          (from offset 24)
//	n+1 uint64 offsets of the ids in the id block (the first is 0)
//	the id block: the ids, one after another
//
// The vectors start at a multiple of 8 bytes, so a mapped file can be
// read as []float32 in place.
func (f *flatIndex) save(path string) error {
	if err := writeFileAtomic(path, ".vectors-*", f.write); err != nil {
		return fmt.Errorf("codeindex: save vectors: %w", err)
	}
	return nil
}

// write writes f in save's format to out.
func (f *flatIndex) write(out *os.File) error {
	n := f.rows()
	w := bufio.NewWriterSize(out, 1<<20)
	hdr := append([]byte(vectorMagic), 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(f.dim))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(n))
	hdr = append(hdr, make([]byte, vectorHeader-len(hdr))...)
	w.Write(hdr)
	buf := make([]byte, 4*f.dim)
	for r := range n {
		for i, x := range f.vecs[r*f.dim : (r+1)*f.dim] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		w.Write(buf)
	}
	var off uint64
	w.Write(binary.LittleEndian.AppendUint64(nil, 0))
	for r := range n {
		off += uint64(len(f.id(r)))
		w.Write(binary.LittleEndian.AppendUint64(nil, off))
	}
	for r := range n {
		w.WriteString(f.id(r))
	}
	return w.Flush()
}

// vectorHeader is the length of a version 2 file's header.
const vectorHeader = 24

// loadFlatIndex opens an index written by save; a missing file is an empty
// index. A version 2 file is mapped, not read (see flatIndex), where the
// platform can map files and is little-endian; a version 1 file is read.
func loadFlatIndex(path string) (*flatIndex, error) {
	fi, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newFlatIndex(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("codeindex: load vectors: %w", err)
	}
	defer fi.Close()
	bad := func(err error) error { return &CorruptError{File: path, Err: err} }
	magic := make([]byte, len(vectorMagic))
	if _, err := io.ReadFull(fi, magic); err != nil {
		return nil, bad(err)
	}
	switch string(magic) {
	case vectorMagicV1:
		f, err := readFlatIndexV1(bufio.NewReaderSize(fi, 1<<20), bad)
		if err != nil {
			return nil, err
		}
		f.v1 = true
		return f, nil
	case vectorMagic:
	default:
		return nil, bad(errors.New("not a vector file of this format"))
	}
	st, err := fi.Stat()
	if err != nil {
		return nil, fmt.Errorf("codeindex: load vectors: %w", err)
	}
	m, err := mapFile(fi, st.Size())
	if err != nil {
		return nil, fmt.Errorf("codeindex: load vectors: %w", err)
	}
	f, err := parseFlatIndex(m)
	if err != nil {
		m.close()
		return nil, bad(err)
	}
	return f, nil
}

// parseFlatIndex checks the layout of the version 2 file m holds and
// returns the index reading from it.
func parseFlatIndex(m *mappedFile) (*flatIndex, error) {
	data := m.data
	if len(data) < vectorHeader {
		return nil, io.ErrUnexpectedEOF
	}
	dim := uint64(binary.LittleEndian.Uint32(data[8:]))
	n := uint64(binary.LittleEndian.Uint32(data[12:]))
	size := uint64(len(data))
	if dim > 1<<20 || n > 1<<31 { // so that the sizes below cannot overflow
		return nil, fmt.Errorf("implausible size: %d vectors of %d dimensions", n, dim)
	}
	vecEnd := vectorHeader + 4*dim*n
	if vecEnd+8*(n+1) > size {
		return nil, errors.New("the vectors and id offsets do not fit in the file")
	}
	idOffs := data[vecEnd : vecEnd+8*(n+1)]
	idData := data[vecEnd+8*(n+1):]
	prev := uint64(0)
	if binary.LittleEndian.Uint64(idOffs) != 0 {
		return nil, errors.New("the first id offset is not 0")
	}
	for r := uint64(1); r <= n; r++ {
		off := binary.LittleEndian.Uint64(idOffs[8*r:])
		if off < prev || off > uint64(len(idData)) {
			return nil, fmt.Errorf("id %d is out of the file", r-1)
		}
		prev = off
	}
	if prev != uint64(len(idData)) {
		return nil, errors.New("bytes after the last id")
	}
	f := &flatIndex{dim: int(dim), n: int(n), mapped: m, idOffs: idOffs, idData: idData}
	if n == 0 {
		f.vecs = nil
	} else if v, ok := m.float32s(vectorHeader, int(dim*n)); ok {
		f.vecs = v
	} else {
		// Not mappable in place (big-endian, or no mapping): decode.
		f.vecs = make([]float32, dim*n)
		for i := range f.vecs {
			f.vecs[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[vectorHeader+4*i:]))
		}
	}
	return f, nil
}

// readFlatIndexV1 reads the rest of a version 1 file, after its magic:
// dim and n, then per row the id's length, the id and the vector.
func readFlatIndexV1(r *bufio.Reader, bad func(error) error) (*flatIndex, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, bad(err)
	}
	f := newFlatIndex()
	f.dim = int(binary.LittleEndian.Uint32(hdr[:4]))
	n := int(binary.LittleEndian.Uint32(hdr[4:]))
	f.ids = make([]string, 0, min(n, 1<<20))
	f.vecs = make([]float32, 0, min(n*f.dim, 1<<26))
	buf := make([]byte, 4*f.dim)
	for range n {
		if _, err := io.ReadFull(r, hdr[:4]); err != nil {
			return nil, bad(err)
		}
		id := make([]byte, binary.LittleEndian.Uint32(hdr[:4]))
		if _, err := io.ReadFull(r, id); err != nil {
			return nil, bad(err)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, bad(err)
		}
		f.row[string(id)] = len(f.ids)
		f.ids = append(f.ids, string(id))
		for i := range f.dim {
			f.vecs = append(f.vecs, math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
		}
	}
	return f, nil
}
