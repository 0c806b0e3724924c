package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Cache stores node results for nodes with a [CachePolicy]. It must be
// safe for concurrent use.
type Cache interface {
	// Get returns the entry stored under key, if it is there and fresh.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl (zero: no expiry).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Clear removes the entries of the given nodes, or every entry when
	// none is given.
	Clear(ctx context.Context, nodes ...string) error
}

// MemoryCache is an in-memory [Cache]. The zero value is an empty cache
// ready to use, like the one [NewMemoryCache] returns. It is safe for
// concurrent use.
type MemoryCache struct {
	mu sync.Mutex
	m  map[string]cacheEntry
}

type cacheEntry struct {
	v       []byte
	expires time.Time
}

// NewMemoryCache returns an empty in-memory cache.
func NewMemoryCache() *MemoryCache {
	return new(MemoryCache)
}

// Get implements [Cache].
func (c *MemoryCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false, nil
	}
	if !e.expires.IsZero() && !time.Now().Before(e.expires) {
		delete(c.m, key)
		return nil, false, nil
	}
	return e.v, true, nil
}

// Set implements [Cache].
func (c *MemoryCache) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := cacheEntry{v: value}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	if c.m == nil {
		c.m = make(map[string]cacheEntry)
	}
	c.m[key] = e
	return nil
}

// Clear implements [Cache].
func (c *MemoryCache) Clear(_ context.Context, nodes ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(nodes) == 0 {
		clear(c.m)
		return nil
	}
	for k := range c.m {
		for _, n := range nodes {
			if strings.HasPrefix(k, n+"|") {
				delete(c.m, k)
			}
		}
	}
	return nil
}

// cacheKey is "node|hash(key)" where key comes from the policy or from the
// JSON encoding of the input.
func (g *Graph[S]) cacheKey(n *node[S], input any) (string, error) {
	var raw string
	if n.cache.Key != nil {
		k, err := n.cache.Key(input)
		if err != nil {
			return "", err
		}
		raw = k
	} else {
		b, err := json.Marshal(input)
		if err != nil {
			return "", err
		}
		raw = string(b)
	}
	sum := sha256.Sum256([]byte(g.shape + "\x00" + raw))
	return n.name + "|" + hex.EncodeToString(sum[:16]), nil
}

// ClearCache removes the cached results of the given nodes (all nodes when
// none is given).
func (g *Graph[S]) ClearCache(ctx context.Context, nodes ...string) error {
	if g.cache == nil {
		return nil
	}
	return g.cache.Clear(ctx, nodes...)
}
