// Package jsonb decides JSON containment as PostgreSQL's jsonb @> does,
// for the Backends that filter decoded JSON in Go (the server's
// MemoryBackend and the SQLite Backend) to match the PostgreSQL one.
package jsonb

import "slices"

// Contains reports whether have contains want, both decoded by
// encoding/json into any: objects contain the keys of want with contained
// values, arrays contain every element of want (in any order), and other
// values are equal.
func Contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !Contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, wv := range w {
			if !slices.ContainsFunc(h, func(hv any) bool { return Contains(hv, wv) }) {
				return false
			}
		}
		return true
	default:
		switch have.(type) {
		case map[string]any, []any:
			return false
		}
		return have == want
	}
}
