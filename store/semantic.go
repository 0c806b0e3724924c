package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// An Embedder turns texts into vectors, one per text and in the same
// order, all of the same dimension. It has the method set of
// llm.Embedder, so any embedder of package llm (a provider's, or the
// offline llm.HashingEmbedder) configures an [IndexConfig] as it is.
// Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// IndexConfig turns on semantic search (LangGraph's index configuration):
// each item put is embedded, and Search with [Query] ranks items by the
// cosine similarity of their vectors to the query's.
type IndexConfig struct {
	// Embedder embeds the indexed texts of items and the queries. It is
	// required.
	Embedder Embedder
	// Dims is the dimension of the Embedder's vectors; it is required,
	// and a vector of another dimension is an error.
	Dims int
	// Fields are the paths of the texts to embed in each value; nil
	// means ["$"], the whole value, and an empty list indexes only the
	// items put with [IndexFields]. See [IndexFields] for the syntax.
	Fields []string
}

// ErrNoIndex is returned by Search given a [Query] on a store opened
// without an [IndexConfig]. LangGraph's stores ignore the query in that
// case and search as without one.
var ErrNoIndex = errors.New("store: query search needs a store opened with an index")

// FieldVector is the vector of one indexed text of an item.
type FieldVector struct {
	// Field is the path the text was found at; when the path yields
	// several texts, the i-th is at path + "." + i, as in LangGraph.
	Field string
	// Vector is the text's embedding.
	Vector []float32
}

// Index is a validated [IndexConfig], for implementations of [Store]: it
// extracts and embeds the texts of values and queries.
type Index struct {
	embedder Embedder
	dims     int
	fields   []fieldPath
}

// NewIndex validates cfg: it fails with an error wrapping
// [ErrInvalidOption] without an Embedder, with Dims below 1 or with a
// field path it cannot parse.
func NewIndex(cfg IndexConfig) (*Index, error) {
	if cfg.Embedder == nil {
		return nil, fmt.Errorf("%w: index: no embedder", ErrInvalidOption)
	}
	if cfg.Dims < 1 {
		return nil, fmt.Errorf("%w: index: dims %d is below 1", ErrInvalidOption, cfg.Dims)
	}
	fields := cfg.Fields
	if fields == nil {
		fields = []string{"$"}
	}
	x := &Index{embedder: cfg.Embedder, dims: cfg.Dims}
	for _, f := range fields {
		p, err := parseFieldPath(f)
		if err != nil {
			return nil, fmt.Errorf("%w: index: %w", ErrInvalidOption, err)
		}
		x.fields = append(x.fields, p)
	}
	return x, nil
}

// Dims returns the dimension of the index's vectors.
func (x *Index) Dims() int { return x.dims }

// EmbedValue returns the vectors of value (decoded as by
// [UnmarshalValue]) for the fields cfg names, or the index's fields if it
// names none. It returns no vectors, and does not call the embedder, if
// cfg says not to index the item or no field is present in value.
func (x *Index) EmbedValue(ctx context.Context, value map[string]any, cfg PutConfig) ([]FieldVector, error) {
	fields := x.fields
	if cfg.Fields != nil {
		fields = fields[:0:0]
		for _, f := range cfg.Fields {
			p, err := parseFieldPath(f)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
			}
			fields = append(fields, p)
		}
	}
	var names, texts []string
	seen := map[string]bool{}
	for _, f := range fields {
		found := f.texts(value)
		for i, t := range found {
			name := f.raw
			if len(found) > 1 {
				name += "." + strconv.Itoa(i)
			}
			if seen[name] {
				continue // a path listed twice
			}
			seen[name] = true
			names, texts = append(names, name), append(texts, t)
		}
	}
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := x.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([]FieldVector, len(texts))
	for i := range texts {
		// A copy: the embedder may reuse its buffers.
		out[i] = FieldVector{Field: names[i], Vector: slices.Clone(vecs[i])}
	}
	return out, nil
}

// EmbedQuery returns the vector of a query.
func (x *Index) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	vecs, err := x.embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// embed calls the embedder and checks what it returns.
func (x *Index) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := x.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embed: the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != x.dims {
			return nil, fmt.Errorf("embed: the embedder returned a vector of %d dimensions, the index has %d", len(v), x.dims)
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("embed: the embedder returned %v in the vector of text %d", f, i)
			}
		}
	}
	return vecs, nil
}

// CosineSimilarity returns the cosine of the angle between a and b,
// computed in float64: 1 for vectors pointing the same way, 0 for
// orthogonal ones, and 0 if either is all zeros or their lengths differ.
func CosineSimilarity(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// fieldPath is a parsed field path; steps is nil for "$".
type fieldPath struct {
	raw   string
	steps []pathStep
}

type pathStep struct {
	key   string
	index int  // for an array index
	isIdx bool // [n]
	all   bool // [*] or *
}

func parseFieldPath(raw string) (fieldPath, error) {
	p := fieldPath{raw: raw}
	if raw == "$" {
		return p, nil
	}
	if strings.ContainsAny(raw, "{}") {
		return fieldPath{}, fmt.Errorf("field path %q: multi-field selection {a,b} is not supported; list the fields separately", raw)
	}
	for _, seg := range strings.Split(raw, ".") {
		name, brackets, _ := strings.Cut(seg, "[")
		if brackets != "" || strings.HasSuffix(seg, "[") {
			brackets = "[" + brackets
		}
		if strings.Contains(name, "]") {
			return fieldPath{}, fmt.Errorf("field path %q: unmatched ]", raw)
		}
		if name == "" && brackets == "" {
			return fieldPath{}, fmt.Errorf("field path %q: empty key", raw)
		}
		switch name {
		case "":
		case "*":
			p.steps = append(p.steps, pathStep{all: true})
		default:
			p.steps = append(p.steps, pathStep{key: name})
		}
		for brackets != "" {
			end := strings.IndexByte(brackets, ']')
			if brackets[0] != '[' || end < 0 {
				return fieldPath{}, fmt.Errorf("field path %q: want [index] after %q", raw, name)
			}
			inner := brackets[1:end]
			brackets = brackets[end+1:]
			if inner == "*" {
				p.steps = append(p.steps, pathStep{all: true, isIdx: true})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil {
				return fieldPath{}, fmt.Errorf("field path %q: array index %q is not an integer or *", raw, inner)
			}
			p.steps = append(p.steps, pathStep{index: n, isIdx: true})
		}
	}
	return p, nil
}

// texts returns the texts at p in v.
func (p fieldPath) texts(v map[string]any) []string {
	if p.steps == nil {
		return []string{jsonText(v)}
	}
	var out []string
	collect(v, p.steps, &out)
	return out
}

func collect(v any, steps []pathStep, out *[]string) {
	if len(steps) == 0 {
		switch v := v.(type) {
		case nil:
		case string:
			*out = append(*out, v)
		default:
			*out = append(*out, jsonText(v))
		}
		return
	}
	s, rest := steps[0], steps[1:]
	switch v := v.(type) {
	case map[string]any:
		if s.isIdx {
			return
		}
		if s.all {
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				collect(v[k], rest, out)
			}
			return
		}
		if x, ok := v[s.key]; ok {
			collect(x, rest, out)
		}
	case []any:
		switch {
		case s.all:
			for _, x := range v {
				collect(x, rest, out)
			}
		case s.isIdx:
			i := s.index
			if i < 0 {
				i += len(v)
			}
			if i >= 0 && i < len(v) {
				collect(v[i], rest, out)
			}
		}
	}
}

// jsonText returns v as JSON text, object keys sorted, HTML unescaped.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "" // unreachable: v was decoded from JSON
	}
	return strings.TrimSuffix(b.String(), "\n")
}
