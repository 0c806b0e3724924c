package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Item is a value stored under a namespace and a key.
type Item struct {
	// Namespace is the path of labels the item is stored under, such as
	// ["users", "u-42", "memories"].
	Namespace []string
	// Key names the item within its namespace. Any string is a valid key,
	// the empty string and strings containing "." included.
	Key string
	// Value is the item's JSON object, decoded the way encoding/json
	// decodes into a map[string]any: numbers are float64, arrays []any,
	// objects map[string]any. It is never nil, and it is the caller's own
	// copy.
	Value map[string]any
	// JSON is the value's JSON text as it was put with [WithJSON]
	// (normalized, keys in the order of the text), or nil for an item put
	// without it or by a store that keeps no texts. It decodes to Value,
	// and it is the caller's own copy. The stores of this module keep it
	// (PostgreSQL's for items put since its schema version 3).
	JSON json.RawMessage
	// CreatedAt is when the item was first put (since it last did not
	// exist: deleted or expired). Overwriting an item keeps it.
	CreatedAt time.Time
	// UpdatedAt is when the item was last put.
	UpdatedAt time.Time
	// ExpiresAt is when the item expires, or the zero time if it was put
	// without a TTL. A read that refreshes the TTL returns the new
	// expiry.
	ExpiresAt time.Time
	// Score is the item's similarity to the query of a Search with
	// [Query] (LangGraph's SearchItem.score), nil for items returned
	// otherwise.
	Score *float64
}

// Store is a long-term, cross-thread key-value memory: JSON objects stored
// under hierarchical namespaces (LangGraph's BaseStore). Implementations
// are safe for concurrent use.
//
// Namespaces passed to Get, Put and Delete must be valid (see
// [ValidateNamespace]); search prefixes and namespace patterns must have
// non-empty labels without ".". Invalid ones make the method fail with a
// [*InvalidNamespaceError]; invalid options make it fail with an error
// wrapping [ErrInvalidOption]. An item whose TTL has passed is treated as
// absent by every method, whether or not it has been swept yet.
type Store interface {
	// Get returns the item stored under namespace and key, or nil and no
	// error if there is none (as LangGraph's get returns None). If the
	// item has a TTL, Get refreshes it unless given RefreshTTL(false).
	Get(ctx context.Context, namespace []string, key string, opts ...GetOption) (*Item, error)

	// Put stores value under namespace and key, replacing any item there
	// (its CreatedAt is kept, UpdatedAt is set to now). value must
	// encode as a JSON object; nil stores an empty object. Put keeps its
	// own copy of value. [WithJSON] gives the value's JSON text too, for
	// stores that keep it (see [Item.JSON]). Without WithTTL the item never expires, also if
	// the item it replaces had a TTL. A store with an [IndexConfig]
	// embeds the item before writing it: if embedding fails, Put returns
	// the error and changes nothing.
	Put(ctx context.Context, namespace []string, key string, value map[string]any, opts ...PutOption) error

	// Delete removes the item stored under namespace and key. Deleting an
	// item that does not exist is not an error.
	Delete(ctx context.Context, namespace []string, key string) error

	// Search returns the items whose namespace starts with prefix (all
	// items for an empty prefix) and whose value matches every Filter
	// condition, most recently updated first (ties broken by namespace,
	// compared as its labels joined with ".", then by key, both
	// bytewise), skipping Offset items and returning at most Limit
	// (default 10). With a [Query] it ranks the items by similarity
	// instead (see [Query]). It refreshes the TTLs of the items it
	// returns unless given RefreshTTL(false).
	Search(ctx context.Context, prefix []string, opts ...SearchOption) ([]Item, error)

	// ListNamespaces returns the distinct namespaces holding at least one
	// item, matching the Prefix and Suffix patterns ("*" matches any one
	// label), truncated to MaxDepth labels and de-duplicated, in
	// lexicographic order of their labels (compared bytewise, a
	// namespace before those it is a prefix of), skipping Offset and
	// returning at most Limit (default 100). It does not refresh TTLs.
	ListNamespaces(ctx context.Context, opts ...ListOption) ([][]string, error)
}

// Sweeper is implemented by stores that can delete expired items. Expired
// items are invisible whether or not they are swept; sweeping reclaims
// their space. See [SweepEvery] to sweep periodically.
type Sweeper interface {
	// Sweep deletes the items whose TTL has passed and returns how many
	// it deleted.
	Sweep(ctx context.Context) (int, error)
}

// ClockSetter is implemented by stores whose notion of the current time
// can be replaced, for tests: the store stamps CreatedAt, UpdatedAt and
// ExpiresAt and decides expiry with the function last set. The conformance
// suite in store/storetest uses it to test timestamps, ordering and TTLs
// without sleeping. Production code has no reason to call it.
type ClockSetter interface {
	// SetClock makes the store read the current time from now. It is safe
	// to call concurrently with the store's other methods.
	SetClock(now func() time.Time)
}

// ErrInvalidOption is wrapped by the errors returned for invalid options:
// a negative limit, offset or TTL, a max depth below 1, or an invalid
// filter.
var ErrInvalidOption = errors.New("store: invalid option")

// ReservedLabel is the first label no namespace may start with; it is kept
// for the runtime's own use (LangGraph reserves "langgraph" the same way).
const ReservedLabel = "agentgraph"

// InvalidNamespaceError is returned for a namespace that is empty, has an
// empty label or a label containing ".", or (for the namespace of an
// item) starts with [ReservedLabel]. It corresponds to LangGraph's
// InvalidNamespaceError, and its messages mirror LangGraph's.
type InvalidNamespaceError struct {
	// Namespace is the namespace as given.
	Namespace []string
	// Message says what is wrong with it.
	Message string
}

// Error returns e.Message.
func (e *InvalidNamespaceError) Error() string { return e.Message }

// ValidateNamespace returns a [*InvalidNamespaceError] unless namespace is
// a valid namespace for an item: it has at least one label, no label is
// empty or contains ".", and the first label is not [ReservedLabel].
func ValidateNamespace(namespace []string) error {
	if len(namespace) == 0 {
		return &InvalidNamespaceError{Namespace: slices.Clone(namespace), Message: "Namespace cannot be empty."}
	}
	if err := ValidatePrefix(namespace); err != nil {
		return err
	}
	if namespace[0] == ReservedLabel {
		return &InvalidNamespaceError{Namespace: slices.Clone(namespace), Message: fmt.Sprintf("Root label for namespace cannot be %q. Got: %s", ReservedLabel, FormatNamespace(namespace))}
	}
	return nil
}

// ValidatePrefix returns a [*InvalidNamespaceError] unless every label of
// prefix is non-empty and free of ".". It accepts an empty prefix and a
// first label of [ReservedLabel]; it is the check for search prefixes and
// namespace patterns.
func ValidatePrefix(prefix []string) error {
	for _, label := range prefix {
		switch {
		case label == "":
			return &InvalidNamespaceError{Namespace: slices.Clone(prefix), Message: fmt.Sprintf("Namespace labels cannot be empty strings. Got %q in %s", label, FormatNamespace(prefix))}
		case strings.Contains(label, "."):
			return &InvalidNamespaceError{Namespace: slices.Clone(prefix), Message: fmt.Sprintf("Invalid namespace label %q found in %s. Namespace labels cannot contain periods ('.').", label, FormatNamespace(prefix))}
		}
	}
	return nil
}

// FormatNamespace renders a namespace for messages, as ("a", "b").
func FormatNamespace(namespace []string) string {
	var b bytes.Buffer
	b.WriteByte('(')
	for i, label := range namespace {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", label)
	}
	b.WriteByte(')')
	return b.String()
}

// MarshalValue encodes an item's value as stored: a JSON object, with nil
// encoded as {} and HTML characters left unescaped. It fails for values
// encoding/json cannot encode (channels, NaN, cycles…).
func MarshalValue(value map[string]any) ([]byte, error) {
	if value == nil {
		return []byte("{}"), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, fmt.Errorf("store: value is not JSON: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalValue decodes a stored value into a new map; it fails unless
// data is a JSON object.
func UnmarshalValue(data []byte) (map[string]any, error) {
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("store: stored value: %w", err)
	}
	if v == nil {
		return nil, errors.New("store: stored value is not a JSON object")
	}
	return v, nil
}
