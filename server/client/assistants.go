package client

import (
	"context"
	"net/url"
	"strconv"
)

// Assistants is the assistants group of a [Client].
type Assistants struct{ c *Client }

// AssistantSearch filters [Assistants.Search]; its zero value finds the
// first page of every assistant.
type AssistantSearch struct {
	GraphID   string         `json:"graph_id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Limit     int            `json:"limit,omitempty"`
	Offset    int            `json:"offset,omitempty"`
	SortBy    string         `json:"sort_by,omitempty"`
	SortOrder string         `json:"sort_order,omitempty"`
}

// Search returns the assistants matching q.
func (a *Assistants) Search(ctx context.Context, q AssistantSearch) ([]Assistant, error) {
	var out []Assistant
	err := a.c.do(ctx, "POST", "/assistants/search", nil, q, &out)
	return out, err
}

// Get returns the assistant id (an assistant id, or a graph's name).
func (a *Assistants) Get(ctx context.Context, id string) (*Assistant, error) {
	var out Assistant
	if err := a.c.do(ctx, "GET", "/assistants/"+seg(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Graph returns the drawing of assistant id's graph; xray > 0 draws
// subgraphs that many levels deep.
func (a *Assistants) Graph(ctx context.Context, id string, xray int) (*GraphDrawing, error) {
	var q url.Values
	if xray > 0 {
		q = url.Values{"xray": {strconv.Itoa(xray)}}
	}
	var out GraphDrawing
	if err := a.c.do(ctx, "GET", "/assistants/"+seg(id)+"/graph", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Schemas returns the JSON Schemas of assistant id's graph.
func (a *Assistants) Schemas(ctx context.Context, id string) (*Schemas, error) {
	var out Schemas
	if err := a.c.do(ctx, "GET", "/assistants/"+seg(id)+"/schemas", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
