package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// WithJSON gives Put the JSON text of the value, so that the store can
// keep the value as it was written: a map[string]any has no key order,
// but a store that keeps texts returns text as [Item.JSON], keys in the
// order text has them (LangGraph's JS server answers values as they were
// sent; the server of package server passes each request's text here).
//
// text must be a JSON object that decodes to the value Put is given (as
// [UnmarshalValue] decodes it, so 1 and 1.0 agree): Put decodes text
// itself and fails with an error wrapping [ErrInvalidOption] if text is
// not a JSON object, nests deeper than 10,000 levels, or disagrees with
// value; a text and a value that disagree are never stored. The text is
// kept normalized: without insignificant whitespace, strings re-escaped
// as [MarshalValue] escapes them (invalid UTF-8 becoming U+FFFD, as
// encoding/json decodes it), numbers spelled as given, and a key given
// twice kept once, at its first place with its last value (as JSON.parse
// and encoding/json decode it).
//
// A store that keeps no texts ignores WithJSON and stores value.
func WithJSON(text []byte) PutOption { return jsonOption{text: bytes.Clone(text)} }

type jsonOption struct{ text []byte }

func (o jsonOption) applyPut(c *PutConfig) {
	c.JSON = o.text
	c.jsonSet = true
}

// Encode returns the JSON text a store keeps for a Put of value with
// configuration c, and that text decoded as by [UnmarshalValue]: the
// normalized text of [WithJSON] if c has one, after checking that it
// decodes to the same value as value's own encoding; otherwise
// [MarshalValue] of value (keys sorted). It fails like MarshalValue for a
// value that is not JSON, and with an error wrapping [ErrInvalidOption]
// for a text that does not decode, or decodes to another value.
func (c PutConfig) Encode(value map[string]any) ([]byte, map[string]any, error) {
	raw, err := MarshalValue(value)
	if err != nil {
		return nil, nil, err
	}
	decoded, err := UnmarshalValue(raw)
	if err != nil {
		return nil, nil, err
	}
	if c.JSON == nil {
		return raw, decoded, nil
	}
	fromText, err := UnmarshalValue(c.JSON)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: WithJSON: %w", ErrInvalidOption, err)
	}
	if !reflect.DeepEqual(decoded, fromText) {
		return nil, nil, fmt.Errorf("%w: WithJSON: the text does not encode the value put", ErrInvalidOption)
	}
	return c.JSON, fromText, nil
}

// maxJSONDepth is the deepest nesting WithJSON accepts, encoding/json's.
const maxJSONDepth = 10000

// normalizeText returns the JSON object text as [WithJSON] keeps it.
func normalizeText(text []byte) ([]byte, error) {
	if !json.Valid(text) {
		return nil, errors.New("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	root, err := readJSON(dec, tok, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	var b bytes.Buffer
	b.Grow(len(text))
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := root.write(&b, enc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonNode is a parsed JSON value whose objects keep their key order.
type jsonNode struct {
	kind  byte   // '{', '[', '"' or 0 for a literal (number, true, false, null)
	lit   string // a literal as written, or a string's value
	keys  []string
	elems []*jsonNode // an object's values (in the order of keys) or an array's elements
}

// readJSON reads the value starting with tok.
func readJSON(dec *json.Decoder, tok json.Token, depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: byte(t)}
		var index map[string]int // key → position, once the object has many keys
		for dec.More() {
			var key string
			if n.kind == '{' {
				ktok, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key = ktok.(string)
			}
			vtok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readJSON(dec, vtok, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == '[' {
				n.elems = append(n.elems, v)
				continue
			}
			i := -1
			if index != nil {
				if j, ok := index[key]; ok {
					i = j
				}
			} else {
				for j, k := range n.keys {
					if k == key {
						i = j
						break
					}
				}
			}
			if i >= 0 {
				n.elems[i] = v // a repeated key: its last value, at its first place
				continue
			}
			n.keys, n.elems = append(n.keys, key), append(n.elems, v)
			if index == nil && len(n.keys) > 16 {
				index = make(map[string]int, 2*len(n.keys))
				for j, k := range n.keys {
					index[k] = j
				}
			} else if index != nil {
				index[key] = len(n.keys) - 1
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: '"', lit: t}, nil
	case json.Number:
		return &jsonNode{lit: string(t)}, nil
	case bool:
		if t {
			return &jsonNode{lit: "true"}, nil
		}
		return &jsonNode{lit: "false"}, nil
	case nil:
		return &jsonNode{lit: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// write appends n's compact encoding to b; enc encodes strings into b.
func (n *jsonNode) write(b *bytes.Buffer, enc *json.Encoder) error {
	switch n.kind {
	case '"':
		return writeString(b, enc, n.lit)
	case '{', '[':
		b.WriteByte(n.kind)
		for i, v := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if n.kind == '{' {
				if err := writeString(b, enc, n.keys[i]); err != nil {
					return err
				}
				b.WriteByte(':')
			}
			if err := v.write(b, enc); err != nil {
				return err
			}
		}
		b.WriteByte(n.kind + 2) // '{'+2 is '}', '['+2 is ']'
		return nil
	}
	b.WriteString(n.lit)
	return nil
}

// writeString appends s as a JSON string, escaped as MarshalValue does.
func writeString(b *bytes.Buffer, enc *json.Encoder, s string) error {
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // the newline Encode adds
	return nil
}
