package state

import (
	"encoding/json"
	"fmt"
	"sync"
	"unsafe"
)

// Messages is a chat-history field with LangGraph's add_messages semantics:
// appending a message whose ID is already present replaces it in place;
// [Messages.Remove] deletes by ID (an unknown ID is an error at merge time);
// [Messages.RemoveAll] clears the history; messages appended without an ID
// get a new one.
type Messages struct {
	v []Message
	w *ops[[]Message, msgOp]
	// c caches the encoding of v for MarshalJSON. It is set together with
	// v (by MergeWrites and UnmarshalJSON) and shared by the copies of this
	// value, which all hold the same v.
	c *msgCache
}

// msgCache holds the encoding of a prefix of one history, so that encoding
// a history that grew by appending costs only the new messages.
//
// It relies on the backing array of a history never being written once the
// history is published: reduceMessages fills a new array on every merge
// and List hands out slices with cap == len. So a list that starts at head
// and is at least len(ends) long has the prefix that buf encodes.
type msgCache struct {
	mu   sync.Mutex
	head *Message // &v[0] of the history; also keeps the array alive
	buf  []byte   // "[" then the first len(ends) messages, comma-separated
	ends []int    // ends[i] is len(buf) just after message i
}

// newMsgCache returns a cache for the history v, or nil when v is empty.
// When old is the cache of the history prev, and v begins with prev's first
// keep messages, the new cache starts with their encoding.
func newMsgCache(v []Message, old *msgCache, prev []Message, keep int) *msgCache {
	if len(v) == 0 {
		return nil
	}
	c := &msgCache{head: &v[0]}
	if old == nil || keep == 0 {
		return c
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if !old.covers(prev) {
		return c
	}
	if n := min(keep, len(old.ends)); n > 0 {
		// old only ever appends past these bytes, and the full slice
		// expressions make c's own appends copy them first.
		end := old.ends[n-1]
		c.buf, c.ends = old.buf[:end:end], old.ends[:n:n]
	}
	return c
}

// covers reports whether c describes a prefix of v. The caller holds c.mu.
func (c *msgCache) covers(v []Message) bool {
	return len(v) > 0 && &v[0] == c.head && len(c.ends) <= len(v)
}

// marshal returns the encoding of v, which must be the history c was made
// for, encoding only the messages the cache does not hold yet. The result
// is a new slice the caller may keep and modify.
func (c *msgCache) marshal(v []Message) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.covers(v) {
		return json.Marshal(v) // unreachable while c is set together with v
	}
	for i := len(c.ends); i < len(v); i++ {
		// json.Marshal of a slice writes exactly this for each element.
		b, err := json.Marshal(v[i])
		if err != nil {
			return nil, err
		}
		sep := byte(',')
		if i == 0 {
			sep = '['
		}
		c.buf = append(append(c.buf, sep), b...)
		c.ends = append(c.ends, len(c.buf))
	}
	out := make([]byte, len(c.buf)+1)
	copy(out, c.buf)
	out[len(c.buf)] = ']'
	return out, nil
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

// Channel returns the graph runtime's view of f; user code does not need
// it.
func (f *Messages) Channel() Channel { return (*messagesChannel)(f) }

// messagesChannel is the [Channel] of [Messages]; its methods are
// documented on Channel.
type messagesChannel Messages

func (f *messagesChannel) At(p unsafe.Pointer) Channel { return (*messagesChannel)(p) }

// Written reports whether this copy carries a pending write.
func (f *messagesChannel) Written() bool { return f.w != nil }

// ClearWrite drops the pending write.
func (f *messagesChannel) ClearWrite() { f.w = nil }

// MergeWrites applies the writes with add_messages semantics.
func (f *messagesChannel) MergeWrites(writes []Channel) error {
	ws := make([]*ops[[]Message, msgOp], len(writes))
	for i, c := range writes {
		ws[i] = c.(*messagesChannel).w
	}
	base, overwrite := f.v, false
	if ow, err := pickOverwrite(ws); err != nil {
		return err
	} else if ow != nil {
		base, ws, overwrite = ow.base, []*ops[[]Message, msgOp]{{updates: ow.updates}}, true
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
	out, keep, err := reduceMessages(base, all)
	if err != nil {
		return err
	}
	if overwrite {
		keep = 0 // out[:keep] is the overwrite's, not f.v's
	}
	f.v, f.c = out, newMsgCache(out, f.c, f.v, keep)
	return nil
}

// reduceMessages is add_messages: the result never shares memory with left.
// Its first keep messages are left's first keep messages, unchanged.
func reduceMessages(left []Message, right []msgOp) (out []Message, keep int, err error) {
	last := -1
	for i, op := range right {
		if op.RemoveAll {
			last = i
		}
	}
	if last >= 0 {
		left, right = nil, right[last+1:]
	}
	keep = len(left)
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
				keep = min(keep, i)
				delete(removed, op.Message.ID)
			} else {
				index[op.Message.ID] = len(merged)
				merged = append(merged, *op.Message)
			}
		case op.Remove != "":
			if _, ok := index[op.Remove]; !ok {
				return nil, 0, &UnknownMessageError{ID: op.Remove}
			}
			if removed == nil {
				removed = make(map[string]bool)
			}
			removed[op.Remove] = true
		}
	}
	if len(removed) > 0 {
		kept := merged[:0]
		for i, m := range merged {
			if removed[m.ID] {
				keep = min(keep, i)
			} else {
				kept = append(kept, m)
			}
		}
		merged = kept
	}
	if len(merged) == 0 {
		return nil, 0, nil
	}
	return merged[:len(merged):len(merged)], keep, nil
}

// ComposeWrite appends next's write to the receiver's.
func (f *messagesChannel) ComposeWrite(next Channel) { f.w = f.w.compose(next.(*messagesChannel).w) }

// WriteValue makes the current history an overwrite.
func (f *messagesChannel) WriteValue() { (*Messages)(f).Overwrite(f.v) }

// MarshalWrite encodes the pending write.
func (f *messagesChannel) MarshalWrite() ([]byte, error) { return f.w.marshal() }

// UnmarshalWrite decodes a pending write.
func (f *messagesChannel) UnmarshalWrite(data []byte) (err error) {
	f.w, err = unmarshalOps[[]Message, msgOp](data)
	return err
}

func (f *messagesChannel) MarshalJSON() ([]byte, error) { return (*Messages)(f).MarshalJSON() }

func (f *messagesChannel) UnmarshalJSON(data []byte) error { return (*Messages)(f).UnmarshalJSON(data) }

// MarshalJSON encodes the history ([] when empty). Copies of a value share
// the encoding of its history, and a history that extends an encoded one by
// appending reuses that encoding: only new or changed messages are encoded.
func (f Messages) MarshalJSON() ([]byte, error) {
	if len(f.v) == 0 {
		return []byte("[]"), nil
	}
	if f.c == nil {
		return json.Marshal(f.v)
	}
	return f.c.marshal(f.v)
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
	*f = Messages{v: v, c: newMsgCache(v, nil, nil, 0)}
	return nil
}
