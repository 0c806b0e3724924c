package store

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Default page sizes, as in LangGraph.
const (
	// DefaultSearchLimit is the number of items Search returns without
	// a Limit option.
	DefaultSearchLimit = 10
	// DefaultListLimit is the number of namespaces ListNamespaces
	// returns without a Limit option.
	DefaultListLimit = 100
)

// A GetOption configures [Store.Get]: [RefreshTTL].
type GetOption interface{ applyGet(*GetConfig) }

// A PutOption configures [Store.Put]: [WithTTL], [IndexFields],
// [NoIndex], [WithJSON].
type PutOption interface{ applyPut(*PutConfig) }

// A SearchOption configures [Store.Search]: [Query], [Filter], [Limit],
// [Offset], [RefreshTTL].
type SearchOption interface{ applySearch(*searchBuilder) }

// A ListOption configures [Store.ListNamespaces]: [Prefix], [Suffix],
// [MaxDepth], [Limit], [Offset].
type ListOption interface{ applyList(*ListConfig) }

// A ReadOption is both a [GetOption] and a [SearchOption].
type ReadOption interface {
	GetOption
	SearchOption
}

// A PageOption is both a [SearchOption] and a [ListOption].
type PageOption interface {
	SearchOption
	ListOption
}

// RefreshTTL says whether a read extends the TTL of the items it returns
// to a full TTL from now. Reads refresh by default (as LangGraph's
// refresh_on_read); RefreshTTL(false) reads without touching expiry.
// Items without a TTL are unaffected either way.
func RefreshTTL(refresh bool) ReadOption { return refreshOption(refresh) }

type refreshOption bool

func (o refreshOption) applyGet(c *GetConfig)        { c.RefreshTTL = bool(o) }
func (o refreshOption) applySearch(b *searchBuilder) { b.cfg.RefreshTTL = bool(o) }

// WithTTL makes the item expire d after it is put, or after it is last
// read with refreshing (see [RefreshTTL]). LangGraph counts TTLs in
// minutes; here any duration works, and stores keep at least microsecond
// precision. d = 0 means no TTL; a negative d is an error wrapping
// [ErrInvalidOption].
func WithTTL(d time.Duration) PutOption { return ttlOption(d) }

type ttlOption time.Duration

func (o ttlOption) applyPut(c *PutConfig) { c.TTL = time.Duration(o) }

// IndexFields embeds the texts at these field paths of the item's value
// for semantic search instead of those of the store's [IndexConfig]
// (LangGraph's put(..., index=[...])). IndexFields() with no paths is
// [NoIndex]. On a store without an index it changes nothing.
//
// A path is "$" for the whole value, or keys separated by "." ("text",
// "meta.title"), each optionally followed by array indexes: "[0]", "[-1]"
// for the last element, "[*]" for every element ("tags[*]",
// "chunks[*].text"); a key "*" stands for every value of an object or
// element of an array. A string is embedded as it is, any other value
// as its JSON encoding (object keys sorted); null and missing keys give
// no text. A path yielding several texts embeds each, and the item's
// score is the best of them. Keys containing ".", "[" or "]" cannot be
// addressed, and LangGraph's multi-field selection "{a,b}" is not
// supported: list the paths separately. An invalid path makes Put fail
// with an error wrapping [ErrInvalidOption].
func IndexFields(paths ...string) PutOption { return indexOption(append([]string{}, paths...)) }

// NoIndex puts the item without embedding it (LangGraph's
// put(..., index=False)): a search with a [Query] does not return it,
// also if an earlier version of the item was indexed.
func NoIndex() PutOption { return indexOption([]string{}) }

type indexOption []string

func (o indexOption) applyPut(c *PutConfig) { c.Fields = slices.Clone([]string(o)) }

// Query ranks the results of Search by semantic similarity to text: the
// store embeds text and scores each item by the cosine similarity of its
// vectors to the query's (the best one, for an item with several), best
// first, ties broken as without a query (most recently updated, then
// namespace and key). The namespace prefix and filters still apply, and
// Offset and Limit page the ranked results. Each item returned has its
// Score set. Items without vectors (put with [NoIndex], before the store
// had an index, or without any indexed field present) are not returned.
// A store without an [IndexConfig] fails with [ErrNoIndex]. Query("") is
// no query, as in LangGraph.
func Query(text string) SearchOption { return queryOption(text) }

type queryOption string

func (o queryOption) applySearch(b *searchBuilder) { b.cfg.Query = string(o) }

// Limit sets the maximum number of results of Search (default
// [DefaultSearchLimit]) or ListNamespaces (default [DefaultListLimit]).
// Limit(0) returns nothing; a negative limit is an error wrapping
// [ErrInvalidOption].
func Limit(n int) PageOption { return pageOption{n: n} }

// Offset sets how many results Search or ListNamespaces skips before the
// ones it returns (default 0); a negative offset is an error wrapping
// [ErrInvalidOption].
func Offset(n int) PageOption { return pageOption{n: n, offset: true} }

type pageOption struct {
	n      int
	offset bool
}

func (o pageOption) applySearch(b *searchBuilder) {
	if o.offset {
		b.cfg.Offset = o.n
	} else {
		b.cfg.Limit = o.n
	}
}

func (o pageOption) applyList(c *ListConfig) {
	if o.offset {
		c.Offset = o.n
	} else {
		c.Limit = o.n
	}
}

// Filter keeps the items whose value matches every entry of filter, as
// LangGraph's search filter:
//
//   - "key": v keeps values whose top-level key "key" equals v. Equality
//     is JSON equality: numbers compare by value (1 equals 1.0), objects
//     and arrays must be equal as a whole (not merely contain v), and a
//     bool is never equal to a number.
//   - "key": {"$op": v, ...} applies operators, all of which must hold:
//     $eq and $ne (JSON equality and its negation), and $gt, $gte, $lt,
//     $lte, which compare numbers by value and strings bytewise; a value
//     of another type, or of a type other than v's, does not match.
//     Ordering operators take only a number or a string.
//
// A key absent from the value matches no condition, $ne included (as in
// LangGraph's PostgreSQL store); a key holding null matches "key": nil.
// Filter values are taken as they encode to JSON. Several Filter options
// add up. An unknown operator, an object mixing operators with other keys,
// or an ordering operator with an operand that is not a number or a string
// makes Search fail with an error wrapping [ErrInvalidOption].
func Filter(filter map[string]any) SearchOption { return filterOption(filter) }

type filterOption map[string]any

func (o filterOption) applySearch(b *searchBuilder) { b.filters = append(b.filters, o) }

// Prefix keeps the namespaces that start with labels; a label "*" matches
// any one label. Prefix() with no labels matches every namespace.
func Prefix(labels ...string) ListOption { return prefixOption(labels) }

type prefixOption []string

func (o prefixOption) applyList(c *ListConfig) { c.Prefix = slices.Clone(o) }

// Suffix keeps the namespaces that end with labels; a label "*" matches
// any one label. Suffix() with no labels matches every namespace.
func Suffix(labels ...string) ListOption { return suffixOption(labels) }

type suffixOption []string

func (o suffixOption) applyList(c *ListConfig) { c.Suffix = slices.Clone(o) }

// MaxDepth truncates the namespaces ListNamespaces returns to their first
// n labels, returning each truncated namespace once. n must be at least
// 1; otherwise ListNamespaces fails with an error wrapping
// [ErrInvalidOption].
func MaxDepth(n int) ListOption { return maxDepthOption(n) }

type maxDepthOption int

func (o maxDepthOption) applyList(c *ListConfig) {
	c.MaxDepth = int(o)
	c.maxDepthSet = true
}

// GetConfig is the resolved configuration of a Get, for implementations
// of [Store].
type GetConfig struct {
	// RefreshTTL says whether to extend the item's TTL; default true.
	RefreshTTL bool
}

// NewGetConfig resolves Get options.
func NewGetConfig(opts ...GetOption) GetConfig {
	c := GetConfig{RefreshTTL: true}
	for _, o := range opts {
		if o != nil {
			o.applyGet(&c)
		}
	}
	return c
}

// PutConfig is the resolved configuration of a Put, for implementations
// of [Store].
type PutConfig struct {
	// TTL is the item's time to live, 0 for none.
	TTL time.Duration
	// Fields, if not nil, are the field paths to embed instead of the
	// index's; empty means not to index the item.
	Fields []string
	// JSON is the value's JSON text given with [WithJSON], normalized,
	// or nil. [PutConfig.Encode] checks it against the value.
	JSON []byte

	jsonSet bool
}

// NewPutConfig resolves Put options; it fails with an error wrapping
// [ErrInvalidOption] for a negative TTL, an invalid field path or a
// [WithJSON] text that is not a JSON object.
func NewPutConfig(opts ...PutOption) (PutConfig, error) {
	var c PutConfig
	for _, o := range opts {
		if o != nil {
			o.applyPut(&c)
		}
	}
	if c.TTL < 0 {
		return c, fmt.Errorf("%w: negative TTL %v", ErrInvalidOption, c.TTL)
	}
	if c.jsonSet {
		text, err := normalizeText(c.JSON)
		if err != nil {
			return c, fmt.Errorf("%w: WithJSON: %w", ErrInvalidOption, err)
		}
		c.JSON = text
	}
	for _, f := range c.Fields {
		if _, err := parseFieldPath(f); err != nil {
			return c, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	return c, nil
}

// ExpiresAt returns when an item put at now with this configuration
// expires: the zero time without a TTL.
func (c PutConfig) ExpiresAt(now time.Time) time.Time {
	if c.TTL == 0 {
		return time.Time{}
	}
	return now.Add(c.TTL)
}

// SearchConfig is the resolved configuration of a Search, for
// implementations of [Store].
type SearchConfig struct {
	// Query is the text to rank items by, "" for none.
	Query string
	// Filter holds the conditions of every Filter option, in order of
	// key and then operator; an item must satisfy them all.
	Filter []Condition
	// Limit is the maximum number of items to return.
	Limit int
	// Offset is the number of matching items to skip.
	Offset int
	// RefreshTTL says whether to extend the TTLs of the items returned;
	// default true.
	RefreshTTL bool
}

type searchBuilder struct {
	cfg     SearchConfig
	filters []map[string]any
}

// NewSearchConfig resolves Search options, compiling the filters; it
// fails with an error wrapping [ErrInvalidOption] for a negative limit or
// offset or an invalid filter.
func NewSearchConfig(opts ...SearchOption) (SearchConfig, error) {
	b := searchBuilder{cfg: SearchConfig{Limit: DefaultSearchLimit, RefreshTTL: true}}
	for _, o := range opts {
		if o != nil {
			o.applySearch(&b)
		}
	}
	if b.cfg.Limit < 0 {
		return b.cfg, fmt.Errorf("%w: negative limit %d", ErrInvalidOption, b.cfg.Limit)
	}
	if b.cfg.Offset < 0 {
		return b.cfg, fmt.Errorf("%w: negative offset %d", ErrInvalidOption, b.cfg.Offset)
	}
	for _, f := range b.filters {
		conds, err := compileFilter(f)
		if err != nil {
			return b.cfg, err
		}
		b.cfg.Filter = append(b.cfg.Filter, conds...)
	}
	slices.SortStableFunc(b.cfg.Filter, func(x, y Condition) int {
		if c := strings.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		return slices.Index(operators, x.Op) - slices.Index(operators, y.Op)
	})
	return b.cfg, nil
}

// Match reports whether value, decoded as by [UnmarshalValue], satisfies
// every condition of c.Filter.
func (c SearchConfig) Match(value map[string]any) bool {
	for _, cond := range c.Filter {
		if !cond.Match(value) {
			return false
		}
	}
	return true
}

// ListConfig is the resolved configuration of a ListNamespaces, for
// implementations of [Store].
type ListConfig struct {
	// Prefix is the pattern namespaces must start with ("*" matches any
	// label); nil matches all.
	Prefix []string
	// Suffix is the pattern namespaces must end with; nil matches all.
	Suffix []string
	// MaxDepth is the number of labels to truncate namespaces to, 0 for
	// no truncation.
	MaxDepth int
	// Limit is the maximum number of namespaces to return.
	Limit int
	// Offset is the number of namespaces to skip.
	Offset int

	maxDepthSet bool
}

// NewListConfig resolves ListNamespaces options; it fails with a
// [*InvalidNamespaceError] for a pattern with an empty label or a label
// containing ".", and with an error wrapping [ErrInvalidOption] for a
// negative limit or offset or a max depth below 1.
func NewListConfig(opts ...ListOption) (ListConfig, error) {
	c := ListConfig{Limit: DefaultListLimit}
	for _, o := range opts {
		if o != nil {
			o.applyList(&c)
		}
	}
	if err := ValidatePrefix(c.Prefix); err != nil {
		return c, err
	}
	if err := ValidatePrefix(c.Suffix); err != nil {
		return c, err
	}
	if c.maxDepthSet && c.MaxDepth < 1 {
		return c, fmt.Errorf("%w: max depth %d is below 1", ErrInvalidOption, c.MaxDepth)
	}
	if c.Limit < 0 {
		return c, fmt.Errorf("%w: negative limit %d", ErrInvalidOption, c.Limit)
	}
	if c.Offset < 0 {
		return c, fmt.Errorf("%w: negative offset %d", ErrInvalidOption, c.Offset)
	}
	return c, nil
}

// LiteralPrefix returns the labels of c.Prefix before its first "*":
// every namespace c matches starts with them, so an implementation can
// narrow its scan to them before calling [ListConfig.Apply].
func (c ListConfig) LiteralPrefix() []string {
	if i := slices.Index(c.Prefix, "*"); i >= 0 {
		return c.Prefix[:i]
	}
	return c.Prefix
}

// Match reports whether namespace matches c's Prefix and Suffix patterns.
func (c ListConfig) Match(namespace []string) bool {
	return matchPattern(namespace, c.Prefix, false) && matchPattern(namespace, c.Suffix, true)
}

func matchPattern(ns, pattern []string, suffix bool) bool {
	if len(ns) < len(pattern) {
		return false
	}
	if suffix {
		ns = ns[len(ns)-len(pattern):]
	}
	for i, p := range pattern {
		if p != "*" && p != ns[i] {
			return false
		}
	}
	return true
}

// Apply returns the result of ListNamespaces over namespaces, the
// distinct namespaces holding live items in any order: those matching
// c's patterns, truncated to MaxDepth, de-duplicated, sorted (see
// [Store.ListNamespaces]), and paged with Offset and Limit. The result
// shares no memory with namespaces.
func (c ListConfig) Apply(namespaces [][]string) [][]string {
	var out [][]string
	for _, ns := range namespaces {
		if !c.Match(ns) {
			continue
		}
		if c.MaxDepth > 0 && len(ns) > c.MaxDepth {
			ns = ns[:c.MaxDepth]
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, compareNamespaces)
	out = slices.CompactFunc(out, func(a, b []string) bool { return compareNamespaces(a, b) == 0 })
	if c.Offset >= len(out) {
		return [][]string{}
	}
	out = out[c.Offset:]
	if len(out) > c.Limit {
		out = out[:c.Limit]
	}
	res := make([][]string, len(out))
	for i, ns := range out {
		res[i] = slices.Clone(ns)
	}
	return res
}

func compareNamespaces(a, b []string) int { return slices.Compare(a, b) }
