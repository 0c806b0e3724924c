package state

import (
	"encoding/json"
	"errors"

	"github.com/agentgraph/agentgraph/internal/fieldview"
)

// Channel is the graph runtime's view of one field of a state: the
// contract between the field types of this package and the graph runtime.
// User code never needs it, and a user-defined merge rule is written as a
// [Reducer] for [Reduced], not as a new Channel.
//
// A field holds two things: its current value, read with the type's Get
// method, and an optional pending write, recorded by the type's write
// methods (Set, Append, Add, …) on a node's own copy of the state. Nodes
// receive a snapshot with no pending writes, so a node that returns a
// modified copy of its input writes exactly the fields it wrote to.
//
// The runtime's methods are kept off the field types' own method sets, so
// that their documentation shows the user's API only. Each field type has
// one accessor instead, Channel, which returns this view of the field: a
// pointer to the same memory under an unexported type that carries the
// methods below, obtained by a conversion that costs no allocation (the
// way protobuf-go's ProtoReflect hides message reflection). Changes made
// through the view are changes to the field.
//
// The graph runtime inspects a state struct once, at Compile, and calls
// Channel on a new value of each field's type; the view it gets is also a
// prototype that can place a view of its own type at any address (through
// an internal interface of this module), so no step reflects over the
// state.
type Channel interface {
	// Written reports whether this copy carries a pending write.
	Written() bool
	// ClearWrite drops the pending write and keeps the value.
	ClearWrite()
	// MergeWrites applies the pending writes carried by writes, in order,
	// to the receiver's value. Every element views a field of the
	// receiver's type and carries a write. It reports [ErrConflict] when
	// the field accepts one write per step and got several, and
	// [ErrOverwriteConflict] for two overwrites in one step. The receiver's
	// value never shares memory that a snapshot handed to a node could
	// write into.
	MergeWrites(writes []Channel) error
	// ComposeWrite appends next's pending write to the receiver's, as if
	// both had been recorded on the receiver in order.
	ComposeWrite(next Channel)
	// WriteValue makes the receiver's current value its pending write, as
	// an overwrite.
	WriteValue()
	// MarshalWrite encodes the pending write as JSON.
	MarshalWrite() ([]byte, error)
	// UnmarshalWrite replaces the pending write with one decoded from data.
	UnmarshalWrite(data []byte) error

	// MarshalJSON and UnmarshalJSON encode and decode the current value,
	// as the field type's own methods do.
	json.Marshaler
	json.Unmarshaler
}

// Every view places views of its own field type (see package fieldview).
var (
	_ fieldview.Locator[Channel] = (*valueChannel[int])(nil)
	_ fieldview.Locator[Channel] = (*appendChannel[int])(nil)
	_ fieldview.Locator[Channel] = (*sumChannel[int])(nil)
	_ fieldview.Locator[Channel] = (*mapChannel[string, int])(nil)
	_ fieldview.Locator[Channel] = (*reducedChannel[int, Reducer[int]])(nil)
	_ fieldview.Locator[Channel] = (*messagesChannel)(nil)
)

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
