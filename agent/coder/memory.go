package coder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/agent/internal/prompt"
	"github.com/agentgraph/agentgraph/store"
)

// Defaults of the persistent memory.
const (
	// DefaultLogLimit is the number of entries the node log and the
	// memory log each keep.
	DefaultLogLimit = 1000
	// DefaultQueryCacheSize is the number of answers the query cache
	// keeps.
	DefaultQueryCacheSize = 200
	// maxPreferences bounds the preferences listed.
	maxPreferences = 100
)

// Memory is the coder's persistent memory on a store.Store, under a
// namespace prefix (["coder"] by default): preferences, the query cache,
// the node log and the memory log. It is safe for concurrent use; the
// logs' sequence numbers are kept in the store, so two processes that
// append to one log at the same moment may overwrite each other's entry
// (the cap still holds).
type Memory struct {
	st        store.Store
	prefix    []string
	logLimit  int
	cacheSize int
	now       func() time.Time

	mu sync.Mutex // serializes the sequence counters of this process
}

// newMemory returns the memory on st under prefix.
func newMemory(st store.Store, prefix []string, logLimit, cacheSize int) *Memory {
	return &Memory{st: st, prefix: slices.Clone(prefix), logLimit: logLimit, cacheSize: cacheSize, now: time.Now}
}

// Store returns the store the memory is kept in.
func (m *Memory) Store() store.Store { return m.st }

func (m *Memory) ns(labels ...string) []string {
	return append(slices.Clone(m.prefix), labels...)
}

// Namespaces of the persistent memory, under the prefix.
const (
	nsPreferences = "preferences"
	nsQueryCache  = "query_cache"
	nsNodeLog     = "node_log"
	nsMemoryLog   = "memory_log"
	nsCounters    = "counters"
)

// Preference is a preference of the user's.
type Preference struct {
	// Key identifies it (a hash of its text).
	Key string `json:"key"`
	// Text states it, e.g. "I prefer table-driven tests".
	Text string `json:"text"`
	// Score is its similarity to the request it was recalled for, when
	// recalled by semantic search (nil otherwise).
	Score *float64 `json:"score,omitempty"`
}

// AddPreference saves a preference; saving the same text again (up to
// case and spacing) replaces it.
func (m *Memory) AddPreference(ctx context.Context, text string) (Preference, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Preference{}, errors.New("coder: empty preference")
	}
	key := hashText(normalizeRequest(text))[:16]
	if err := m.st.Put(ctx, m.ns(nsPreferences), key, map[string]any{"text": text}, store.IndexFields("text")); err != nil {
		return Preference{}, fmt.Errorf("coder: saving a preference: %w", err)
	}
	m.LogMemory(ctx, "preference_saved", text)
	return Preference{Key: key, Text: text}, nil
}

// Preferences returns the saved preferences, most recently saved first
// (at most 100).
func (m *Memory) Preferences(ctx context.Context) ([]Preference, error) {
	items, err := m.st.Search(ctx, m.ns(nsPreferences), store.Limit(maxPreferences))
	if err != nil {
		return nil, fmt.Errorf("coder: listing preferences: %w", err)
	}
	return preferences(items), nil
}

// RecallPreferences returns the preferences relevant to request: the
// limit most similar ones by the store's semantic search when the store
// has an index (store.Query), and every preference otherwise.
func (m *Memory) RecallPreferences(ctx context.Context, request string, limit int) ([]Preference, error) {
	items, err := m.st.Search(ctx, m.ns(nsPreferences), store.Query(request), store.Limit(limit))
	if errors.Is(err, store.ErrNoIndex) {
		return m.Preferences(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("coder: recalling preferences: %w", err)
	}
	return preferences(items), nil
}

func preferences(items []store.Item) []Preference {
	out := make([]Preference, 0, len(items))
	for _, it := range items {
		text, _ := it.Value["text"].(string)
		if text == "" {
			continue
		}
		out = append(out, Preference{Key: it.Key, Text: text, Score: it.Score})
	}
	return out
}

// CachedAnswer is an entry of the query cache.
type CachedAnswer struct {
	// Key is the entry's key: see [QueryKey].
	Key string `json:"key"`
	// Question and Answer are the request and the answer given.
	Question string `json:"question"`
	Answer   string `json:"answer"`
	// Files are the files the answer read.
	Files []string `json:"files"`
	// Seq orders the entries by when they were cached.
	Seq int `json:"seq"`
}

// QueryKey returns the query cache's key of a question over files: a hash
// of the question (trimmed, lower-cased, spaces folded), of each file's
// path and content hash, in path order, and of the preferences the answer
// was given under. A change to any of the files, or to the preferences
// recalled for the question, changes the key.
func QueryKey(question string, fileHashes map[string]string, preferences ...string) string {
	paths := make([]string, 0, len(fileHashes))
	for p := range fileHashes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	h.Write([]byte(normalizeRequest(question)))
	for _, p := range paths {
		h.Write([]byte{0})
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write([]byte(fileHashes[p]))
	}
	h.Write([]byte{1})
	for _, p := range preferences {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LookupAnswer returns the cached answer under key, or nil.
func (m *Memory) LookupAnswer(ctx context.Context, key string) (*CachedAnswer, error) {
	it, err := m.st.Get(ctx, m.ns(nsQueryCache), key)
	if err != nil {
		return nil, fmt.Errorf("coder: query cache: %w", err)
	}
	if it == nil {
		return nil, nil
	}
	c := cachedAnswer(*it)
	if c.Answer == "" {
		return nil, nil
	}
	return &c, nil
}

func cachedAnswer(it store.Item) CachedAnswer {
	c := CachedAnswer{Key: it.Key}
	c.Question, _ = it.Value["question"].(string)
	c.Answer, _ = it.Value["answer"].(string)
	if n, ok := it.Value["seq"].(float64); ok {
		c.Seq = int(n)
	}
	if fs, ok := it.Value["files"].([]any); ok {
		for _, f := range fs {
			if s, ok := f.(string); ok {
				c.Files = append(c.Files, s)
			}
		}
	}
	return c
}

// CacheAnswer stores an answer under key and evicts the oldest entries
// beyond the cache's size.
func (m *Memory) CacheAnswer(ctx context.Context, key, question, answer string, files []string) error {
	seq, err := m.nextSeq(ctx, nsQueryCache)
	if err != nil {
		return err
	}
	fs := make([]any, len(files))
	for i, f := range files {
		fs[i] = f
	}
	if err := m.st.Put(ctx, m.ns(nsQueryCache), key, map[string]any{
		"question": question, "answer": answer, "files": fs, "seq": seq,
	}, store.NoIndex()); err != nil {
		return fmt.Errorf("coder: query cache: %w", err)
	}
	entries, err := m.CachedAnswers(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries[min(len(entries), m.cacheSize):] {
		if err := m.st.Delete(ctx, m.ns(nsQueryCache), e.Key); err != nil {
			return fmt.Errorf("coder: query cache: %w", err)
		}
		m.LogMemory(ctx, "cache_evicted", e.Question)
	}
	return nil
}

// CachedAnswers returns the query cache's entries, newest first.
func (m *Memory) CachedAnswers(ctx context.Context) ([]CachedAnswer, error) {
	items, err := m.all(ctx, nsQueryCache)
	if err != nil {
		return nil, fmt.Errorf("coder: query cache: %w", err)
	}
	out := make([]CachedAnswer, 0, len(items))
	for _, it := range items {
		out = append(out, cachedAnswer(it))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq > out[j].Seq })
	return out, nil
}

// InvalidateFiles deletes the cached answers that read any of paths and
// returns how many it deleted.
func (m *Memory) InvalidateFiles(ctx context.Context, paths []string) (int, error) {
	if len(paths) == 0 {
		return 0, nil
	}
	entries, err := m.CachedAnswers(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !slices.ContainsFunc(e.Files, func(f string) bool { return slices.Contains(paths, f) }) {
			continue
		}
		if err := m.st.Delete(ctx, m.ns(nsQueryCache), e.Key); err != nil {
			return n, fmt.Errorf("coder: query cache: %w", err)
		}
		n++
		m.LogMemory(ctx, "cache_invalidated", e.Question)
	}
	return n, nil
}

// NodeLogEntry is an entry of the node log: a node that ran.
type NodeLogEntry struct {
	// Seq numbers the entries, from 1 (two processes writing at once
	// may give two entries the same number; neither is lost).
	Seq int `json:"seq"`
	// Thread and Turn identify the request; Node the node.
	Thread string `json:"thread"`
	Turn   int    `json:"turn"`
	Node   string `json:"node"`
	// Intent is the request's intent, when known.
	Intent Intent `json:"intent,omitempty"`
	// Error is the node's error, "" when it succeeded.
	Error string `json:"error,omitempty"`
	// At is when it ended.
	At time.Time `json:"at"`
}

// LogNode appends e to the node log (its Seq is set) and evicts the
// oldest entries beyond the log limit.
func (m *Memory) LogNode(ctx context.Context, e NodeLogEntry) error {
	if e.At.IsZero() {
		e.At = m.now()
	}
	return m.appendLog(ctx, nsNodeLog, func(seq int) map[string]any {
		return map[string]any{"seq": seq, "thread": e.Thread, "turn": e.Turn, "node": e.Node,
			"intent": string(e.Intent), "error": e.Error, "at": e.At.UTC().Format(time.RFC3339Nano)}
	})
}

// NodeLog returns the node log, oldest first.
func (m *Memory) NodeLog(ctx context.Context) ([]NodeLogEntry, error) {
	items, err := m.log(ctx, nsNodeLog)
	if err != nil {
		return nil, err
	}
	out := make([]NodeLogEntry, 0, len(items))
	for _, it := range items {
		e := NodeLogEntry{}
		e.Seq = intValue(it.Value["seq"])
		e.Turn = intValue(it.Value["turn"])
		e.Thread, _ = it.Value["thread"].(string)
		e.Node, _ = it.Value["node"].(string)
		in, _ := it.Value["intent"].(string)
		e.Intent = Intent(in)
		e.Error, _ = it.Value["error"].(string)
		if at, ok := it.Value["at"].(string); ok {
			e.At, _ = time.Parse(time.RFC3339Nano, at)
		}
		out = append(out, e)
	}
	return out, nil
}

// MemoryLogEntry is an entry of the memory log: something the agent
// remembered, recalled or forgot.
type MemoryLogEntry struct {
	// Seq numbers the entries, from 1 (two processes writing at once
	// may give two entries the same number; neither is lost).
	Seq int `json:"seq"`
	// Action is what happened: preference_saved, cache_hit,
	// cache_invalidated, cache_evicted.
	Action string `json:"action"`
	// Detail is what it happened to: the preference, the question.
	Detail string `json:"detail"`
	// At is when.
	At time.Time `json:"at"`
}

// LogMemory appends an entry to the memory log. The memory log is a
// record, not a duty: a failure to write it is ignored.
func (m *Memory) LogMemory(ctx context.Context, action, detail string) {
	at := m.now().UTC().Format(time.RFC3339Nano)
	_ = m.appendLog(ctx, nsMemoryLog, func(seq int) map[string]any {
		return map[string]any{"seq": seq, "action": action, "detail": prompt.TruncateHead(detail, 500), "at": at}
	})
}

// MemoryLog returns the memory log, oldest first.
func (m *Memory) MemoryLog(ctx context.Context) ([]MemoryLogEntry, error) {
	items, err := m.log(ctx, nsMemoryLog)
	if err != nil {
		return nil, err
	}
	out := make([]MemoryLogEntry, 0, len(items))
	for _, it := range items {
		e := MemoryLogEntry{Seq: intValue(it.Value["seq"])}
		e.Action, _ = it.Value["action"].(string)
		e.Detail, _ = it.Value["detail"].(string)
		if at, ok := it.Value["at"].(string); ok {
			e.At, _ = time.Parse(time.RFC3339Nano, at)
		}
		out = append(out, e)
	}
	return out, nil
}

// appendLog puts the entry value(seq) under the log's next sequence
// number and then trims the log to its newest logLimit entries. The
// counter is read and written without a lock shared with other
// processes, so two processes may draw the same number: the key has a
// random suffix, so that neither entry overwrites the other, and the trim
// counts entries rather than trusting the numbers. Two processes trimming
// at once delete the same oldest entries, never more than the excess.
func (m *Memory) appendLog(ctx context.Context, log string, value func(seq int) map[string]any) error {
	seq, err := m.nextSeq(ctx, log)
	if err != nil {
		return err
	}
	ns := m.ns(log)
	key := fmt.Sprintf("%s-%016x", seqKey(seq), rand.Uint64())
	if err := m.st.Put(ctx, ns, key, value(seq), store.NoIndex()); err != nil {
		return fmt.Errorf("coder: %s: %w", log, err)
	}
	items, err := m.log(ctx, log)
	if err != nil {
		return err
	}
	for _, it := range items[:max(len(items)-m.logLimit, 0)] {
		if err := m.st.Delete(ctx, ns, it.Key); err != nil {
			return fmt.Errorf("coder: %s: %w", log, err)
		}
	}
	return nil
}

func (m *Memory) log(ctx context.Context, log string) ([]store.Item, error) {
	items, err := m.all(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("coder: %s: %w", log, err)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items, nil
}

// seqKey is the start of the key of a log entry: its sequence number,
// zero-padded so that keys sort as numbers.
func seqKey(seq int) string { return fmt.Sprintf("%012d", seq) }

// nextSeq increments and returns the counter named name.
func (m *Memory) nextSeq(ctx context.Context, name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.ns(nsCounters)
	it, err := m.st.Get(ctx, ns, name)
	if err != nil {
		return 0, fmt.Errorf("coder: counter %s: %w", name, err)
	}
	seq := 1
	if it != nil {
		seq = intValue(it.Value["next"])
		if seq < 1 {
			seq = 1
		}
	}
	if err := m.st.Put(ctx, ns, name, map[string]any{"next": seq + 1}, store.NoIndex()); err != nil {
		return 0, fmt.Errorf("coder: counter %s: %w", name, err)
	}
	return seq, nil
}

// all returns every item of the namespace prefix+label, in pages.
func (m *Memory) all(ctx context.Context, label string) ([]store.Item, error) {
	const page = 500
	var out []store.Item
	for off := 0; ; off += page {
		items, err := m.st.Search(ctx, m.ns(label), store.Limit(page), store.Offset(off), store.RefreshTTL(false))
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if len(items) < page {
			return out, nil
		}
	}
}

func intValue(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}

// hashText returns the hex SHA-256 of s.
func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
