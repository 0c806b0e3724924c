package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/store/internal/clock"
	"github.com/agentgraph/agentgraph/store/internal/rank"
)

// Memory is a [Store] that keeps items in memory, for tests and
// single-process programs; it also implements [Sweeper] and
// [ClockSetter]. Values are kept as JSON text (that of [WithJSON] when
// given, returned as [Item.JSON]), so they read back exactly as from the
// SQLite and PostgreSQL stores. Search and ListNamespaces scan
// every item. It is safe for concurrent use. The zero value is an empty
// store ready to use, without an index, reading the time from time.Now,
// like the one [NewMemory] returns without options.
type Memory struct {
	clock    clock.Clock
	index    *Index // nil: no semantic search
	indexErr error  // an invalid IndexConfig, returned by Put and Search

	mu    sync.Mutex
	items map[string]map[string]*memItem // namespace joined with "." → key → item
}

var (
	_ Store       = (*Memory)(nil)
	_ Sweeper     = (*Memory)(nil)
	_ ClockSetter = (*Memory)(nil)
)

type memItem struct {
	namespace []string
	key       string
	raw       []byte         // the value as stored; never changed
	kept      bool           // raw is the text of WithJSON
	value     map[string]any // raw decoded, for filters; never handed out
	created   time.Time
	updated   time.Time
	expires   time.Time // zero: never
	ttl       time.Duration
	vectors   []FieldVector // never changed once set
}

func (it *memItem) live(now time.Time) bool {
	return it.expires.IsZero() || it.expires.After(now)
}

// json returns a copy of the text of WithJSON the item was put with, or
// nil.
func (it *memItem) json() []byte {
	if !it.kept {
		return nil
	}
	return slices.Clone(it.raw)
}

func (it *memItem) item() (Item, error) {
	v, err := UnmarshalValue(it.raw)
	if err != nil {
		return Item{}, err
	}
	return Item{
		Namespace: slices.Clone(it.namespace),
		Key:       it.key,
		Value:     v,
		JSON:      it.json(),
		CreatedAt: it.created,
		UpdatedAt: it.updated,
		ExpiresAt: it.expires,
	}, nil
}

// A MemoryOption configures [NewMemory].
type MemoryOption func(*Memory)

// WithClock makes the store read the current time from now instead of
// time.Now, as [Memory.SetClock] does.
func WithClock(now func() time.Time) MemoryOption {
	return func(m *Memory) { m.SetClock(now) }
}

// WithIndex turns on semantic search (see [IndexConfig] and [Query]).
// An invalid configuration makes every Put and Search fail with an error
// wrapping [ErrInvalidOption].
func WithIndex(cfg IndexConfig) MemoryOption {
	return func(m *Memory) { m.index, m.indexErr = NewIndex(cfg) }
}

// NewMemory returns an empty in-memory store.
func NewMemory(opts ...MemoryOption) *Memory {
	m := new(Memory)
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// SetClock implements [ClockSetter]; nil restores time.Now.
func (m *Memory) SetClock(now func() time.Time) {
	m.clock.Set(now)
}

func (m *Memory) now() time.Time { return m.clock.Now() }

// Get implements [Store].
func (m *Memory) Get(ctx context.Context, namespace []string, key string, opts ...GetOption) (*Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	if err := ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	cfg := NewGetConfig(opts...)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	it := m.items[strings.Join(namespace, ".")][key]
	if it == nil || !it.live(now) {
		return nil, nil
	}
	if cfg.RefreshTTL && it.ttl > 0 {
		it.expires = now.Add(it.ttl)
	}
	item, err := it.item()
	if err != nil {
		return nil, fmt.Errorf("store: get: %w", err)
	}
	return &item, nil
}

// Put implements [Store].
func (m *Memory) Put(ctx context.Context, namespace []string, key string, value map[string]any, opts ...PutOption) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	if err := ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	cfg, err := NewPutConfig(opts...)
	if err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	raw, decoded, err := cfg.Encode(value)
	if err != nil {
		return fmt.Errorf("store: put: %w", err)
	}
	if m.indexErr != nil {
		return fmt.Errorf("store: put: %w", m.indexErr)
	}
	var vectors []FieldVector
	if m.index != nil {
		// Embed before taking the lock: a slow or failing embedder
		// neither blocks other calls nor leaves a half-written item.
		if vectors, err = m.index.EmbedValue(ctx, decoded, cfg); err != nil {
			return fmt.Errorf("store: put %q in %s: %w", key, FormatNamespace(namespace), err)
		}
	}
	ns := strings.Join(namespace, ".")
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	items := m.items[ns]
	if items == nil {
		if m.items == nil {
			m.items = make(map[string]map[string]*memItem)
		}
		items = make(map[string]*memItem)
		m.items[ns] = items
	}
	created := now
	if old := items[key]; old != nil && old.live(now) {
		created = old.created
	}
	items[key] = &memItem{
		namespace: slices.Clone(namespace),
		key:       key,
		raw:       raw,
		kept:      cfg.JSON != nil,
		value:     decoded,
		created:   created,
		updated:   now,
		expires:   cfg.ExpiresAt(now),
		ttl:       cfg.TTL,
		vectors:   vectors,
	}
	return nil
}

// Delete implements [Store].
func (m *Memory) Delete(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete: %w", err)
	}
	if err := ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("store: delete: %w", err)
	}
	ns := strings.Join(namespace, ".")
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items[ns], key)
	if len(m.items[ns]) == 0 {
		delete(m.items, ns)
	}
	return nil
}

// Search implements [Store].
func (m *Memory) Search(ctx context.Context, prefix []string, opts ...SearchOption) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	cfg, err := NewSearchConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if cfg.Query != "" {
		return m.querySearch(ctx, prefix, cfg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var found []*memItem
	for _, items := range m.items {
		for _, it := range items {
			if it.live(now) && hasPrefix(it.namespace, prefix) && cfg.Match(it.value) {
				found = append(found, it)
			}
		}
	}
	slices.SortFunc(found, func(a, b *memItem) int {
		if c := b.updated.Compare(a.updated); c != 0 {
			return c
		}
		if c := strings.Compare(strings.Join(a.namespace, "."), strings.Join(b.namespace, ".")); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	found = page(found, cfg.Offset, cfg.Limit)
	out := make([]Item, 0, len(found))
	for _, it := range found {
		if cfg.RefreshTTL && it.ttl > 0 {
			it.expires = now.Add(it.ttl)
		}
		item, err := it.item()
		if err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
		out = append(out, item)
	}
	return out, nil
}

// querySearch is Search with a query.
func (m *Memory) querySearch(ctx context.Context, prefix []string, cfg SearchConfig) ([]Item, error) {
	if m.indexErr != nil {
		return nil, fmt.Errorf("store: search: %w", m.indexErr)
	}
	if m.index == nil {
		return nil, fmt.Errorf("store: search: %w", ErrNoIndex)
	}
	q, err := m.index.EmbedQuery(ctx, cfg.Query)
	if err != nil {
		return nil, fmt.Errorf("store: search %s: %w", FormatNamespace(prefix), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	top := rank.NewTop[*memItem](cfg.Offset, cfg.Limit)
	for ns, items := range m.items {
		for _, it := range items {
			if len(it.vectors) == 0 || !it.live(now) || !hasPrefix(it.namespace, prefix) || !cfg.Match(it.value) {
				continue
			}
			score := math.Inf(-1)
			for _, v := range it.vectors {
				score = max(score, CosineSimilarity(q, v.Vector))
			}
			top.Add(rank.Entry[*memItem]{Score: score, Updated: it.updated, Namespace: ns, Key: it.key, Item: it})
		}
	}
	found := top.Page(cfg.Offset)
	out := make([]Item, 0, len(found))
	for _, e := range found {
		it := e.Item
		if cfg.RefreshTTL && it.ttl > 0 {
			it.expires = now.Add(it.ttl)
		}
		item, err := it.item()
		if err != nil {
			return nil, fmt.Errorf("store: search: %w", err)
		}
		item.Score = &e.Score
		out = append(out, item)
	}
	return out, nil
}

func hasPrefix(namespace, prefix []string) bool {
	return len(namespace) >= len(prefix) && slices.Equal(namespace[:len(prefix)], prefix)
}

func page[T any](s []T, offset, limit int) []T {
	if offset >= len(s) {
		return nil
	}
	s = s[offset:]
	return s[:min(limit, len(s))]
}

// ListNamespaces implements [Store].
func (m *Memory) ListNamespaces(ctx context.Context, opts ...ListOption) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	cfg, err := NewListConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var namespaces [][]string
	for _, items := range m.items {
		for _, it := range items {
			if it.live(now) {
				namespaces = append(namespaces, it.namespace)
				break
			}
		}
	}
	return cfg.Apply(namespaces), nil
}

// Sweep implements [Sweeper].
func (m *Memory) Sweep(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store: sweep: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	n := 0
	for ns, items := range m.items {
		for key, it := range items {
			if !it.live(now) {
				delete(items, key)
				n++
			}
		}
		if len(items) == 0 {
			delete(m.items, ns)
		}
	}
	return n, nil
}
