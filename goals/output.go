package goals

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// truncateMiddle returns s if it has at most n characters, else its head
// and tail (n characters in all, marker excluded) around a marker saying
// how many were left out.
func truncateMiddle(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	head := n / 2
	tail := n - head
	return string(r[:head]) + fmt.Sprintf("\n... [%d characters omitted] ...\n", len(r)-n) + string(r[len(r)-tail:])
}

// tail returns the last n characters of s.
func tail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}

// capBuffer is an io.Writer keeping the first and the last max bytes
// written to it.
type capBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte
	dropped int
}

func newCapBuffer(max int) *capBuffer { return &capBuffer{max: max} }

// Write implements io.Writer; it never fails.
func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.max {
		drop := len(b.tail) - b.max
		b.dropped += drop
		b.tail = append([]byte(nil), b.tail[drop:]...)
	}
	return n, nil
}

// String returns what was kept, valid UTF-8, at most limit characters.
func (b *capBuffer) String(limit int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.head)
	if b.dropped > 0 {
		s += fmt.Sprintf("\n... [%d bytes omitted] ...\n", b.dropped)
	}
	s += string(b.tail)
	return truncateMiddle(strings.ToValidUTF8(s, "\uFFFD"), limit)
}

// capFailures caps the number of failures and the length of their output.
func capFailures(fs []Failure) []Failure {
	if len(fs) == 0 {
		return nil
	}
	if len(fs) > MaxFailures {
		fs = fs[:MaxFailures]
	}
	out := make([]Failure, len(fs))
	for i, f := range fs {
		out[i] = Failure{Name: f.Name, Output: truncateMiddle(f.Output, MaxFailureOutputChars)}
	}
	return out
}

// nameList renders up to five failure names, then how many more there are.
func nameList(fs []Failure, total int) string {
	const shown = 5
	var names []string
	for i, f := range fs {
		if i == shown {
			break
		}
		names = append(names, f.Name)
	}
	s := strings.Join(names, ", ")
	if more := max(total, len(fs)) - len(names); more > 0 && len(names) > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
