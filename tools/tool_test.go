package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

type schemaInner struct {
	Flag bool `json:"flag" jsonschema:"description=A flag"`
}

type schemaArgs struct {
	Path    string      `json:"path" jsonschema:"required,description=File path"`
	Count   int         `json:"count,omitempty" jsonschema:"minimum=1,default=3"`
	Tags    []string    `json:"tags,omitempty" jsonschema_description:"Tags, comma free"`
	Inner   schemaInner `json:"inner"`
	Ignored string      `json:"-"`
}

func schemaMap(t *testing.T, tool Tool) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(tool.Parameters(), &m))
	return m
}

func TestNewDerivesInlineObjectSchema(t *testing.T) {
	t.Parallel()
	tool := New("x", "d", func(context.Context, schemaArgs) (string, error) { return "", nil })
	want := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"path"},
		"properties": map[string]any{
			"path":  map[string]any{"type": "string", "description": "File path"},
			"count": map[string]any{"type": "integer", "minimum": 1.0, "default": 3.0},
			"tags": map[string]any{
				"type":        "array",
				"items":       map[string]any{"type": "string"},
				"description": "Tags, comma free",
			},
			"inner": map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"properties": map[string]any{
					"flag": map[string]any{"type": "boolean", "description": "A flag"},
				},
			},
		},
	}
	require.Empty(t, cmp.Diff(want, schemaMap(t, tool)))
}

func TestNewSchemaOfEmptyStructHasProperties(t *testing.T) {
	t.Parallel()
	tool := New("x", "d", func(context.Context, struct{}) (string, error) { return "", nil })
	want := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
	require.Empty(t, cmp.Diff(want, schemaMap(t, tool)))
}

type treeNode struct {
	Name     string     `json:"name" jsonschema:"required"`
	Children []treeNode `json:"children,omitempty"`
}

func TestNewSchemaOfRecursiveTypeKeepsDefinitions(t *testing.T) {
	t.Parallel()
	tool := New("x", "d", func(context.Context, treeNode) (string, error) { return "", nil })
	m := schemaMap(t, tool)
	require.Equal(t, "object", m["type"])
	require.NotContains(t, m, "$ref")
	require.Contains(t, m, "$defs")
	defs := m["$defs"].(map[string]any)
	require.Contains(t, defs, "treeNode")

	out, err := tool.Call(context.Background(), json.RawMessage(`{"name":"a","children":[{"name":"b"}]}`))
	require.NoError(t, err)
	require.Empty(t, out)
}

func TestNewParametersReturnsCopy(t *testing.T) {
	t.Parallel()
	tool := New("x", "d", func(context.Context, schemaArgs) (string, error) { return "", nil })
	p := tool.Parameters()
	p[0] = 'X'
	require.True(t, json.Valid(tool.Parameters()))
}

func TestCallDecodesArguments(t *testing.T) {
	t.Parallel()
	var got schemaArgs
	tool := New("x", "d", func(_ context.Context, a schemaArgs) (string, error) {
		got = a
		return "ok", nil
	})
	out, err := tool.Call(context.Background(), json.RawMessage(`{"path":"a.go","count":2,"tags":["t"],"inner":{"flag":true}}`))
	require.NoError(t, err)
	require.Equal(t, "ok", out)
	want := schemaArgs{Path: "a.go", Count: 2, Tags: []string{"t"}, Inner: schemaInner{Flag: true}}
	require.Empty(t, cmp.Diff(want, got))
}

func TestCallRejectsBadArgumentsWithArgumentError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
	}{
		{"malformed JSON", `{"path":`},
		{"unknown field", `{"path":"a","bogus":1}`},
		{"unknown nested field", `{"path":"a","inner":{"nope":true}}`},
		{"wrong type", `{"path":5}`},
		{"missing required", `{"count":1}`},
		{"empty object with required", `{}`},
		{"trailing data", `{"path":"a"} {"path":"b"}`},
		{"array instead of object", `["a"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			tool := New("my_tool", "d", func(context.Context, schemaArgs) (string, error) {
				called = true
				return "", nil
			})
			_, err := tool.Call(context.Background(), json.RawMessage(tt.args))
			var argErr *ArgumentError
			require.ErrorAs(t, err, &argErr)
			require.Equal(t, "my_tool", argErr.Tool)
			require.Error(t, errors.Unwrap(err))
			require.False(t, called)
		})
	}
}

func TestCallTreatsEmptyArgumentsAsEmptyObject(t *testing.T) {
	t.Parallel()
	type optional struct {
		N int `json:"n,omitempty"`
	}
	for _, raw := range []string{"", "  ", "null", "{}"} {
		tool := New("x", "d", func(_ context.Context, a optional) (string, error) {
			return "called", nil
		})
		out, err := tool.Call(context.Background(), json.RawMessage(raw))
		require.NoError(t, err, "args %q", raw)
		require.Equal(t, "called", out)
	}
}

func TestCallPassesFunctionErrorsThrough(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("boom")
	tool := New("x", "d", func(context.Context, struct{}) (string, error) { return "", sentinel })
	_, err := tool.Call(context.Background(), nil)
	require.ErrorIs(t, err, sentinel)
	var argErr *ArgumentError
	require.False(t, errors.As(err, &argErr))
}

func TestCallWithDoneContextReturnsContextError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	tool := New("x", "d", func(context.Context, struct{}) (string, error) {
		called = true
		return "", nil
	})
	_, err := tool.Call(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called)
}

func TestCallWithNilFunctionErrors(t *testing.T) {
	t.Parallel()
	tool := New[struct{}]("x", "d", nil)
	_, err := tool.Call(context.Background(), nil)
	require.Error(t, err)
}

func TestSetRejectsDuplicateNames(t *testing.T) {
	t.Parallel()
	a := New("same", "a", func(context.Context, struct{}) (string, error) { return "a", nil })
	b := New("same", "b", func(context.Context, struct{}) (string, error) { return "b", nil })
	_, err := NewSet(a, b)
	var dup *DuplicateToolError
	require.ErrorAs(t, err, &dup)
	require.Equal(t, "same", dup.Name)

	var s Set
	require.NoError(t, s.Add(a))
	require.ErrorAs(t, s.Add(b), &dup)
	got, ok := s.Get("same")
	require.True(t, ok)
	require.Equal(t, "a", got.Description(), "the first registration must stay")
}

func TestSetRejectsInvalidTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool Tool
	}{
		{"nil", nil},
		{"empty name", New("", "d", func(context.Context, struct{}) (string, error) { return "", nil })},
		{"name with space", New("a b", "d", func(context.Context, struct{}) (string, error) { return "", nil })},
		{"non-object schema", New("n", "d", func(context.Context, int) (string, error) { return "", nil })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Set
			require.Error(t, s.Add(tt.tool))
			require.Empty(t, s.Tools())
		})
	}
}

func TestSetCallsToolsByNameInOrder(t *testing.T) {
	t.Parallel()
	echo := func(name string) Tool {
		return New(name, "d", func(context.Context, struct{}) (string, error) { return name, nil })
	}
	s, err := NewSet(echo("b"), echo("a"))
	require.NoError(t, err)
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name())
	}
	require.Equal(t, []string{"b", "a"}, names)

	out, err := s.Call(context.Background(), "a", nil)
	require.NoError(t, err)
	require.Equal(t, "a", out)

	_, err = s.Call(context.Background(), "missing", nil)
	var unknown *UnknownToolError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "missing", unknown.Name)
}

func TestCodingReturnsAllToolsWithValidSchemas(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	all := Coding(ws)
	s, err := NewSet(all...)
	require.NoError(t, err)
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name())
		require.NotEmpty(t, tool.Description(), tool.Name())
		m := schemaMap(t, tool)
		require.NotContains(t, m, "$ref", tool.Name())
		require.NotContains(t, m, "$defs", tool.Name())
		require.NotContains(t, m, "$schema", tool.Name())
		require.Equal(t, false, m["additionalProperties"], tool.Name())
	}
	want := []string{
		"bash_exec", "file_read", "file_list", "file_write", "file_patch", "grep",
		"run_tests", "web_search", "git_status", "git_diff", "git_log",
	}
	require.Equal(t, want, names)
}
