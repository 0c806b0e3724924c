package state

import (
	"encoding/json"
	"errors"
)

// Channel is the contract between a field type of this package and the
// graph runtime. Every field type implements it on its pointer; user code
// never needs to call these methods, and a user-defined merge rule is written
// as a [Reducer] for [Reduced], not as a new Channel.
//
// A field holds two things: its current value, read with the type's Get
// method, and an optional pending write, recorded by the type's write
// methods (Set, Append, Add, …) on a node's own copy of the state. Nodes
// receive a snapshot with no pending writes, so a node that returns a
// modified copy of its input writes exactly the fields it wrote to.
type Channel interface {
	// Written reports whether this copy carries a pending write.
	Written() bool
	// ClearWrite drops the pending write and keeps the value.
	ClearWrite()
	// MergeWrites applies the pending writes carried by writes, in order,
	// to the receiver's value. Every element has the receiver's concrete
	// type and carries a write. It reports [ErrConflict] when the field
	// accepts one write per step and got several, and [ErrOverwriteConflict]
	// for two overwrites in one step. The receiver's value never shares
	// memory that a snapshot handed to a node could write into.
	MergeWrites(writes []Channel) error
	// ComposeWrite appends next's pending write to the receiver's, as if
	// both had been recorded on the receiver in order.
	ComposeWrite(next Channel)
	// WriteValue makes the receiver's current value its pending write, as
	// an overwrite.
	WriteValue()
	// HasValue reports whether the field holds a value. Only [Value] can be
	// empty; the reducer fields always hold at least their zero value.
	HasValue() bool
	// MarshalWrite encodes the pending write as JSON.
	MarshalWrite() ([]byte, error)
	// UnmarshalWrite replaces the pending write with one decoded from data.
	UnmarshalWrite(data []byte) error

	json.Marshaler
	json.Unmarshaler
}

// ErrConflict is reported by MergeWrites when a last-value field receives
// more than one write in one step.
var ErrConflict = errors.New("can receive only one value per step; use a reducer field (Append, Sum, Map, Reduced, Messages) to accept several")

// ErrOverwriteConflict is reported by MergeWrites when a reducer field
// receives more than one overwrite in one step.
var ErrOverwriteConflict = errors.New("can receive only one overwrite per step")

// ops is the pending write of a reducer field: an optional overwrite
// followed by updates in order.
type ops[T, U any] struct {
	overwrite bool
	base      T
	updates   []U
	first     [1]U // backing store of the first update, saving an allocation
}

// newOps returns an empty write whose first update needs no allocation.
func newOps[T, U any]() *ops[T, U] {
	o := &ops[T, U]{}
	o.updates = o.first[:0]
	return o
}

func (o *ops[T, U]) compose(next *ops[T, U]) *ops[T, U] {
	if next == nil {
		return o
	}
	if o == nil || next.overwrite {
		c := *next
		c.updates = append([]U(nil), next.updates...)
		return &c
	}
	c := *o
	c.updates = append(append([]U(nil), o.updates...), next.updates...)
	return &c
}

type jsonOps[T, U any] struct {
	// O marks an overwrite, so that an overwrite with a null value (a nil
	// list or map) survives the round trip.
	O         bool `json:"o,omitempty"`
	Overwrite *T   `json:"overwrite,omitempty"`
	Updates   []U  `json:"updates,omitempty"`
}

func (o *ops[T, U]) marshal() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	j := jsonOps[T, U]{Updates: o.updates}
	if o.overwrite {
		j.O, j.Overwrite = true, &o.base
	}
	return json.Marshal(j)
}

func unmarshalOps[T, U any](data []byte) (*ops[T, U], error) {
	if string(data) == "null" {
		return nil, nil
	}
	var j jsonOps[T, U]
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	o := &ops[T, U]{updates: j.Updates}
	if j.O || j.Overwrite != nil {
		o.overwrite = true
		if j.Overwrite != nil {
			o.base = *j.Overwrite
		}
	}
	return o, nil
}

// pickOverwrite finds the single overwrite among writes. LangGraph's rule
// applies: when one write of a step overwrites, the step's value is that
// overwrite followed by the same write's own updates, and every other write
// of the step is ignored.
func pickOverwrite[T, U any](writes []*ops[T, U]) (*ops[T, U], error) {
	var found *ops[T, U]
	for _, w := range writes {
		if w == nil {
			continue
		}
		if w.overwrite {
			if found != nil {
				return nil, ErrOverwriteConflict
			}
			found = w
		}
	}
	return found, nil
}
