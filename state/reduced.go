package state

import (
	"encoding/json"
	"unsafe"
)

// Reducer is a user-defined merge rule, expressed as a type so that no
// string keys are needed: Reduce is called on the zero value of the type.
//
//	type JoinWords struct{}
//	func (JoinWords) Reduce(old, update string) string { return old + " " + update }
//
//	type State struct {
//		Sentence state.Reduced[string, JoinWords]
//	}
type Reducer[T any] interface {
	Reduce(old, update T) T
}

// Reduced is a field merged by the reducer R: each write u makes the value
// R.Reduce(value, u), in merge order. [Reduced.Overwrite] bypasses R.
type Reduced[T any, R Reducer[T]] struct {
	v T
	w *ops[T, T]
}

// Update records a write of u, to be reduced into the value.
func (f *Reduced[T, R]) Update(u T) {
	if f.w == nil {
		f.w = newOps[T, T]()
	}
	f.w.updates = append(f.w.updates, u)
}

// Get returns the current value.
func (f Reduced[T, R]) Get() T { return f.v }

// Overwrite records a write replacing the value without calling R.
func (f *Reduced[T, R]) Overwrite(v T) { f.w = &ops[T, T]{overwrite: true, base: v} }

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Reduced[T, R]) Channel() Channel { return (*reducedChannel[T, R])(f) }

// reducedChannel is the [Channel] of a [Reduced]; its methods are documented on
// Channel.
type reducedChannel[T any, R Reducer[T]] Reduced[T, R]

func (f *reducedChannel[T, R]) At(p unsafe.Pointer) Channel { return (*reducedChannel[T, R])(p) }

// Written reports whether this copy carries a pending write.
func (f *reducedChannel[T, R]) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *reducedChannel[T, R]) ClearWrite() { f.w = nil }

// MergeWrites reduces every write's updates into the value.
func (f *reducedChannel[T, R]) MergeWrites(writes []Channel) error {
	var buf [8]*ops[T, T] // most steps merge few writes: no allocation
	ws := buf[:0]
	for _, c := range writes {
		ws = append(ws, c.(*reducedChannel[T, R]).w)
	}
	v := f.v
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		v, ws = ow.base, []*ops[T, T]{{updates: ow.updates}}
	}
	var r R
	for _, w := range ws {
		if w == nil {
			continue
		}
		for _, u := range w.updates {
			v = r.Reduce(v, u)
		}
	}
	f.v = v
	return nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *reducedChannel[T, R]) ComposeWrite(next Channel) {
	f.w = f.w.compose(next.(*reducedChannel[T, R]).w)
}

// WriteValue makes the current value an overwrite.
func (f *reducedChannel[T, R]) WriteValue() { (*Reduced[T, R])(f).Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *reducedChannel[T, R]) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *reducedChannel[T, R]) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[T, T](data)
	return err
}

func (f *reducedChannel[T, R]) MarshalJSON() ([]byte, error) {
	return (*Reduced[T, R])(f).MarshalJSON()
}

func (f *reducedChannel[T, R]) UnmarshalJSON(data []byte) error {
	return (*Reduced[T, R])(f).UnmarshalJSON(data)
}

// MarshalJSON encodes the value.
func (f Reduced[T, R]) MarshalJSON() ([]byte, error) { return json.Marshal(f.v) }

// UnmarshalJSON decodes a value.
func (f *Reduced[T, R]) UnmarshalJSON(data []byte) error {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = Reduced[T, R]{v: v}
	return nil
}
