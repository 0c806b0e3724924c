package state

import (
	"encoding/json"
	"sync/atomic"
)

// Append is a list field whose writes concatenate: old ++ update, in the
// deterministic order the runtime merges writes (triggered nodes by name,
// then Send tasks by index).
type Append[T any] struct {
	v []T
	w *ops[[]T, T]
	// used counts the elements of v's backing array that some value
	// already holds. A merge appends in place only when it is the first to
	// grow the array past len(v); any other merge from the same base (a
	// fork, a parallel subgraph) copies. Readers only ever see v[:len(v)],
	// which is never written again.
	used *atomic.Int64
}

// Items returns an Append carrying a write of items — handy in literals.
func Items[T any](items ...T) Append[T] {
	var f Append[T]
	f.Append(items...)
	return f
}

// Get returns the current list. Its capacity equals its length, so appending
// to it copies; do not modify its elements in place.
func (f Append[T]) Get() []T { return f.v[:len(f.v):len(f.v)] }

// Len returns the length of the current list.
func (f Append[T]) Len() int { return len(f.v) }

// Append records a write that appends items.
func (f *Append[T]) Append(items ...T) {
	if f.w == nil {
		f.w = newOps[[]T, T]()
	}
	f.w.updates = append(f.w.updates, items...)
}

// Overwrite records a write that replaces the whole list; Overwrite(nil)
// clears it.
func (f *Append[T]) Overwrite(items []T) {
	f.w = &ops[[]T, T]{overwrite: true, base: append([]T(nil), items...)}
}

// Written reports whether this copy carries a pending write.
func (f *Append[T]) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *Append[T]) ClearWrite() { f.w = nil }

// HasValue is always true: a list field holds at least the empty list.
func (f *Append[T]) HasValue() bool { return true }

// MergeWrites concatenates the writes' items to the list.
func (f *Append[T]) MergeWrites(writes []Channel) error {
	var buf [8]*ops[[]T, T] // most steps merge few writes: no allocation
	ws := buf[:0]
	for _, c := range writes {
		ws = append(ws, c.(*Append[T]).w)
	}
	base := f.v
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		base, ws = ow.base, []*ops[[]T, T]{{updates: ow.updates}}
	}
	add := 0
	for _, w := range ws {
		if w != nil {
			add += len(w.updates)
		}
	}
	var out []T
	if used := f.used; used != nil && len(base) > 0 && cap(base)-len(base) >= add && sameArray(base, f.v) &&
		used.CompareAndSwap(int64(len(base)), int64(len(base)+add)) {
		out = base
	} else {
		out = make([]T, len(base), max(len(base)+add, 2*len(base)))
		copy(out, base)
		f.used = new(atomic.Int64)
		f.used.Store(int64(len(base) + add))
	}
	for _, w := range ws {
		if w != nil {
			out = append(out, w.updates...)
		}
	}
	if len(out) == 0 {
		out, f.used = nil, nil
	}
	f.v = out
	return nil
}

// sameArray reports whether a and b start at the same element, so that
// base is still f's own array (not an overwrite's).
func sameArray[T any](a, b []T) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// ComposeWrite appends next's write to the receiver's.
func (f *Append[T]) ComposeWrite(next Channel) { f.w = f.w.compose(next.(*Append[T]).w) }

// WriteValue makes the current list an overwrite.
func (f *Append[T]) WriteValue() { f.Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *Append[T]) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *Append[T]) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[[]T, T](data)
	return err
}

// MarshalJSON encodes the current list ([] when empty).
func (f Append[T]) MarshalJSON() ([]byte, error) {
	if f.v == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(f.v)
}

// UnmarshalJSON decodes a list.
func (f *Append[T]) UnmarshalJSON(data []byte) error {
	var v []T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if len(v) == 0 {
		v = nil
	}
	*f = Append[T]{v: v}
	return nil
}
