package state

import (
	"encoding/json"
	"sync/atomic"
	"unsafe"
)

// Append is a list field whose writes concatenate: old ++ update, in the
// deterministic order the runtime merges writes (triggered nodes by name,
// then Send tasks by index).
type Append[T any] struct {
	// v is the current list (nil: no list), its capacity its array's. It
	// is a slice, not a pointer to its first element and a length (one
	// word less): reflect.DeepEqual, and so testify's Equal that users
	// compare states and node outputs with, would then compare only the
	// first item of two lists.
	v []T
	// add is a pending write that appends (non-nil, maybe empty, when
	// there is one): the common write, kept inline.
	add []T
	// w is a pending write that overwrites (then add is nil).
	w *ops[[]T, T]
	// used counts the elements of v's backing array (v holds the whole
	// array: its capacity is the array's) that some value already holds.
	// A merge appends in place only when it is the first to grow the array
	// past len(v); any other merge from the same base (a fork, a parallel
	// subgraph) copies. Readers only ever see v[:len(v)], which is never
	// written again. Nil for an array made elsewhere (decoded,
	// overwritten): its merges copy.
	used *atomic.Int64
}

// list returns the current list (nil when there is none; empty, not nil,
// when it is an empty list), its capacity its length.
func (f *Append[T]) list() []T { return f.v[:len(f.v):len(f.v)] }

// Items returns an Append carrying a write of items — handy in literals.
func Items[T any](items ...T) Append[T] {
	var f Append[T]
	f.Append(items...)
	return f
}

// Get returns the current list. Its capacity equals its length, so appending
// to it copies; do not modify its elements in place.
func (f Append[T]) Get() []T { return f.list() }

// Len returns the length of the current list.
func (f Append[T]) Len() int { return len(f.v) }

// Append records a write that appends items.
func (f *Append[T]) Append(items ...T) {
	if f.w != nil {
		f.w.updates = append(f.w.updates, items...)
		return
	}
	if f.add == nil {
		f.add = make([]T, 0, len(items)) // non-nil even when empty: a write
	}
	f.add = append(f.add, items...)
}

// Overwrite records a write that replaces the whole list; Overwrite(nil)
// clears it.
func (f *Append[T]) Overwrite(items []T) {
	f.w, f.add = &ops[[]T, T]{overwrite: true, base: append([]T(nil), items...)}, nil
}

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Append[T]) Channel() Channel { return (*appendChannel[T])(f) }

// appendChannel is the [Channel] of an [Append]; its methods are documented
// on Channel.
type appendChannel[T any] Append[T]

func (f *appendChannel[T]) At(p unsafe.Pointer) Channel { return (*appendChannel[T])(p) }

// Written reports whether this copy carries a pending write.
func (f *appendChannel[T]) Written() bool { return f.add != nil || f.w != nil }

// ClearWrite drops the pending write.
func (f *appendChannel[T]) ClearWrite() { f.add, f.w = nil, nil }

// pending returns the write as ops (nil when there is none).
func (f *appendChannel[T]) pending() *ops[[]T, T] {
	if f.w != nil || f.add == nil {
		return f.w
	}
	return &ops[[]T, T]{updates: f.add}
}

// updates returns the items the write appends.
func (f *appendChannel[T]) updates() []T {
	if f.w != nil {
		return f.w.updates
	}
	return f.add
}

// MergeWrites concatenates the writes' items to the list.
func (f *appendChannel[T]) MergeWrites(writes []Channel) error {
	base := f.v
	var ow *ops[[]T, T]
	add := 0
	for _, c := range writes {
		a := c.(*appendChannel[T])
		if a.w != nil && a.w.overwrite {
			if ow != nil {
				return ErrOverwriteConflict
			}
			ow = a.w
		}
		add += len(a.updates())
	}
	if ow != nil {
		// LangGraph's rule: the overwrite and its own updates win; every
		// other write of the step is ignored.
		base, add = ow.base, len(ow.updates)
	}
	var out []T
	if used := f.used; used != nil && len(base) > 0 && cap(base)-len(base) >= add &&
		unsafe.SliceData(base) == unsafe.SliceData(f.v) && // f's own array, not an overwrite's
		used.CompareAndSwap(int64(len(base)), int64(len(base)+add)) {
		out = base
	} else {
		// Room to grow in place: a list that gets an item a step would
		// otherwise be copied at lengths 1, 2 and 4 as well.
		out = make([]T, len(base), max(len(base)+add, 2*len(base), 8))
		copy(out, base)
		f.used = new(atomic.Int64)
		f.used.Store(int64(len(base) + add))
	}
	if ow != nil {
		out = append(out, ow.updates...)
	} else {
		for _, c := range writes {
			out = append(out, c.(*appendChannel[T]).updates()...)
		}
	}
	if len(out) == 0 {
		out, f.used = nil, nil
	}
	f.v = out
	return nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *appendChannel[T]) ComposeWrite(next Channel) {
	f.setPending(f.pending().compose(next.(*appendChannel[T]).pending()))
}

// setPending records o as the write: inline when it only appends.
func (f *appendChannel[T]) setPending(o *ops[[]T, T]) {
	switch {
	case o == nil:
		f.add, f.w = nil, nil
	case o.overwrite:
		f.add, f.w = nil, o
	default:
		f.add, f.w = append(make([]T, 0, len(o.updates)), o.updates...), nil
	}
}

// WriteValue makes the current list an overwrite.
func (f *appendChannel[T]) WriteValue() { (*Append[T])(f).Overwrite((*Append[T])(f).list()) }

// MarshalWrite encodes the pending write.
func (f *appendChannel[T]) MarshalWrite() ([]byte, error) { return f.pending().marshal() }

// UnmarshalWrite decodes a pending write.
func (f *appendChannel[T]) UnmarshalWrite(data []byte) error {
	o, err := unmarshalOps[[]T, T](data)
	if err != nil {
		return err
	}
	f.setPending(o)
	return nil
}

func (f *appendChannel[T]) MarshalJSON() ([]byte, error) { return (*Append[T])(f).MarshalJSON() }

func (f *appendChannel[T]) UnmarshalJSON(data []byte) error {
	return (*Append[T])(f).UnmarshalJSON(data)
}

// MarshalJSON encodes the current list ([] when empty).
func (f Append[T]) MarshalJSON() ([]byte, error) {
	if f.v == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(f.list())
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
