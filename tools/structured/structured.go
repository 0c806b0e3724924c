// Package structured provides tools that read and write structured data
// files of a workspace — JSON, YAML (go.yaml.in/yaml/v3) and INI
// (gopkg.in/ini.v1) — for LLM agents. They do their I/O through
// tools.Workspace.ReadFile and WriteFile, so they are confined like the
// file tools of package tools. They live in a package of their own so that
// programs using package tools do not link the YAML and INI parsers.
package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"gopkg.in/ini.v1"

	"github.com/agentgraph/agentgraph/tools"
)

// StructuredReadArgs are the arguments of json_read and yaml_read.
type StructuredReadArgs struct {
	// Path is the file to read.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root."`
	// Key selects a value inside the document: keys and array indexes
	// separated by dots ("servers.0.port"); empty selects the whole
	// document.
	Key string `json:"key,omitempty" jsonschema_description:"Dotted path of the value to return, e.g. servers.0.port. Default: the whole document."`
}

// StructuredWriteArgs are the arguments of json_write and yaml_write.
type StructuredWriteArgs struct {
	// Path is the file to write.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root. Created with its parent directories if missing."`
	// Key, when set, replaces only the value at that dotted path of the
	// existing document (objects on the way are created).
	Key string `json:"key,omitempty" jsonschema_description:"Dotted path of the value to set in the existing document; empty replaces the whole document."`
	// Value is the JSON value to write.
	Value json.RawMessage `json:"value" jsonschema:"required" jsonschema_description:"The value to write, as JSON (object, array, string, number, boolean or null)."`
}

// maxOutput is the longest text json_read and yaml_read return, file_read's
// limit: a larger value is an error that asks for a key path.
const maxOutput = tools.MaxReadBytes

// structuredFormat is a data format the json_* and yaml_* tools handle.
type structuredFormat struct {
	name string
	// decode parses a file into a value of decodeJSON's kinds (objects as
	// *object) or of map[string]any.
	decode func(data []byte) (any, error)
	// write returns the file with value (a value of decodeJSON) at the
	// dotted path key of data (the existing file, nil if none), or as the
	// whole document when key is empty.
	write func(data []byte, key string, value any) ([]byte, error)
}

var jsonFormat = structuredFormat{
	name:   "json",
	decode: decodeJSON,
	write: func(data []byte, key string, value any) ([]byte, error) {
		doc := value
		if key != "" {
			var existing any = newObject()
			if len(bytes.TrimSpace(data)) > 0 {
				var err error
				if existing, err = decodeJSON(data); err != nil {
					return nil, &invalidError{err: err}
				}
			}
			var err error
			if doc, err = setPath(existing, key, strings.Split(key, "."), value); err != nil {
				return nil, err
			}
		}
		out, err := encodeJSON(doc)
		return append(out, '\n'), err
	},
}

var yamlFormat = structuredFormat{
	name: "yaml",
	decode: func(data []byte) (any, error) {
		doc, err := decodeYAML(data)
		if err != nil {
			return nil, err
		}
		return yamlValue(doc)
	},
	write: func(data []byte, key string, value any) ([]byte, error) {
		vn, err := yamlNode(value)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return encodeYAML(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{vn}}, 2)
		}
		doc, err := decodeYAML(data)
		if err == nil && doc != nil {
			// What yaml_read would refuse (duplicate keys, say) is not
			// edited either.
			_, err = yamlValue(doc)
		}
		if err != nil {
			return nil, &invalidError{err: err}
		}
		if doc == nil {
			doc = &yaml.Node{Kind: yaml.DocumentNode}
		}
		if err := setYAML(doc, key, strings.Split(key, "."), vn); err != nil {
			return nil, err
		}
		return encodeYAML(doc, yamlIndent(data))
	},
}

// invalidError reports an existing file that does not parse.
type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// encodeYAML encodes doc with indent spaces.
func encodeYAML(doc *yaml.Node, indent int) ([]byte, error) {
	untagMergeKeys(doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(indent)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// untagMergeKeys clears the tag of the merge keys ("<<") of n, which
// go.yaml.in/yaml/v3 would otherwise write as "!!merge <<"; the key is
// still read as a merge key.
func untagMergeKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
				k.Tag = ""
			}
		}
	}
	for _, c := range n.Content {
		untagMergeKeys(c)
	}
}

// yamlIndent guesses the indentation of a YAML file: its smallest
// indentation of a line, between 2 and 8 (2 when it has none).
func yamlIndent(data []byte) int {
	indent := 0
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		n := len(line) - len(trimmed)
		if n == 0 || trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if indent == 0 || n < indent {
			indent = n
		}
	}
	return min(max(indent, 2), 8)
}

// normalizeYAML turns the map[any]any yaml may produce into
// map[string]any, so that the value encodes as JSON.
func normalizeYAML(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeYAML(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = normalizeYAML(e)
		}
	case float64:
		// JSON has no infinities and NaN: give YAML's spelling.
		switch {
		case math.IsInf(t, 1):
			return ".inf"
		case math.IsInf(t, -1):
			return "-.inf"
		case math.IsNaN(t):
			return ".nan"
		}
	}
	return v
}

// JSONRead returns the json_read tool: it parses a JSON file of the
// workspace and returns the document, or the value at a dotted key path,
// as indented JSON (numbers and the order of keys as in the file). A file
// with data after the document is not valid JSON. A value of more than
// 200 KB is an error that asks for a narrower key path.
func JSONRead(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return structuredRead(ws, jsonFormat, opts)
}

// JSONWrite returns the json_write tool: it writes a JSON value, indented
// by two spaces, as a whole file or at a dotted key path of the existing
// document. The rest of the document keeps its keys' order and its numbers
// as written; its layout is not kept.
func JSONWrite(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return structuredWrite(ws, jsonFormat, opts)
}

// YAMLRead returns the yaml_read tool: it parses a YAML file of the
// workspace (with go.yaml.in/yaml/v3) and returns the document, or the
// value at a dotted key path, as indented JSON. A file of several
// documents ("---") is refused. The limits of go.yaml.in/yaml/v3 apply
// (excessive aliasing, depth over 10000), and the 200 KB of [JSONRead].
func YAMLRead(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return structuredRead(ws, yamlFormat, opts)
}

// YAMLWrite returns the yaml_write tool: it writes a JSON value as YAML, as
// a whole file or at a dotted key path of the existing document. Setting a
// key keeps the rest of the document — values as written, tags, anchors and
// comments — but not its exact layout (it is re-encoded with its smallest
// indentation). A file of several documents is refused, and so is a path
// through an alias.
func YAMLWrite(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return structuredWrite(ws, yamlFormat, opts)
}

func structuredRead(ws *tools.Workspace, f structuredFormat, opts []tools.Option) tools.Tool {
	name := f.name + "_read"
	return tools.New(name,
		"Parse a "+strings.ToUpper(f.name)+" file of the workspace and return it (or the value at a dotted key path) as JSON.",
		func(ctx context.Context, args StructuredReadArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			data, err := ws.ReadFile(args.Path, opts...)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			doc, err := f.decode(data)
			if err != nil {
				return "", fmt.Errorf("%s: %s is not valid %s: %w", name, args.Path, strings.ToUpper(f.name), err)
			}
			v, err := lookupPath(doc, args.Key)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			out, err := encodeJSON(v)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			if len(out) > maxOutput {
				return "", fmt.Errorf("%s: the value is %d bytes as JSON, over the %d KB limit; select a part of it with key", name, len(out), maxOutput>>10)
			}
			return string(out), nil
		})
}

func structuredWrite(ws *tools.Workspace, f structuredFormat, opts []tools.Option) tools.Tool {
	name := f.name + "_write"
	return tools.New(name,
		"Write a JSON value to a "+strings.ToUpper(f.name)+" file of the workspace: the whole document, or only the value at a dotted key path.",
		func(ctx context.Context, args StructuredWriteArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			value, err := decodeJSON(args.Value)
			if err != nil {
				return "", fmt.Errorf("%s: value is not valid JSON: %w", name, err)
			}
			var data []byte
			if args.Key != "" {
				data, err = ws.ReadFile(args.Path, opts...)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", fmt.Errorf("%s: %w", name, err)
				}
			}
			out, err := f.write(data, args.Key, value)
			if ie := (*invalidError)(nil); errors.As(err, &ie) {
				return "", fmt.Errorf("%s: %s is not valid %s: %w", name, args.Path, strings.ToUpper(f.name), ie.err)
			}
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			if _, err := ws.WriteFile(args.Path, out, opts...); err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			return fmt.Sprintf("wrote %s (%d bytes)", args.Path, len(out)), nil
		})
}

// KeyPathError reports a dotted key path that does not lead to a value.
type KeyPathError struct {
	// Key is the whole path and At the segment that failed.
	Key, At string
}

// Error implements error.
func (e *KeyPathError) Error() string {
	return fmt.Sprintf("key %q: no value at %q", e.Key, e.At)
}

// lookupPath returns the value at the dotted path key of doc.
func lookupPath(doc any, key string) (any, error) {
	if key == "" {
		return doc, nil
	}
	cur := doc
	for _, seg := range strings.Split(key, ".") {
		var ok bool
		switch t := cur.(type) {
		case *object:
			cur, ok = t.get(seg)
		case map[string]any:
			cur, ok = t[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if ok = err == nil && i >= 0 && i < len(t); ok {
				cur = t[i]
			}
		}
		if !ok {
			return nil, &KeyPathError{Key: key, At: seg}
		}
	}
	return cur, nil
}

// setPath returns doc, a value of decodeJSON, with the value at path set to
// v, creating objects on the way; an index of an array must exist. key is
// the whole path, for errors.
func setPath(doc any, key string, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	seg := path[0]
	switch t := doc.(type) {
	case *object:
		cur, _ := t.get(seg)
		child, err := setPath(cur, key, path[1:], v)
		if err != nil {
			return nil, err
		}
		t.set(seg, child)
		return t, nil
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(t) {
			return nil, &KeyPathError{Key: key, At: seg}
		}
		child, err := setPath(t[i], key, path[1:], v)
		if err != nil {
			return nil, err
		}
		t[i] = child
		return t, nil
	case nil:
		return setPath(newObject(), key, path, v)
	}
	return nil, &KeyPathError{Key: key, At: seg}
}

// INIReadArgs are the arguments of the ini_read tool.
type INIReadArgs struct {
	// Path is the file to read.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root."`
	// Section limits the output to one section ("" is the default section
	// of keys before any header, when Key is set).
	Section string `json:"section,omitempty" jsonschema_description:"Only this section. Default: every section."`
	// Key returns only this key's value of Section.
	Key string `json:"key,omitempty" jsonschema_description:"Only this key of the section; its value is returned as plain text."`
}

// INIWriteArgs are the arguments of the ini_write tool.
type INIWriteArgs struct {
	// Path is the file to change.
	Path string `json:"path" jsonschema:"required" jsonschema_description:"File path, relative to the workspace root. Created if missing."`
	// Section is the section of the key ("" for the default section).
	Section string `json:"section,omitempty" jsonschema_description:"Section of the key. Default: the keys before any section header."`
	// Key is the key to set or delete.
	Key string `json:"key" jsonschema:"required" jsonschema_description:"Key to set (or delete)."`
	// Value is the new value.
	Value string `json:"value,omitempty" jsonschema_description:"New value of the key."`
	// Delete removes the key instead of setting it.
	Delete bool `json:"delete,omitempty" jsonschema_description:"Delete the key instead of setting it."`
}

// INIRead returns the ini_read tool, which parses an INI file of the
// workspace with gopkg.in/ini.v1 and returns it as a JSON object of
// sections (the keys before any header are under "DEFAULT"), one section,
// or one key's value. Comments are whole lines starting with ";" or "#": a
// ";" or "#" after a value is part of it, and surrounding quotes are kept.
func INIRead(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return tools.New("ini_read",
		"Parse an INI file of the workspace; return all sections as JSON, one section, or one key's value.",
		func(ctx context.Context, args INIReadArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			data, err := ws.ReadFile(args.Path, opts...)
			if err != nil {
				return "", fmt.Errorf("ini_read: %w", err)
			}
			f, err := loadINI(data)
			if err != nil {
				return "", fmt.Errorf("ini_read: %s is not valid INI: %w", args.Path, err)
			}
			if args.Key != "" {
				s, err := f.GetSection(sectionName(args.Section))
				if err != nil || !s.HasKey(args.Key) {
					return "", fmt.Errorf("ini_read: no key %q in section %q of %s", args.Key, args.Section, args.Path)
				}
				return s.Key(args.Key).String(), nil
			}
			out := map[string]map[string]string{}
			for _, s := range f.Sections() {
				if args.Section != "" && s.Name() != args.Section {
					continue
				}
				if len(s.Keys()) == 0 && s.Name() == ini.DefaultSection {
					continue
				}
				out[s.Name()] = s.KeysHash()
			}
			if args.Section != "" && len(out) == 0 {
				return "", fmt.Errorf("ini_read: no section %q in %s", args.Section, args.Path)
			}
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				return "", fmt.Errorf("ini_read: %w", err)
			}
			return string(b), nil
		})
}

// INIWrite returns the ini_write tool, which sets or deletes one key of an
// INI file of the workspace with gopkg.in/ini.v1, keeping the other keys,
// sections and comments byte for byte where gopkg.in/ini.v1 can (it
// realigns "=" signs). It refuses a key or value that would not read back
// unchanged, such as a line break in a key or a value with surrounding spaces.
func INIWrite(ws *tools.Workspace, opts ...tools.Option) tools.Tool {
	return tools.New("ini_write",
		"Set (or delete) one key of an INI file of the workspace, keeping the rest of the file.",
		func(ctx context.Context, args INIWriteArgs) (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			if strings.TrimSpace(args.Key) == "" {
				return "", errors.New("ini_write: key is empty")
			}
			data, err := ws.ReadFile(args.Path, opts...)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("ini_write: %w", err)
			}
			f, err := loadINI(data)
			if err != nil {
				return "", fmt.Errorf("ini_write: %s is not valid INI: %w", args.Path, err)
			}
			s := f.Section(sectionName(args.Section))
			verb := "set"
			if args.Delete {
				if !s.HasKey(args.Key) {
					return "", fmt.Errorf("ini_write: no key %q in section %q of %s", args.Key, args.Section, args.Path)
				}
				s.DeleteKey(args.Key)
				verb = "deleted"
			} else {
				s.Key(args.Key).SetValue(args.Value)
			}
			var buf bytes.Buffer
			if _, err := f.WriteTo(&buf); err != nil {
				return "", fmt.Errorf("ini_write: %w", err)
			}
			if err := sameINI(f, buf.Bytes()); err != nil {
				return "", fmt.Errorf("ini_write: key %q or its value cannot be stored in INI as given: %w", args.Key, err)
			}
			if _, err := ws.WriteFile(args.Path, buf.Bytes(), opts...); err != nil {
				return "", fmt.Errorf("ini_write: %w", err)
			}
			return fmt.Sprintf("%s %s in section %q of %s", verb, args.Key, args.Section, args.Path), nil
		})
}

// iniOptions make values round-trip: ";" and "#" inside a value are part of
// it (as in Python's configparser, comments are whole lines only), a
// trailing backslash does not join the next line, and surrounding quotes
// stay part of the value, so that a key the tool does not touch is written
// back as it was read.
var iniOptions = ini.LoadOptions{
	IgnoreInlineComment:     true,
	IgnoreContinuation:      true,
	PreserveSurroundedQuote: true,
}

// loadINI parses data with iniOptions.
func loadINI(data []byte) (*ini.File, error) {
	return ini.LoadSources(iniOptions, data)
}

// sameINI parses out, the serialisation of f, and reports whether it has
// other sections, keys or values than f: a key or value the INI syntax
// cannot hold (a line break in a key, surrounding spaces, a key that
// starts a comment) would otherwise change the file silently.
func sameINI(f *ini.File, out []byte) error {
	g, err := loadINI(out)
	if err != nil {
		return err
	}
	want, got := iniMap(f), iniMap(g)
	if len(want) != len(got) {
		return fmt.Errorf("writing it gives %d sections instead of %d", len(got), len(want))
	}
	for name, keys := range want {
		gk, ok := got[name]
		if !ok {
			return fmt.Errorf("writing it loses section %q", name)
		}
		if len(gk) != len(keys) {
			return fmt.Errorf("writing it gives %d keys in section %q instead of %d", len(gk), name, len(keys))
		}
		for k, v := range keys {
			if gv, ok := gk[k]; !ok || gv != v {
				return fmt.Errorf("key %q of section %q reads back as %q instead of %q", k, name, gv, v)
			}
		}
	}
	return nil
}

// iniMap returns the sections of f that have keys, with their values.
func iniMap(f *ini.File) map[string]map[string]string {
	m := map[string]map[string]string{}
	for _, s := range f.Sections() {
		if len(s.Keys()) > 0 {
			m[s.Name()] = s.KeysHash()
		}
	}
	return m
}

// sectionName maps "" to ini's default section.
func sectionName(s string) string {
	if s == "" {
		return ini.DefaultSection
	}
	return s
}

// Tools returns the structured-data tools: json_read, json_write,
// yaml_read, yaml_write, ini_read and ini_write, sorted by name.
func Tools(ws *tools.Workspace, opts ...tools.Option) []tools.Tool {
	ts := []tools.Tool{JSONRead(ws, opts...), JSONWrite(ws, opts...), YAMLRead(ws, opts...), YAMLWrite(ws, opts...), INIRead(ws, opts...), INIWrite(ws, opts...)}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name() < ts[j].Name() })
	return ts
}
