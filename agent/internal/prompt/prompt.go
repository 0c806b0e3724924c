// Package prompt fills the placeholders of the agents' prompt templates.
package prompt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Render replaces the placeholders of tmpl with vars, pairs of name and
// value (names without braces: "input" fills {input}), in one pass: a
// value containing a placeholder is not expanded again, and unknown
// placeholders are left as they are.
func Render(tmpl string, vars ...string) string {
	pairs := make([]string, 0, len(vars))
	for i := 0; i+1 < len(vars); i += 2 {
		pairs = append(pairs, "{"+vars[i]+"}", vars[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// TruncateHead keeps the first n characters (runes) of s, with a marker
// saying how many were cut. n <= 0 returns s.
func TruncateHead(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if n <= 0 || total <= n {
		return s
	}
	keep := n
	var marker string
	for range 3 { // the marker's length depends on the count it shows
		marker = fmt.Sprintf("\n… [%d characters truncated]", total-keep)
		keep = n - utf8.RuneCountInString(marker)
	}
	r := []rune(s)
	if keep < 1 {
		return string(r[:n])
	}
	return string(r[:keep]) + marker
}
