package pgdb

import (
	"bytes"
	"strings"
)

// JSONB returns the JSON text b with every escaped U+0000 ("\u0000")
// turned into an escaped U+FFFD, so that PostgreSQL's jsonb takes it. A
// JSON text holds U+0000 only escaped (encoding/json writes it so); an
// escaped backslash followed by the text u0000 is left alone. b is
// returned as it is when it holds no U+0000.
func JSONB(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			out = append(out, `\ufffd`...)
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1]) // an escape: its second byte is not a backslash to look at
		i++
	}
	return out
}

// Text returns s with every U+0000 as U+FFFD, as [JSONB] stores it.
func Text(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }
