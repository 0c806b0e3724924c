package postgres

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/internal/sqlsaver"
)

// encodeColumns returns the metadata and versions columns of cp as JSON
// text: the objects sqlsaver.EncodeColumns writes, which the server parses
// into jsonb (so only what they hold matters, not their bytes). A
// checkpoint without Extra metadata, as a run writes at every step, is
// written here directly, without encoding/json's reflection and maps, a
// tenth of a write's client CPU; any other goes through EncodeColumns.
func encodeColumns(cp *checkpoint.Checkpoint) (meta, versions string, err error) {
	if len(cp.Metadata.Extra) > 0 {
		m, v, err := sqlsaver.EncodeColumns(cp)
		if err != nil {
			return "", "", err
		}
		return string(m), string(v), nil
	}
	var buf [512]byte
	b := buf[:0]
	m := &cp.Metadata
	// The keys of Metadata.MarshalJSON, in its encoding's (sorted) order.
	b = append(b, `{"parents":{`...)
	for i, k := range sortedKeys(m.Parents) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m.Parents[k])
	}
	b = append(b, '}')
	if m.RunID != "" {
		b = append(b, `,"run_id":`...)
		b = appendJSONString(b, m.RunID)
	}
	b = append(b, `,"source":`...)
	b = appendJSONString(b, m.Source)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(m.Step), 10)
	b = append(b, '}')
	meta = string(b)

	// A name twice keeps its last version, as sqlsaver.VersionMap and
	// jsonb do.
	b = append(b[:0], '{')
	for i, ch := range cp.Channels {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, ch.Name)
		b = append(b, ':')
		b = strconv.AppendInt(b, ch.Version, 10)
	}
	b = append(b, '}')
	return meta, string(b), nil
}

// sortedKeys returns m's keys sorted (nil for none).
func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendJSONString appends s to b as a JSON string: quotes, backslashes
// and control characters escaped, and each byte of invalid UTF-8 replaced
// by U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, "\\ufffd"...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}
