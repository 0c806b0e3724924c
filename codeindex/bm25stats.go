package codeindex

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/blevesearch/bleve/v2/search"
)

// keywordFields are the text fields of the keyword index, all queried.
var keywordFields = []string{"content", "head", "symbol", "path"}

// fileField and commentField are the fields of the file documents: the
// file's path and whole text (see fileText), and its path and comments
// (see commentText).
const (
	fileField    = "file"
	commentField = "comments"
)

// bm25Stats returns the collection statistics of the keyword index's BM25
// scores. They are computed by the first keyword search after the keyword
// index changed (about 0.2 s for the whole of GOROOT/src) and written to
// statsFile, which Open reads and every change of the keyword index
// removes first.
//
// bleve's BM25 takes a field's average length from the number of terms in
// its dictionary divided by the number of documents, and, left to itself,
// sums that number over the index's segments, counting a term once per
// segment that holds it. Segments are merged in the background, so the
// same index scored the same query differently from one moment to the
// next: the ranking of the top hits rarely moved, but the scores did, and
// score-based fusion ([FuseMinMax]) turns score changes into rank changes.
// Counting each term once over the whole index, as here, gives the value
// bleve computes for a fully merged index whatever the segments are.
func (ix *Index) bm25Stats(ctx context.Context) (*search.BM25Stats, error) {
	ix.smu.Lock()
	defer ix.smu.Unlock()
	if ix.stats != nil {
		return ix.stats, nil
	}
	adv, err := ix.kw.Advanced()
	if err != nil {
		return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
	}
	defer r.Close()
	docs, err := r.DocCount()
	if err != nil {
		return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
	}
	// The chunks' statistics count chunks only: every file has a document
	// of its own too (see fileText), which holds none of these fields.
	chunks := int(docs) - len(ix.man.Files)
	st := &search.BM25Stats{DocCount: float64(max(chunks, 0)), FieldCardinality: make(map[string]int, len(keywordFields))}
	for _, f := range keywordFields {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
		}
		d, err := r.FieldDict(f)
		if err != nil {
			return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
		}
		n := 0
		for {
			e, err := d.Next()
			if err != nil {
				d.Close()
				return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
			}
			if e == nil {
				break
			}
			if e.Count > 0 { // not a term of deleted documents only
				n++
			}
		}
		if err := d.Close(); err != nil {
			return nil, fmt.Errorf("codeindex: keyword statistics: %w", err)
		}
		st.FieldCardinality[f] = n
	}
	ix.stats = st
	// A cache: a search does not fail because it cannot be written, and
	// the next Open computes the statistics again.
	_ = saveStats(filepath.Join(ix.dir, statsFile), st)
	return st, nil
}

// fileStats returns the BM25 statistics of the file documents: their
// number and, as bleve takes the average length of a field from its
// "cardinality" over the number of documents, the number of terms of all
// of them, so that the average is the true one. The caller holds ix.mu.
func (ix *Index) fileStats() *search.BM25Stats {
	terms := 0
	for _, e := range ix.man.Files {
		terms += e.Terms
	}
	return &search.BM25Stats{DocCount: float64(len(ix.man.Files)), FieldCardinality: map[string]int{fileField: terms}}
}

// commentStats is fileStats for the comment field of the file documents
// (see commentText): the number of files and the number of terms of all
// their comment texts. The caller holds ix.mu.
func (ix *Index) commentStats() *search.BM25Stats {
	terms := 0
	for _, e := range ix.man.Files {
		terms += e.CommentTerms
	}
	return &search.BM25Stats{DocCount: float64(len(ix.man.Files)), FieldCardinality: map[string]int{commentField: terms}}
}

// invalidateStats forgets the BM25 statistics and removes their file; it
// is called before every change of the keyword index, so that statsFile,
// when present, always describes the keyword index beside it.
func (ix *Index) invalidateStats() error {
	ix.smu.Lock()
	defer ix.smu.Unlock()
	ix.stats = nil
	if err := os.Remove(filepath.Join(ix.dir, statsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("codeindex: %w", err)
	}
	return nil
}

// loadStats reads statsFile; a missing, unreadable or damaged file is nil
// (the statistics are then computed again).
func loadStats(path string) *search.BM25Stats {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var st search.BM25Stats
	if err := gob.NewDecoder(f).Decode(&st); err != nil || st.FieldCardinality == nil {
		return nil
	}
	for _, fld := range keywordFields {
		if _, ok := st.FieldCardinality[fld]; !ok {
			return nil
		}
	}
	return &st
}

// saveStats writes st to path atomically (a temporary file renamed over
// path).
func saveStats(path string, st *search.BM25Stats) error {
	return writeFileAtomic(path, ".bm25stats-*", func(f *os.File) error { return gob.NewEncoder(f).Encode(st) })
}
