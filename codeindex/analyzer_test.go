package codeindex_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

func TestTokensSplitsIdentifiers(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"parseHTTPRequest", []string{"parse", "pars", "http", "request", "parsehttprequest"}},
		{"ServeMux", []string{"serve", "serv", "mux", "servemux"}},
		{"read_config_file", []string{"read", "config", "file", "read_config_file"}},
		{"MAX_RETRIES", []string{"max", "retries", "retri", "max_retries"}},
		{"net/http.ServeMux", []string{"net", "http", "serve", "serv", "mux", "servemux"}},
		{"src/go/parser/parser.go", []string{"src", "go", "parser", "parser", "go"}},
		{"XMLHttpRequest2Go", []string{"xml", "http", "request", "2", "go", "xmlhttprequest2go"}},
		{"utf8.DecodeRune", []string{"utf", "8", "utf8", "decode", "decod", "rune", "decoderune"}},
		{"__init__", []string{"init"}},
		{"plain words, Stay.", []string{"plain", "words", "word", "stay"}},
		{"ID", []string{"id"}},
		{"Größe_max", []string{"größe", "max", "größe_max"}},
		{"bodies Body", []string{"bodies", "bodi", "body", "bodi"}},
		{"!= && ()", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Empty(t, cmp.Diff(tt.want, codeindex.Tokens(tt.in), cmpopts.EquateEmpty()))
		})
	}
}

// Each part is followed by its English stem when that differs, so other
// forms of a word meet at the stem while the exact form is kept; whole
// identifiers are never stemmed.
func TestTokensAddEnglishStems(t *testing.T) {
	shared := func(a, b string) []string {
		var out []string
		for _, term := range codeindex.Tokens(a) {
			if slices.Contains(codeindex.Tokens(b), term) {
				out = append(out, term)
			}
		}
		return out
	}
	// A question and the code it is about, in other forms of the same words.
	for _, tt := range []struct{ question, code, stem string }{
		{"request bodies", "maxBytesReader.Body", "bodi"},
		{"omitted when empty", "func omitEmpty", "omit"},
		{"splitting lines", "SplitLines", "split"},
		{"escaping", "escape", "escap"},
		{"goroutines", "Goroutine", "goroutin"},
	} {
		require.Containsf(t, shared(tt.question, tt.code), tt.stem, "%q and %q", tt.question, tt.code)
	}
	// Whole identifiers and non-ASCII words are not stemmed.
	require.NotContains(t, codeindex.Tokens("ParseHTTPRequests"), "parsehttprequest")
	require.Contains(t, codeindex.Tokens("ParseHTTPRequests"), "parsehttprequests")
	require.Equal(t, []string{"größe"}, codeindex.Tokens("Größe"))
}

func TestTokensSkipsOverlongWords(t *testing.T) {
	long := strings.Repeat("QUJDREVGR0hJ", 6) // 72 characters, as in a base64 blob
	require.Equal(t, []string{"short"}, codeindex.Tokens(long+" short"))
}
