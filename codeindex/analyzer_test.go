package codeindex_test

import (
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
		{"parseHTTPRequest", []string{"parse", "http", "request", "parsehttprequest"}},
		{"ServeMux", []string{"serve", "mux", "servemux"}},
		{"read_config_file", []string{"read", "config", "file", "read_config_file"}},
		{"MAX_RETRIES", []string{"max", "retries", "max_retries"}},
		{"net/http.ServeMux", []string{"net", "http", "serve", "mux", "servemux"}},
		{"src/go/parser/parser.go", []string{"src", "go", "parser", "parser", "go"}},
		{"XMLHttpRequest2Go", []string{"xml", "http", "request", "2", "go", "xmlhttprequest2go"}},
		{"utf8.DecodeRune", []string{"utf", "8", "utf8", "decode", "rune", "decoderune"}},
		{"__init__", []string{"init"}},
		{"plain words, Stay.", []string{"plain", "words", "stay"}},
		{"ID", []string{"id"}},
		{"Größe_max", []string{"größe", "max", "größe_max"}},
		{"!= && ()", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Empty(t, cmp.Diff(tt.want, codeindex.Tokens(tt.in), cmpopts.EquateEmpty()))
		})
	}
}

func TestTokensSkipsOverlongWords(t *testing.T) {
	long := strings.Repeat("QUJDREVGR0hJ", 6) // 72 characters, as in a base64 blob
	require.Equal(t, []string{"short"}, codeindex.Tokens(long+" short"))
}
