package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// Tool is a function an LLM agent can call.
//
// Name and Description are shown to the model, Parameters is the JSON schema
// (an object schema) of the arguments, and Call runs the tool with the
// arguments the model produced. Call returns the text handed back to the
// model; an error means the call could not be carried out.
type Tool interface {
	// Name is the identifier the model uses to call the tool, e.g. "file_read".
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Parameters is a JSON-schema object describing the arguments.
	Parameters() json.RawMessage
	// Call runs the tool with JSON-encoded arguments.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ArgumentError reports arguments that could not be decoded into the tool's
// argument type: malformed JSON, unknown fields, wrong types or missing
// required fields.
type ArgumentError struct {
	// Tool is the name of the tool that was called.
	Tool string
	// Err is the underlying decoding error.
	Err error
}

// Error implements error.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("tool %s: invalid arguments: %v", e.Tool, e.Err)
}

// Unwrap returns the underlying decoding error.
func (e *ArgumentError) Unwrap() error { return e.Err }

// New returns a Tool whose arguments are described by the Go type Args,
// which should be a struct (or a pointer to one).
//
// The JSON schema returned by Parameters is derived from Args with
// github.com/invopop/jsonschema: property names follow the `json` tags and
// the `jsonschema` tags add keywords, e.g.
//
//	Path string `json:"path" jsonschema:"required,description=File to read"`
//
// A property is required only when it is tagged `jsonschema:"required"`.
// Descriptions containing commas can be given with a separate
// `jsonschema_description:"..."` tag. The schema is an inline object (no
// top-level $ref or $defs, except for recursive types) with
// "additionalProperties": false.
//
// Call decodes the arguments with json.Decoder.DisallowUnknownFields, checks
// that required properties are present, and then calls fn. An empty or null
// argument payload is treated as {}. Decoding problems are returned as
// *ArgumentError; errors returned by fn are passed through unchanged.
func New[Args any](name, description string, fn func(ctx context.Context, args Args) (string, error)) Tool {
	t := &typedTool[Args]{name: name, description: description, fn: fn}
	t.params, t.required, t.schemaErr = schemaFor(reflect.TypeFor[Args]())
	return t
}

type typedTool[Args any] struct {
	name        string
	description string
	params      json.RawMessage
	required    []string
	schemaErr   error
	fn          func(ctx context.Context, args Args) (string, error)
}

func (t *typedTool[Args]) Name() string        { return t.name }
func (t *typedTool[Args]) Description() string { return t.description }

// Parameters returns a copy of the schema so callers cannot modify it.
func (t *typedTool[Args]) Parameters() json.RawMessage { return bytes.Clone(t.params) }

func (t *typedTool[Args]) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if t.schemaErr != nil {
		return "", fmt.Errorf("tool %s: %w", t.name, t.schemaErr)
	}
	if t.fn == nil {
		return "", fmt.Errorf("tool %s: no implementation", t.name)
	}
	args, err := decodeArgs[Args](raw, t.required)
	if err != nil {
		return "", &ArgumentError{Tool: t.name, Err: err}
	}
	return t.fn(ctx, args)
}

// decodeArgs strictly decodes raw into an Args value.
func decodeArgs[Args any](raw json.RawMessage, required []string) (Args, error) {
	var args Args
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return args, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return args, errors.New("unexpected data after the arguments object")
	}
	if len(required) == 0 {
		return args, nil
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(data, &present); err != nil {
		return args, fmt.Errorf("arguments must be a JSON object: %w", err)
	}
	var missing []string
	for _, name := range required {
		if _, ok := present[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return args, fmt.Errorf("missing required argument(s): %s", strings.Join(missing, ", "))
	}
	return args, nil
}

// minimalSchema is used when no schema can be derived from the argument type.
var minimalSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// schemaFor reflects t into an inline JSON schema and lists its top-level
// required properties.
func schemaFor(t reflect.Type) (params json.RawMessage, required []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			params, required = minimalSchema, nil
			err = fmt.Errorf("cannot derive JSON schema from %v: %v", t, r)
		}
	}()
	recursive := isRecursive(t)
	r := &jsonschema.Reflector{
		Anonymous:                  true,
		ExpandedStruct:             true,
		DoNotReference:             !recursive,
		RequiredFromJSONSchemaTags: true,
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	if recursive {
		// The root definition was moved inline; keep a copy in $defs so
		// that recursive references to it still resolve.
		base := t
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if s.Definitions == nil {
			s.Definitions = jsonschema.Definitions{}
		}
		if name := base.Name(); name != "" {
			if _, ok := s.Definitions[name]; !ok {
				root := *s
				root.Definitions = nil
				s.Definitions[name] = &root
			}
		}
	} else {
		s.Definitions = nil
	}
	if s.Type == "object" && s.Properties == nil {
		s.Properties = jsonschema.NewProperties()
	}
	b, err := json.Marshal(s)
	if err != nil {
		return minimalSchema, nil, fmt.Errorf("cannot encode JSON schema of %v: %w", t, err)
	}
	return b, slices.Clone(s.Required), nil
}

// isRecursive reports whether the struct type t refers to itself, directly
// or through other types. Such types cannot be fully inlined.
func isRecursive(t reflect.Type) bool {
	var visit func(t reflect.Type, stack map[reflect.Type]bool) bool
	visit = func(t reflect.Type, stack map[reflect.Type]bool) bool {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			return visit(t.Elem(), stack)
		case reflect.Struct:
			if stack[t] {
				return true
			}
			stack[t] = true
			defer delete(stack, t)
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() && !f.Anonymous {
					continue
				}
				if visit(f.Type, stack) {
					return true
				}
			}
		}
		return false
	}
	return visit(t, map[reflect.Type]bool{})
}
