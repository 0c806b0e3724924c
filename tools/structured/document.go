package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds the nesting of a JSON document, as encoding/json and
// go.yaml.in/yaml/v3 bound theirs.
const maxDepth = 10000

// object is a JSON object that keeps its keys in the order of the document,
// so that setting one key does not reorder a file such as package.json.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// set sets k to v, appending k when it is new.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// decodeJSON parses one JSON document: objects as *object, numbers as
// json.Number (so that they are written back as they were read). Data after
// the document is an error.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	switch _, err := dec.Token(); {
	case err == nil:
		return nil, errors.New("data after the document")
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("after the document: %w", err)
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth >= maxDepth {
		return nil, fmt.Errorf("exceeded max depth of %d", maxDepth)
	}
	switch d {
	case '{':
		o := newObject()
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := tok.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", tok)
			}
			v, err := decodeJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return o, nil
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// encodeJSON writes v indented by two spaces, objects' keys in their order
// (a map's sorted), numbers as they were read, and <, > and & unescaped.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v any, depth int) error {
	indent := func(d int) {
		buf.WriteByte('\n')
		buf.WriteString(strings.Repeat("  ", d))
	}
	switch t := v.(type) {
	case *object:
		if len(t.keys) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeScalar(buf, k); err != nil {
				return err
			}
			buf.WriteString(": ")
			if err := writeJSON(buf, t.vals[k], depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		buf.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return writeJSON(buf, &object{keys: keys, vals: t}, depth)
	case []any:
		if len(t) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeJSON(buf, e, depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		buf.WriteByte(']')
	default:
		return writeScalar(buf, v)
	}
	return nil
}

// writeScalar writes a string, number, boolean or null.
func writeScalar(buf *bytes.Buffer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}

// yamlNode returns the YAML node of v, a value of decodeJSON: objects keep
// their key order and numbers their text.
func yamlNode(v any) (*yaml.Node, error) {
	switch t := v.(type) {
	case *object:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range t.keys {
			kn, err := yamlNode(k)
			if err != nil {
				return nil, err
			}
			vn, err := yamlNode(t.vals[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, kn, vn)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range t {
			en, err := yamlNode(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, en)
		}
		return n, nil
	case json.Number:
		// A plain scalar keeps the number's text; YAML reads it as a
		// number (or, beyond float64's range, as a string, as it reads
		// such a number in any file).
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.String()}, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return n, nil
}

// decodeYAML parses data, which must hold at most one YAML document, into
// its node (nil for an empty file).
func decodeYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		return nil, err
	}
	return nil, errors.New("the file holds several YAML documents; only single-document files are handled")
}

// yamlValue returns the value of doc (nil for none) with maps of string
// keys, so that it encodes as JSON.
func yamlValue(doc *yaml.Node) (any, error) {
	if doc == nil {
		return nil, nil
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	return normalizeYAML(v), nil
}

// setYAML sets the value at path of the node n to v, creating mappings on
// the way; an index of a sequence must exist. The rest of the document —
// other values as written, tags, anchors, comments — is kept. key is the
// whole path, for errors.
func setYAML(n *yaml.Node, key string, path []string, v *yaml.Node) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			n.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		return setYAML(n.Content[0], key, path, v)
	}
	if len(path) == 0 {
		v.HeadComment, v.LineComment, v.FootComment = n.HeadComment, n.LineComment, n.FootComment
		v.Anchor = n.Anchor
		*n = *v
		return nil
	}
	seg := path[0]
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() != "!!null" {
			return &KeyPathError{Key: key, At: seg}
		}
		// A null value becomes the mapping the path goes through.
		n.Kind, n.Tag, n.Value, n.Style = yaml.MappingNode, "!!map", "", 0
		return setYAML(n, key, path, v)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == seg && k.ShortTag() != "!!merge" {
				return setYAML(n.Content[i+1], key, path[1:], v)
			}
		}
		child := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		if err := setYAML(child, key, path[1:], v); err != nil {
			return err
		}
		kn, err := yamlNode(seg)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, kn, child)
		return nil
	case yaml.SequenceNode:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(n.Content) {
			return &KeyPathError{Key: key, At: seg}
		}
		return setYAML(n.Content[i], key, path[1:], v)
	case yaml.AliasNode:
		at := strings.TrimSuffix(key, "."+strings.Join(path, "."))
		return fmt.Errorf("key %q: the value at %q is an alias (*%s); set the anchored value instead", key, at, n.Value)
	}
	return &KeyPathError{Key: key, At: seg}
}
