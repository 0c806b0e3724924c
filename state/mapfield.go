package state

import (
	"encoding/json"
	"maps"
	"unsafe"
)

// Map is a map field whose writes merge key by key; a later write of a key
// (in merge order) wins. [Map.Delete] removes a key.
type Map[K comparable, V any] struct {
	v map[K]V
	w *ops[map[K]V, mapOp[K, V]]
}

type mapOp[K comparable, V any] struct {
	Key    K    `json:"k"`
	Value  V    `json:"v,omitempty"`
	Delete bool `json:"d,omitempty"`
}

// Entries returns a Map carrying a write that merges m — handy in literals.
func Entries[K comparable, V any](m map[K]V) Map[K, V] {
	var f Map[K, V]
	f.Merge(m)
	return f
}

// Get returns the current map. Treat it as read-only: it is shared with
// other readers of the same snapshot.
func (f Map[K, V]) Get() map[K]V { return f.v }

// Lookup returns the value stored under k.
func (f Map[K, V]) Lookup(k K) (V, bool) {
	v, ok := f.v[k]
	return v, ok
}

// Len returns the number of entries.
func (f Map[K, V]) Len() int { return len(f.v) }

func (f *Map[K, V]) add(op mapOp[K, V]) {
	if f.w == nil {
		f.w = newOps[map[K]V, mapOp[K, V]]()
	}
	f.w.updates = append(f.w.updates, op)
}

// Put records a write of v under k.
func (f *Map[K, V]) Put(k K, v V) { f.add(mapOp[K, V]{Key: k, Value: v}) }

// Delete records a write removing k.
func (f *Map[K, V]) Delete(k K) { f.add(mapOp[K, V]{Key: k, Delete: true}) }

// Merge records writes of every entry of m (in no particular order, so a
// key appears once).
func (f *Map[K, V]) Merge(m map[K]V) {
	for k, v := range m {
		f.Put(k, v)
	}
	if f.w == nil {
		f.w = newOps[map[K]V, mapOp[K, V]]()
	}
}

// Overwrite records a write replacing the whole map; Overwrite(nil) clears it.
func (f *Map[K, V]) Overwrite(m map[K]V) {
	f.w = &ops[map[K]V, mapOp[K, V]]{overwrite: true, base: maps.Clone(m)}
}

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Map[K, V]) Channel() Channel { return (*mapChannel[K, V])(f) }

// mapChannel is the [Channel] of a [Map]; its methods are documented on
// Channel.
type mapChannel[K comparable, V any] Map[K, V]

func (f *mapChannel[K, V]) At(p unsafe.Pointer) Channel { return (*mapChannel[K, V])(p) }

// Written reports whether this copy carries a pending write.
func (f *mapChannel[K, V]) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *mapChannel[K, V]) ClearWrite() { f.w = nil }

// MergeWrites applies every write's puts and deletes to a copy of the map.
func (f *mapChannel[K, V]) MergeWrites(writes []Channel) error {
	var buf [8]*ops[map[K]V, mapOp[K, V]] // most steps merge few writes: no allocation
	ws := buf[:0]
	for _, c := range writes {
		ws = append(ws, c.(*mapChannel[K, V]).w)
	}
	base := f.v
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		base, ws = ow.base, []*ops[map[K]V, mapOp[K, V]]{{updates: ow.updates}}
	}
	out := make(map[K]V, len(base))
	maps.Copy(out, base)
	for _, w := range ws {
		if w == nil {
			continue
		}
		for _, op := range w.updates {
			if op.Delete {
				delete(out, op.Key)
			} else {
				out[op.Key] = op.Value
			}
		}
	}
	if len(out) == 0 {
		out = nil
	}
	f.v = out
	return nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *mapChannel[K, V]) ComposeWrite(next Channel) { f.w = f.w.compose(next.(*mapChannel[K, V]).w) }

// WriteValue makes the current map an overwrite.
func (f *mapChannel[K, V]) WriteValue() { (*Map[K, V])(f).Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *mapChannel[K, V]) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *mapChannel[K, V]) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[map[K]V, mapOp[K, V]](data)
	return err
}

func (f *mapChannel[K, V]) MarshalJSON() ([]byte, error) { return (*Map[K, V])(f).MarshalJSON() }

func (f *mapChannel[K, V]) UnmarshalJSON(data []byte) error {
	return (*Map[K, V])(f).UnmarshalJSON(data)
}

// MarshalJSON encodes the current map ({} when empty).
func (f Map[K, V]) MarshalJSON() ([]byte, error) {
	if f.v == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(f.v)
}

// UnmarshalJSON decodes a map.
func (f *Map[K, V]) UnmarshalJSON(data []byte) error {
	var v map[K]V
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if len(v) == 0 {
		v = nil
	}
	*f = Map[K, V]{v: v}
	return nil
}
