package temporal

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentgraph/agentgraph/state"
)

// channeler is what every field type of package state implements.
type channeler interface{ Channel() state.Channel }

var channelerType = reflect.TypeFor[channeler]()

// encodeWrites encodes the pending writes of s — the fields written with
// Set, Append, … — with the fields' own checkpoint encoding, keyed by Go
// field name. Fields without a write are left out, so a zero S encodes to
// an empty map.
func encodeWrites[S any](s S) (map[string]json.RawMessage, error) {
	v := reflect.ValueOf(&s).Elem()
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("temporal: state type %T is not a struct", s)
	}
	out := map[string]json.RawMessage{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i).Addr()
		if !fv.Type().Implements(channelerType) {
			return nil, fmt.Errorf("temporal: field %s of %T is not a field type of package state", f.Name, s)
		}
		ch := fv.Interface().(channeler).Channel()
		if !ch.Written() {
			continue
		}
		b, err := ch.MarshalWrite()
		if err != nil {
			return nil, fmt.Errorf("temporal: encoding the write to field %s: %w", f.Name, err)
		}
		out[f.Name] = b
	}
	return out, nil
}

// decodeWrites is the inverse of encodeWrites: it returns an S whose
// fields carry the encoded writes. A key naming no field is refused.
func decodeWrites[S any](w map[string]json.RawMessage) (S, error) {
	var s S
	v := reflect.ValueOf(&s).Elem()
	if v.Kind() != reflect.Struct {
		return s, fmt.Errorf("temporal: state type %T is not a struct", s)
	}
	for name, raw := range w {
		f, ok := v.Type().FieldByName(name)
		if !ok || !f.IsExported() || len(f.Index) != 1 {
			return s, fmt.Errorf("temporal: the input writes field %q, which %T does not have", name, s)
		}
		fv := v.Field(f.Index[0]).Addr()
		c, ok := fv.Interface().(channeler)
		if !ok {
			return s, fmt.Errorf("temporal: field %s of %T is not a field type of package state", name, s)
		}
		if err := c.Channel().UnmarshalWrite(raw); err != nil {
			return s, fmt.Errorf("temporal: decoding the write to field %s: %w", name, err)
		}
	}
	return s, nil
}
