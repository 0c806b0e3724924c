package server

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/agentgraph/agentgraph/graph"
)

// stateSchema is the JSON Schema of a state struct as the API reads and
// writes it: each field shown as the JSON of its value (a state.Value[T]
// as a T, an Append[T] as a list of T, …).
func stateSchema(name string, t reflect.Type, fields []fieldCodec) map[string]any {
	props := map[string]any{}
	for _, f := range fields {
		props[f.key] = fieldSchema(f)
	}
	s := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"title":   t.Name(), "type": "object", "properties": props,
	}
	return map[string]any{
		"graph_id": name, "input_schema": s, "output_schema": s, "state_schema": s,
		"config_schema": nil, "context_schema": nil,
	}
}

func fieldSchema(f fieldCodec) any {
	switch shapeOf(f) {
	case messageListShape:
		return map[string]any{"type": "array", "items": messageSchema()}
	case oneMessage:
		return messageSchema()
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: true}
	s := r.ReflectFromType(f.inner)
	s.Version, s.ID = "", ""
	b, err := json.Marshal(s)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return map[string]any{}
	}
	return out
}

// messageSchema describes a message as the server shows it (LangChain's
// serialization); it takes other forms too (see package state), so other
// properties are allowed.
func messageSchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":         map[string]any{"type": "string", "enum": []string{"human", "ai", "system", "tool", "function", "chat", "remove"}},
			"content":      map[string]any{"anyOf": []any{str, map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
			"id":           str,
			"name":         str,
			"tool_calls":   map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"tool_call_id": str,
		},
		"additionalProperties": true,
	}
}

// drawing is the API's graph drawing: {nodes, edges}.
type drawing struct {
	Nodes []drawNode `json:"nodes"`
	Edges []drawEdge `json:"edges"`
}

type drawNode struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data any    `json:"data"`
}

type drawEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional"`
	Data        string `json:"data,omitempty"`
}

// structure is what drawingOf reads of a graph (see graph.Graph.Nodes
// and Edges).
type structure interface {
	Nodes() []string
	Edges() []graph.Edge
}

// drawingOf builds the API's drawing of g: start, its nodes, end, and
// its edges (a join's are not conditional).
func drawingOf(g structure) drawing {
	d := drawing{Nodes: []drawNode{}, Edges: []drawEdge{}}
	add := func(n string) {
		if n == graph.Start || n == graph.End {
			d.Nodes = append(d.Nodes, drawNode{ID: n, Type: "schema", Data: n})
			return
		}
		d.Nodes = append(d.Nodes, drawNode{ID: n, Type: "runnable", Data: map[string]any{"id": []string{"agentgraph", n}, "name": n}})
	}
	add(graph.Start)
	for _, n := range g.Nodes() {
		add(n)
	}
	for _, e := range g.Edges() {
		d.Edges = append(d.Edges, drawEdge{Source: e.From, Target: e.To, Conditional: e.Conditional, Data: e.Label})
	}
	add(graph.End)
	return d
}

// uuidNamespaceURL is the namespace LangGraph servers hash graph ids in.
var uuidNamespaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x21, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// graphAssistantID is the id of a graph's system assistant:
// uuid5(name, 6ba7b821-9dad-11d1-80b4-00c04fd430c8), as LangGraph servers
// compute it.
func graphAssistantID(name string) string {
	h := sha1.New()
	h.Write(uuidNamespaceURL[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// validUUID reports whether s is a UUID in its canonical text form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
