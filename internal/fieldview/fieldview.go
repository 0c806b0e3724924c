// Package fieldview is the one contract between package state and package
// graph that user code must not see: how the graph runtime reaches the
// runtime view (a state.Channel) of a state field from the field's address,
// on every write of every step, without reflection.
//
// Every field type of package state has a Channel method returning that
// view of itself, a pointer to an unexported type with the runtime's
// methods. The view also implements [Locator]: At places a view of its own
// field type at any address. So the runtime reflects over a state struct
// once, at Compile, to get one view per field as a prototype, and then
// finds field i of any state value s with proto[i].At(&s + offset[i]).
package fieldview

import "unsafe"

// Locator is implemented by the runtime view V of every field type of
// package state (V is state.Channel; package state cannot be named here,
// since it implements this interface).
type Locator[V any] interface {
	// At returns the view of the field stored at p, which must point to a
	// value of the field type the receiver views. It does not allocate
	// and does not read the receiver or *p.
	At(p unsafe.Pointer) V
}
