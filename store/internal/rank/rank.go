// Package rank keeps the best-scoring items of a semantic search, in
// memory bounded by the page the search returns, for store.Memory,
// store/sqlite and store/postgres alike.
package rank

import (
	"container/heap"
	"math"
	"strings"
	"time"
)

// Entry is a scored candidate of a search.
type Entry[T any] struct {
	// Score is the candidate's similarity to the query.
	Score float64
	// Updated is when the item was last put.
	Updated time.Time
	// Namespace is the item's labels joined with ".".
	Namespace string
	// Key is the item's key.
	Key string
	// Item is what the caller keeps of the candidate.
	Item T
}

// Better reports whether a ranks before b: higher score first, then more
// recently updated, then by namespace and key, bytewise (the order of a
// search without a query).
func Better[T any](a, b *Entry[T]) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if c := a.Updated.Compare(b.Updated); c != 0 {
		return c > 0
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c < 0
	}
	return a.Key < b.Key
}

// Top keeps the n best entries added to it. Its zero value keeps none.
type Top[T any] struct {
	n int
	h entries[T]
}

// NewTop returns a Top that keeps the best offset+limit entries, the
// ones a page at offset of limit entries needs.
func NewTop[T any](offset, limit int) *Top[T] {
	n := math.MaxInt
	if offset <= math.MaxInt-limit {
		n = offset + limit
	}
	return &Top[T]{n: n}
}

// Add offers e; it is kept if it is among the n best so far.
func (t *Top[T]) Add(e Entry[T]) {
	if t.n == 0 {
		return
	}
	if len(t.h) < t.n {
		heap.Push(&t.h, e)
		return
	}
	if Better(&e, &t.h[0]) {
		t.h[0] = e
		heap.Fix(&t.h, 0)
	}
}

// Page returns the kept entries best first, skipping the first offset.
func (t *Top[T]) Page(offset int) []Entry[T] {
	out := make([]Entry[T], len(t.h))
	h := entries[T](append([]Entry[T](nil), t.h...))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(Entry[T])
	}
	if offset >= len(out) {
		return nil
	}
	return out[offset:]
}

// entries is a heap whose root is the worst entry.
type entries[T any] []Entry[T]

func (h entries[T]) Len() int           { return len(h) }
func (h entries[T]) Less(i, j int) bool { return Better(&h[j], &h[i]) }
func (h entries[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries[T]) Push(x any)        { *h = append(*h, x.(Entry[T])) }
func (h *entries[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
