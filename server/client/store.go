package client

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Store is the store group of a [Client]: the server's long-term memory,
// items under namespaces (lists of labels) and keys.
type Store struct{ c *Client }

// checkNamespace refuses what the query string of GET /store/items
// cannot carry: the labels travel joined with ".".
func checkNamespace(ns []string) error {
	if len(ns) == 0 {
		return fmt.Errorf("client: store namespace is empty")
	}
	for _, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			return fmt.Errorf("client: store namespace label %q is empty or contains a period", l)
		}
	}
	return nil
}

// Put writes value under namespace and key; ttl > 0 expires it (servers
// count in minutes, so ttl is rounded up to one).
func (s *Store) Put(ctx context.Context, namespace []string, key string, value map[string]any, ttl time.Duration) error {
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	body := struct {
		Namespace []string       `json:"namespace"`
		Key       string         `json:"key"`
		Value     map[string]any `json:"value"`
		TTL       *float64       `json:"ttl,omitempty"`
	}{Namespace: namespace, Key: key, Value: value}
	if value == nil {
		body.Value = map[string]any{}
	}
	if ttl > 0 {
		m := max(ttl.Minutes(), 1)
		body.TTL = &m
	}
	err := s.c.do(ctx, "PUT", "/store/items", nil, body, nil)
	return err
}

// Get returns the item under namespace and key, or nil when there is
// none.
func (s *Store) Get(ctx context.Context, namespace []string, key string) (*Item, error) {
	if err := checkNamespace(namespace); err != nil {
		return nil, err
	}
	q := url.Values{"namespace": {strings.Join(namespace, ".")}, "key": {key}}
	var out *Item
	if err := s.c.do(ctx, "GET", "/store/items", q, nil, &out); err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return out, nil
}

// Delete deletes the item under namespace and key.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	body := struct {
		Namespace []string `json:"namespace"`
		Key       string   `json:"key"`
	}{namespace, key}
	err := s.c.do(ctx, "DELETE", "/store/items", nil, body, nil)
	return err
}

// ItemSearch filters [Store.Search].
type ItemSearch struct {
	// NamespacePrefix is required: the items under it are searched.
	NamespacePrefix []string `json:"namespace_prefix"`
	// Filter matches items whose value has these top-level keys and
	// values.
	Filter map[string]any `json:"filter,omitempty"`
	// Query is a semantic search's query (servers with an index only).
	Query  string `json:"query,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Offset int    `json:"offset,omitempty"`
}

// Search returns the items matching q.
func (s *Store) Search(ctx context.Context, q ItemSearch) ([]Item, error) {
	if err := checkNamespace(q.NamespacePrefix); err != nil {
		return nil, err
	}
	var out struct {
		Items []Item `json:"items"`
	}
	err := s.c.do(ctx, "POST", "/store/items/search", nil, q, &out)
	return out.Items, err
}

// NamespaceList filters [Store.ListNamespaces]; its zero value lists the
// first page of every namespace.
type NamespaceList struct {
	Prefix   []string `json:"prefix,omitempty"`
	Suffix   []string `json:"suffix,omitempty"`
	MaxDepth int      `json:"max_depth,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	Offset   int      `json:"offset,omitempty"`
}

// ListNamespaces returns the namespaces that hold items, matching q.
func (s *Store) ListNamespaces(ctx context.Context, q NamespaceList) ([][]string, error) {
	var out struct {
		Namespaces [][]string `json:"namespaces"`
	}
	err := s.c.do(ctx, "POST", "/store/namespaces", nil, q, &out)
	return out.Namespaces, err
}
