package codeindex

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// AnalyzerName is the name under which the code-aware analyzer is registered
// with bleve; the keyword index's mapping refers to it, so an index written
// by this package opens only where this package is linked in.
const AnalyzerName = "agentgraph_code"

// maxWordLen bounds the words the analyzer considers: longer runs (base64,
// minified code, hashes) are skipped rather than indexed.
const maxWordLen = 64

func init() {
	ctor := func(map[string]any, *registry.Cache) (analysis.Analyzer, error) { return codeAnalyzer{}, nil }
	if err := registry.RegisterAnalyzer(AnalyzerName, ctor); err != nil {
		panic(fmt.Sprintf("codeindex: register analyzer: %v", err))
	}
}

// Tokens returns the search terms the code-aware analyzer makes of text, in
// order. Words are runs of letters, digits and underscores, so paths and
// dotted names ("net/http.ServeMux") split into their identifiers. Each
// identifier is split at underscores, at lower-to-upper case changes, before
// the last capital of an acronym and between letters and digits; the parts
// are lowercased, and each part whose English stem differs from it (the
// Snowball English stemmer, Porter2, the one behind bleve's
// stemmer_en_snowball) is followed by that stem, so that other word forms
// match while the exact form still scores higher ("bodies" gives bodies,
// bodi; "Body" gives body, bodi). An identifier made of several parts is
// also kept whole, lowercased but not stemmed: "parseHTTPRequest" gives
// parse, pars, http, request, parsehttprequest. Only parts made of ASCII
// letters are stemmed; digits and other scripts are kept as they are.
// The hashing embedder and the keyword index both use this function, so a
// query is analysed exactly like the code it is matched against.
func Tokens(text string) []string {
	var out []string
	eachToken(text, func(term string, _, _ int) { out = append(out, term) })
	return out
}

// eachToken calls fn with every term of text and the byte span of the word
// it comes from.
func eachToken(text string, fn func(term string, start, end int)) {
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWord(r) {
			i += size
			continue
		}
		j := i
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !isWord(r) {
				break
			}
			j += size
		}
		word := strings.Trim(text[i:j], "_")
		if word != "" && len(word) <= maxWordLen {
			parts := splitIdent(word)
			for _, p := range parts {
				lp := strings.ToLower(p)
				fn(lp, i, j)
				if st := stem(lp); st != lp {
					fn(st, i, j)
				}
			}
			if len(parts) > 1 {
				fn(strings.ToLower(word), i, j)
			}
		}
		i = j
	}
}

// stem returns the Snowball English stem of a lowercased word part, or the
// part itself when it is not made of ASCII letters only.
func stem(part string) string {
	for k := 0; k < len(part); k++ {
		if c := part[k]; c < 'a' || c > 'z' {
			return part
		}
	}
	env := snowballstem.NewEnv(part)
	english.Stem(env)
	return env.Current()
}

// splitIdent splits one identifier into its parts (see [Tokens]).
func splitIdent(word string) []string {
	var parts []string
	for _, seg := range strings.Split(word, "_") {
		if seg == "" {
			continue
		}
		rs := []rune(seg)
		start := 0
		for k := 1; k < len(rs); k++ {
			prev, cur := rs[k-1], rs[k]
			split := false
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(cur): // parseHTTP
				split = true
			case unicode.IsUpper(prev) && unicode.IsUpper(cur) && k+1 < len(rs) && unicode.IsLower(rs[k+1]): // HTTPRequest
				split = true
			case unicode.IsDigit(prev) != unicode.IsDigit(cur): // utf8, x509Cert
				split = true
			}
			if split {
				parts = append(parts, string(rs[start:k]))
				start = k
			}
		}
		parts = append(parts, string(rs[start:]))
	}
	return parts
}

// codeAnalyzer is the bleve face of [Tokens].
type codeAnalyzer struct{}

func (codeAnalyzer) Analyze(input []byte) analysis.TokenStream {
	var ts analysis.TokenStream
	eachToken(string(input), func(term string, start, end int) {
		ts = append(ts, &analysis.Token{
			Term: []byte(term), Start: start, End: end,
			Position: len(ts) + 1, Type: analysis.AlphaNumeric,
		})
	})
	return ts
}
