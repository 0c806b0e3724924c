package state

import (
	"encoding/json"
	"fmt"
)

// Messages is a chat-history field with LangGraph's add_messages semantics:
// appending a message whose ID is already present replaces it in place;
// [Messages.Remove] deletes by ID (an unknown ID is an error at merge time);
// [Messages.RemoveAll] clears the history; messages appended without an ID
// get a new one.
type Messages struct {
	v []Message
	w *ops[[]Message, msgOp]
}

type msgOp struct {
	Message   *Message `json:"m,omitempty"`
	Remove    string   `json:"remove,omitempty"`
	RemoveAll bool     `json:"remove_all,omitempty"`
}

// UnknownMessageError reports a removal of a message ID that is not in the
// history.
type UnknownMessageError struct {
	ID string
}

func (e *UnknownMessageError) Error() string {
	return fmt.Sprintf("attempting to delete a message with an ID that doesn't exist (%q)", e.ID)
}

// Msgs returns a Messages carrying a write that appends msgs — handy in
// literals.
func Msgs(msgs ...Message) Messages {
	var f Messages
	f.Append(msgs...)
	return f
}

// List returns the current history. Its capacity equals its length; do not
// modify its elements in place.
func (f Messages) List() []Message { return f.v[:len(f.v):len(f.v)] }

// Len returns the number of messages.
func (f Messages) Len() int { return len(f.v) }

// Last returns the last message, if any.
func (f Messages) Last() (Message, bool) {
	if len(f.v) == 0 {
		return Message{}, false
	}
	return f.v[len(f.v)-1], true
}

func (f *Messages) add(op msgOp) {
	if f.w == nil {
		f.w = newOps[[]Message, msgOp]()
	}
	f.w.updates = append(f.w.updates, op)
}

// Append records a write adding msgs; a message whose ID is already in the
// history replaces it. Messages without an ID are given one now.
func (f *Messages) Append(msgs ...Message) {
	for _, m := range msgs {
		m := m.Clone()
		if m.ID == "" {
			m.ID = NewID()
		}
		f.add(msgOp{Message: &m})
	}
	if f.w == nil {
		f.w = newOps[[]Message, msgOp]()
	}
}

// Remove records a write deleting the message with the given ID.
func (f *Messages) Remove(id string) { f.add(msgOp{Remove: id}) }

// RemoveAll records a write clearing the history; messages appended after
// it in the same write are kept.
func (f *Messages) RemoveAll() { f.add(msgOp{RemoveAll: true}) }

// Overwrite records a write replacing the whole history.
func (f *Messages) Overwrite(msgs []Message) {
	base := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			m.ID = NewID()
		}
		base[i] = m
	}
	f.w = &ops[[]Message, msgOp]{overwrite: true, base: base}
}

// Written reports whether this copy carries a pending write.
func (f *Messages) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *Messages) ClearWrite() { f.w = nil }

// HasValue is always true.
func (f *Messages) HasValue() bool { return true }

// MergeWrites applies the writes with add_messages semantics.
func (f *Messages) MergeWrites(writes []Channel) error {
	ws := make([]*ops[[]Message, msgOp], len(writes))
	for i, c := range writes {
		ws[i] = c.(*Messages).w
	}
	base := f.v
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		base, ws = ow.base, []*ops[[]Message, msgOp]{{updates: ow.updates}}
	}
	var all []msgOp
	if len(ws) == 1 && ws[0] != nil {
		all = ws[0].updates
	} else {
		for _, w := range ws {
			if w == nil {
				continue
			}
			all = append(all, w.updates...)
		}
	}
	out, err := reduceMessages(base, all)
	if err != nil {
		return err
	}
	f.v = out
	return nil
}

// reduceMessages is add_messages: the result never shares memory with left.
func reduceMessages(left []Message, right []msgOp) ([]Message, error) {
	last := -1
	for i, op := range right {
		if op.RemoveAll {
			last = i
		}
	}
	if last >= 0 {
		left, right = nil, right[last+1:]
	}
	merged := make([]Message, len(left), len(left)+len(right))
	copy(merged, left)
	index := make(map[string]int, len(merged)+len(right))
	for i, m := range merged {
		index[m.ID] = i
	}
	var removed map[string]bool
	for _, op := range right {
		switch {
		case op.Message != nil:
			if i, ok := index[op.Message.ID]; ok {
				merged[i] = *op.Message
				delete(removed, op.Message.ID)
			} else {
				index[op.Message.ID] = len(merged)
				merged = append(merged, *op.Message)
			}
		case op.Remove != "":
			if _, ok := index[op.Remove]; !ok {
				return nil, &UnknownMessageError{ID: op.Remove}
			}
			if removed == nil {
				removed = make(map[string]bool)
			}
			removed[op.Remove] = true
		}
	}
	if len(removed) > 0 {
		kept := merged[:0]
		for _, m := range merged {
			if !removed[m.ID] {
				kept = append(kept, m)
			}
		}
		merged = kept
	}
	if len(merged) == 0 {
		return nil, nil
	}
	return merged[:len(merged):len(merged)], nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *Messages) ComposeWrite(next Channel) { f.w = f.w.compose(next.(*Messages).w) }

// WriteValue makes the current history an overwrite.
func (f *Messages) WriteValue() { f.Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *Messages) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *Messages) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[[]Message, msgOp](data)
	return err
}

// MarshalJSON encodes the history ([] when empty).
func (f Messages) MarshalJSON() ([]byte, error) {
	if f.v == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(f.v)
}

// UnmarshalJSON decodes a history.
func (f *Messages) UnmarshalJSON(data []byte) error {
	var v []Message
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if len(v) == 0 {
		v = nil
	}
	*f = Messages{v: v}
	return nil
}
