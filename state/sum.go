package state

import (
	"encoding/json"
	"unsafe"
)

// Number is the set of types a [Sum] field can count in.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Sum is a numeric counter field: writes add to it, and
// [Sum.Overwrite] resets it (Overwrite(0) to zero it).
type Sum[N Number] struct {
	v N
	w *ops[N, N]
}

// Delta returns a Sum carrying a write that adds n — handy in literals.
func Delta[N Number](n N) Sum[N] {
	var f Sum[N]
	f.Add(n)
	return f
}

// Get returns the current total.
func (f Sum[N]) Get() N { return f.v }

// Add records a write that adds n.
func (f *Sum[N]) Add(n N) {
	if f.w == nil {
		f.w = newOps[N, N]()
	}
	f.w.updates = append(f.w.updates, n)
}

// Overwrite records a write that sets the total to n.
func (f *Sum[N]) Overwrite(n N) { f.w = &ops[N, N]{overwrite: true, base: n} }

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Sum[N]) Channel() Channel { return (*sumChannel[N])(f) }

// sumChannel is the [Channel] of a [Sum]; its methods are documented on
// Channel.
type sumChannel[N Number] Sum[N]

func (f *sumChannel[N]) At(p unsafe.Pointer) Channel { return (*sumChannel[N])(p) }

// Written reports whether this copy carries a pending write.
func (f *sumChannel[N]) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *sumChannel[N]) ClearWrite() { f.w = nil }

// MergeWrites adds every write's deltas.
func (f *sumChannel[N]) MergeWrites(writes []Channel) error {
	var buf [8]*ops[N, N] // most steps merge few writes: no allocation
	ws := buf[:0]
	for _, c := range writes {
		ws = append(ws, c.(*sumChannel[N]).w)
	}
	v := f.v
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		v, ws = ow.base, []*ops[N, N]{{updates: ow.updates}}
	}
	for _, w := range ws {
		if w == nil {
			continue
		}
		for _, d := range w.updates {
			v += d
		}
	}
	f.v = v
	return nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *sumChannel[N]) ComposeWrite(next Channel) { f.w = f.w.compose(next.(*sumChannel[N]).w) }

// WriteValue makes the current total an overwrite.
func (f *sumChannel[N]) WriteValue() { (*Sum[N])(f).Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *sumChannel[N]) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *sumChannel[N]) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[N, N](data)
	return err
}

func (f *sumChannel[N]) MarshalJSON() ([]byte, error) { return (*Sum[N])(f).MarshalJSON() }

func (f *sumChannel[N]) UnmarshalJSON(data []byte) error { return (*Sum[N])(f).UnmarshalJSON(data) }

// MarshalJSON encodes the total.
func (f Sum[N]) MarshalJSON() ([]byte, error) { return json.Marshal(f.v) }

// UnmarshalJSON decodes a total.
func (f *Sum[N]) UnmarshalJSON(data []byte) error {
	var v N
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = Sum[N]{v: v}
	return nil
}
