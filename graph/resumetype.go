package graph

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// ResumeTypeError is returned by [Graph.Resume] (and its stream) for an
// answer that cannot be read as the type the interrupt waits for — the T of
// its [InterruptAs] call, recorded with the interrupt as [Interruption.Want].
// Nothing is written: the interrupt stays pending, and a corrected Resume
// answers it.
type ResumeTypeError struct {
	// Interrupt is the pending interrupt the answer was for.
	Interrupt Interruption
	// Value is the refused answer.
	Value any
	// Err says where the answer does not fit.
	Err error
}

// Error implements error.
func (e *ResumeTypeError) Error() string {
	return fmt.Sprintf("graph: the answer to interrupt %s of node %s cannot be read as what it waits for (%s): %v; the interrupt is still pending",
		e.Interrupt.ID, e.Interrupt.Node, e.Interrupt.Want, e.Err)
}

// Unwrap returns the reason.
func (e *ResumeTypeError) Unwrap() error { return e.Err }

// PayloadAs reads an interrupt's payload as T — the payload's own value in
// the process that paused, and, after a checkpoint round trip (GetState in
// another process, say), the JSON a T decodes from. It is
// [Interruption.Decode] with the type named.
func PayloadAs[T any](in Interruption) (T, error) {
	var t T
	err := in.Decode(&t)
	return t, err
}

// wantOf returns the JSON Schema of the values a T decodes from, as
// Interruption.Want records it (cached per type).
func wantOf[T any]() string {
	rt := reflect.TypeFor[T]()
	if s, ok := wants.Load(rt); ok {
		return s.(string)
	}
	b, err := json.Marshal(shapeOf(rt, map[reflect.Type]bool{}))
	if err != nil {
		return ""
	}
	s, _ := wants.LoadOrStore(rt, string(b))
	return s.(string)
}

var wants sync.Map // reflect.Type → string

// shape is the subset of JSON Schema that says which JSON values
// encoding/json can decode into a Go type: an empty shape accepts any.
type shape struct {
	Type                 string            `json:"type,omitempty"`
	Properties           map[string]*shape `json:"properties,omitempty"`
	Items                *shape            `json:"items,omitempty"`
	AdditionalProperties *shape            `json:"additionalProperties,omitempty"`
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf describes t; seen breaks cycles (a recursive type accepts any
// value below its first level).
func shapeOf(t reflect.Type, seen map[reflect.Type]bool) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || t.Implements(jsonUnmarshaler) {
		return &shape{} // decodes itself
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) || t.Implements(textUnmarshaler) {
		if t.Kind() == reflect.Map || t.Kind() == reflect.Struct {
			return &shape{}
		}
		return &shape{Type: "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return &shape{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &shape{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &shape{Type: "number"}
	case reflect.String:
		return &shape{Type: "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &shape{Type: "string"} // base64
		}
		return &shape{Type: "array", Items: shapeOf(t.Elem(), seen)}
	case reflect.Array:
		return &shape{Type: "array", Items: shapeOf(t.Elem(), seen)}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return &shape{Type: "object", AdditionalProperties: shapeOf(t.Elem(), seen)}
		}
		return &shape{Type: "object"}
	case reflect.Struct:
		if seen[t] {
			return &shape{}
		}
		seen[t] = true
		defer delete(seen, t)
		s := &shape{Type: "object"}
		addFields(s, t, seen)
		return s
	default: // interfaces, and what encoding/json cannot decode at all
		return &shape{}
	}
}

// addFields adds t's JSON fields to s, those of embedded structs included.
func addFields(s *shape, t reflect.Type, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if s.Properties == nil {
			s.Properties = map[string]*shape{}
		}
		s.Properties[name] = shapeOf(f.Type, seen)
	}
}

// checkWant reports whether the answer v fits the schema want (as wantOf
// writes it); "" fits anything.
func checkWant(want string, v any) error {
	if want == "" {
		return nil
	}
	var s shape
	if err := json.Unmarshal([]byte(want), &s); err != nil {
		return nil // not ours to judge; InterruptAs decides when it runs
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode the answer: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	return s.check(doc, "answer")
}

// check reports the first place where v, a decoded JSON value, does not
// fit s; path names it.
func (s *shape) check(v any, path string) error {
	if s == nil || s.Type == "" || v == nil { // null decodes into anything
		return nil
	}
	mismatch := func() error {
		b, _ := json.Marshal(v)
		if len(b) > 60 {
			b = append(b[:57], "..."...)
		}
		return fmt.Errorf("%s is %s, want %s", path, b, s.Type)
	}
	switch s.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return mismatch()
		}
	case "string":
		if _, ok := v.(string); !ok {
			return mismatch()
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return mismatch()
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return mismatch()
		}
		if _, err := n.Int64(); err != nil {
			if _, err := strconv.ParseUint(n.String(), 10, 64); err != nil {
				return mismatch() // a fraction, an exponent, or out of range
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return mismatch()
		}
		for i, e := range a {
			if err := s.Items.check(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch()
		}
		for k, e := range m {
			if p := s.property(k); p != nil {
				if err := p.check(e, path+"."+k); err != nil {
					return err
				}
			} else if err := s.AdditionalProperties.check(e, path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// property finds a struct field's shape by key, ignoring letter case where
// no exact match exists, as encoding/json does.
func (s *shape) property(k string) *shape {
	if p, ok := s.Properties[k]; ok {
		return p
	}
	for name, p := range s.Properties {
		if strings.EqualFold(name, k) {
			return p
		}
	}
	return nil
}

// checkAnswers refuses, before anything is written, an answer of cmd that
// does not fit what its pending interrupt waits for.
func (l *loop[S]) checkAnswers(cmd *Command[S]) error {
	for _, r := range l.restored {
		if r.done {
			continue
		}
		for _, in := range r.interrupts {
			v, ok := cmd.ResumeMap[in.ID]
			if !ok && cmd.ResumeMap == nil && cmd.Resume != nil {
				v, ok = cmd.Resume, true
			}
			if !ok {
				continue
			}
			if err := checkWant(in.Want, v); err != nil {
				return &ResumeTypeError{Interrupt: in, Value: v, Err: err}
			}
		}
	}
	return nil
}
