package state

import (
	"encoding/json"
	"strconv"
	"unsafe"
)

// Value is a last-value field: a write replaces the value, and two writes to
// it in one step (from parallel nodes) are an error naming the field and the
// writers. Its zero value holds no value.
type Value[T any] struct {
	// The two flags follow both values, so that they share one word: for
	// an int, 24 bytes instead of 32 (a state is copied into every task,
	// and a Send carries one).
	v, w        T
	ok, written bool
}

// Set returns a Value carrying the write v — handy in struct literals:
//
//	return State{Plan: state.Set(plan)}, nil
func Set[T any](v T) Value[T] { return Value[T]{w: v, written: true} }

// Get returns the current value (the zero T when there is none). It does not
// see a write recorded on the same copy.
func (f Value[T]) Get() T { return f.v }

// Set records a write of v on this copy. Writing the zero value is a write.
func (f *Value[T]) Set(v T) { f.w, f.written = v, true }

// HasValue reports whether a value was ever written.
func (f Value[T]) HasValue() bool { return f.ok }

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Value[T]) Channel() Channel { return (*valueChannel[T])(f) }

// valueChannel is the [Channel] of a [Value]; its methods are documented
// on Channel.
type valueChannel[T any] Value[T]

func (f *valueChannel[T]) At(p unsafe.Pointer) Channel { return (*valueChannel[T])(p) }

func (f *valueChannel[T]) Written() bool { return f.written }

func (f *valueChannel[T]) ClearWrite() {
	var zero T
	f.w, f.written = zero, false
}

// MergeWrites replaces the value with the single write, or reports
// [ErrConflict] for several.
func (f *valueChannel[T]) MergeWrites(writes []Channel) error {
	if len(writes) > 1 {
		return ErrConflict
	}
	for _, w := range writes {
		if w := w.(*valueChannel[T]); w.written {
			f.v, f.ok = w.w, true
		}
	}
	return nil
}

// ComposeWrite keeps next's write when it has one.
func (f *valueChannel[T]) ComposeWrite(next Channel) {
	if n := next.(*valueChannel[T]); n.written {
		f.w, f.written = n.w, true
	}
}

func (f *valueChannel[T]) WriteValue() {
	if f.ok {
		f.w, f.written = f.v, true
	}
}

func (f *valueChannel[T]) MarshalWrite() ([]byte, error) {
	if !f.written {
		return []byte("null"), nil
	}
	return json.Marshal(f.w)
}

func (f *valueChannel[T]) UnmarshalWrite(data []byte) error {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	f.w, f.written = v, true
	return nil
}

func (f *valueChannel[T]) MarshalJSON() ([]byte, error) { return (*Value[T])(f).MarshalJSON() }

func (f *valueChannel[T]) UnmarshalJSON(data []byte) error { return (*Value[T])(f).UnmarshalJSON(data) }

// MarshalJSON encodes the current value (null when there is none).
func (f Value[T]) MarshalJSON() ([]byte, error) {
	if !f.ok {
		return []byte("null"), nil
	}
	if b, ok := appendScalar(make([]byte, 0, 24), any(f.v)); ok {
		return b, nil
	}
	return json.Marshal(f.v)
}

// appendScalar appends the JSON encoding of integers, booleans and plain
// ASCII strings, exactly as encoding/json writes them, without reflection:
// a checkpoint encodes every changed field every step. It reports false
// for any other value.
func appendScalar(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		for i := 0; i < len(x); i++ {
			// encoding/json escapes these (HTML-safe by default).
			if c := x[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return b, false
			}
		}
		b = append(b, '"')
		b = append(b, x...)
		return append(b, '"'), true
	}
	return b, false
}

// UnmarshalJSON decodes a value; null means no value.
func (f *Value[T]) UnmarshalJSON(data []byte) error {
	var v T
	if string(data) == "null" {
		*f = Value[T]{}
		return nil
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = Value[T]{v: v, ok: true}
	return nil
}
