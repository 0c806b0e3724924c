package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
)

// DuplicateToolError is returned by Set.Add and NewSet when a tool with the
// same name is already registered.
type DuplicateToolError struct {
	// Name is the duplicated tool name.
	Name string
}

// Error implements error.
func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("tools: duplicate tool name %q", e.Name)
}

// UnknownToolError is returned by Set.Call for a name that is not registered.
type UnknownToolError struct {
	// Name is the requested tool name.
	Name string
}

// Error implements error.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("tools: unknown tool %q", e.Name)
}

// Set is a registry of tools with unique names, kept in insertion order.
// The zero value is an empty set ready to use; a Set is safe for concurrent
// use.
type Set struct {
	mu     sync.RWMutex
	order  []Tool
	byName map[string]Tool
}

// NewSet returns a Set holding tools. It fails on the first invalid or
// duplicated tool.
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{}
	for _, t := range tools {
		if err := s.Add(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// validName matches the tool names accepted by the major LLM APIs.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// CheckSchema reports whether schema can be a tool's parameters for the
// model providers: a JSON object whose "type" is "object". Its error reads
// after the schema's name ("parameters schema has type …").
func CheckSchema(schema json.RawMessage) error {
	var v struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(schema, &v); err != nil {
		return fmt.Errorf("schema is not a JSON object: %w", err)
	}
	if v.Type != "object" {
		b, _ := json.Marshal(v.Type)
		return fmt.Errorf("schema has type %s, want \"object\"", b)
	}
	return nil
}

// Add registers t. It returns *DuplicateToolError if a tool with the same
// name is already registered, and an error if the name is not made of 1 to 64
// letters, digits, '_' or '-', or if Parameters is not a JSON object schema.
func (s *Set) Add(t Tool) error {
	if t == nil {
		return errors.New("tools: nil tool")
	}
	name := t.Name()
	if !validName.MatchString(name) {
		return fmt.Errorf("tools: invalid tool name %q: use 1-64 letters, digits, '_' or '-'", name)
	}
	if err := CheckSchema(t.Parameters()); err != nil {
		return fmt.Errorf("tools: tool %q: parameters %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return &DuplicateToolError{Name: name}
	}
	if s.byName == nil {
		s.byName = make(map[string]Tool)
	}
	s.byName[name] = t
	s.order = append(s.order, t)
	return nil
}

// Get returns the tool registered under name.
func (s *Set) Get(name string) (Tool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byName[name]
	return t, ok
}

// Tools returns the registered tools in the order they were added.
func (s *Set) Tools() []Tool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.order)
}

// Call calls the tool registered under name. It returns *UnknownToolError if
// there is none.
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	t, ok := s.Get(name)
	if !ok {
		return "", &UnknownToolError{Name: name}
	}
	return t.Call(ctx, args)
}
