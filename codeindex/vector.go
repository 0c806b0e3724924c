package codeindex

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
)

// vectorMagic starts the flat vector file; the digit is its format version.
const vectorMagic = "CIVEC1\n"

// flatIndex is an exact (brute-force) cosine index: vectors are stored
// L2-normalised, so cosine similarity is a dot product.
type flatIndex struct {
	dim  int
	ids  []string
	vecs []float32 // len(ids)*dim
	row  map[string]int
}

func newFlatIndex() *flatIndex { return &flatIndex{row: map[string]int{}} }

// add inserts or replaces the vector of id; vec is normalised in place.
func (f *flatIndex) add(id string, vec []float32) error {
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
func (f *flatIndex) search(q []float32, n int) ([]scored, error) {
	if len(f.ids) == 0 || n <= 0 {
		return nil, nil
	}
	if len(q) != f.dim {
		return nil, &DimensionError{Want: f.dim, Got: len(q)}
	}
	q = slices.Clone(q)
	normalize(q)
	all := make([]scored, len(f.ids))
	for r, id := range f.ids {
		var dot float32
		for i, x := range f.vecs[r*f.dim : (r+1)*f.dim] {
			dot += x * q[i]
		}
		all[r] = scored{id: id, score: float64(dot)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return all[:min(n, len(all))], nil
}

// save writes the index to path atomically (a temporary file renamed over
// path).
func (f *flatIndex) save(path string) (err error) {
	tmp, err := os.CreateTemp(dirOf(path), ".vectors-*")
	if err != nil {
		return fmt.Errorf("codeindex: save vectors: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	w.WriteString(vectorMagic)
	hdr := binary.LittleEndian.AppendUint32(nil, uint32(f.dim))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(f.ids)))
	w.Write(hdr)
	buf := make([]byte, 4*f.dim)
	for r, id := range f.ids {
		w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(id))))
		w.WriteString(id)
		for i, x := range f.vecs[r*f.dim : (r+1)*f.dim] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("codeindex: save vectors: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("codeindex: save vectors: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("codeindex: save vectors: %w", err)
	}
	return nil
}

// loadFlatIndex reads an index written by save; a missing file is an empty
// index.
func loadFlatIndex(path string) (*flatIndex, error) {
	fi, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newFlatIndex(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("codeindex: load vectors: %w", err)
	}
	defer fi.Close()
	r := bufio.NewReaderSize(fi, 1<<20)
	bad := func(err error) error { return &CorruptError{File: path, Err: err} }
	magic := make([]byte, len(vectorMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return nil, bad(err)
	}
	if string(magic) != vectorMagic {
		return nil, bad(errors.New("not a vector file of this format"))
	}
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, bad(err)
	}
	f := newFlatIndex()
	f.dim = int(binary.LittleEndian.Uint32(hdr[:4]))
	n := int(binary.LittleEndian.Uint32(hdr[4:]))
	f.ids = make([]string, 0, n)
	f.vecs = make([]float32, 0, n*f.dim)
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
