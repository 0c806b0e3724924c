package codur

import (
	"regexp"
	"sort"
	"strings"
)

// Edit replaces src[Start:End] with Text.
type Edit struct {
	Start, End int
	Text       string
}

// RepairPattern is a cheap local repair: a mutation of the program's text
// that fixes a common kind of bug. Sites returns one [Edit] per place the
// mutation could apply; the review tries each site alone, then pairs of
// sites (see [Repairer]).
type RepairPattern struct {
	// Name names the pattern in reports ("off_by_one_range").
	Name string
	// Sites returns the candidate edits of src.
	Sites func(src string) []Edit
}

// regexSites returns a Sites function that yields one edit per match of
// re, replacing the match with the expansion of repl ($1 …), or with the
// result of fn when fn is not nil (an empty result skips the match).
func regexSites(re *regexp.Regexp, repl string, fn func(m []string) string) func(string) []Edit {
	return func(src string) []Edit {
		var edits []Edit
		for _, loc := range re.FindAllStringSubmatchIndex(src, -1) {
			var text string
			if fn != nil {
				m := make([]string, len(loc)/2)
				for i := range m {
					if loc[2*i] >= 0 {
						m[i] = src[loc[2*i]:loc[2*i+1]]
					}
				}
				text = fn(m)
				if text == "" {
					continue
				}
			} else {
				text = string(re.ExpandString(nil, repl, src, loc))
			}
			if text == src[loc[0]:loc[1]] {
				continue
			}
			edits = append(edits, Edit{Start: loc[0], End: loc[1], Text: text})
		}
		return edits
	}
}

var (
	rangeRe         = regexp.MustCompile(`\brange\(([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)`)
	rangeStartRe    = regexp.MustCompile(`\brange\(\s*([01])\s*,`)
	continueGuardRe = regexp.MustCompile(`(?m)^[ \t]*if [^\n]*:[ \t]*continue[ \t]*\n|^([ \t]*)if [^\n]*:[ \t]*\n[ \t]+continue[ \t]*\n`)
	percentRe       = regexp.MustCompile(`[ \t]*/[ \t]*100(?:\.0)?\b`)
	compareRe       = regexp.MustCompile(`[^<>=!-](<=|>=|<|>)[^<>=]`)
	equalityRe      = regexp.MustCompile(`(==|!=)`)
	logicRe         = regexp.MustCompile(` (and|or) |(&&|\|\|)`)
	plusMinusOneRe  = regexp.MustCompile(`[ \t]*[+-][ \t]*1\b`)
	fstringRe       = regexp.MustCompile(`(^|[^A-Za-z0-9_"'])("[^"\n]*\{[A-Za-z_][^"\n]*\}[^"\n]*"|'[^'\n]*\{[A-Za-z_][^'\n]*\}[^'\n]*')`)
	intDivRe        = regexp.MustCompile(`[^/](//|/)[^/=*]`)
	comprehensionRe = regexp.MustCompile(`(\bfor\b[^\[\]\n]*\bif )(not )?`)
	strConcatRe     = regexp.MustCompile(`(["'][^"'\n]*["'][ \t]*\+[ \t]*)([A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\n]*\]|\([^()\n]*\))?)`)
	minMaxRe        = regexp.MustCompile(`\b(min|max)\(`)
)

// DefaultRepairs returns the built-in repair patterns, in the order they
// are tried: the three of the original Codur (off-by-one in a range, a
// guard that skips items, a division by 100) and more, for boundaries,
// conditions, string formatting, types and comprehensions.
func DefaultRepairs() []RepairPattern {
	return []RepairPattern{
		{Name: "off_by_one_range", Sites: regexSites(rangeRe, "", func(m []string) string {
			args := splitTopLevel(m[1])
			if len(args) == 0 || len(args) > 2 || strings.TrimSpace(args[len(args)-1]) == "" {
				return ""
			}
			last := strings.TrimSpace(args[len(args)-1])
			args[len(args)-1] = " " + last + " + 1"
			if len(args) == 1 {
				args[0] = last + " + 1"
			}
			return "range(" + strings.Join(args, ",") + ")"
		})},
		{Name: "remove_continue_guard", Sites: regexSites(continueGuardRe, "", func([]string) string { return "\n" })},
		{Name: "remove_percent_division", Sites: regexSites(percentRe, "", func([]string) string { return " " })},
		{Name: "range_start", Sites: regexSites(rangeStartRe, "", func(m []string) string {
			if m[1] == "0" {
				return "range(1,"
			}
			return "range(0,"
		})},
		{Name: "comparison_boundary", Sites: regexSites(compareRe, "", func(m []string) string {
			swap := map[string]string{"<=": "<", ">=": ">", "<": "<=", ">": ">="}
			return strings.Replace(m[0], m[1], swap[m[1]], 1)
		})},
		{Name: "plus_minus_one", Sites: regexSites(plusMinusOneRe, "", func([]string) string { return " " })},
		{Name: "equality_flip", Sites: regexSites(equalityRe, "", func(m []string) string {
			if m[1] == "==" {
				return "!="
			}
			return "=="
		})},
		{Name: "logic_flip", Sites: regexSites(logicRe, "", func(m []string) string {
			switch {
			case m[1] == "and":
				return " or "
			case m[1] == "or":
				return " and "
			case m[2] == "&&":
				return "||"
			}
			return "&&"
		})},
		{Name: "fstring_prefix", Sites: regexSites(fstringRe, "${1}f${2}", nil)},
		{Name: "integer_division", Sites: regexSites(intDivRe, "", func(m []string) string {
			if m[1] == "//" {
				return strings.Replace(m[0], "//", "/", 1)
			}
			return strings.Replace(m[0], "/", "//", 1)
		})},
		{Name: "comprehension_filter", Sites: regexSites(comprehensionRe, "", func(m []string) string {
			if m[2] != "" {
				return m[1]
			}
			return m[1] + "not "
		})},
		{Name: "str_concat", Sites: regexSites(strConcatRe, "", func(m []string) string {
			if strings.HasPrefix(m[2], "str(") {
				return ""
			}
			return m[1] + "str(" + m[2] + ")"
		})},
		{Name: "min_max_swap", Sites: regexSites(minMaxRe, "", func(m []string) string {
			if m[1] == "min" {
				return "max("
			}
			return "min("
		})},
	}
}

// splitTopLevel splits s at the commas outside parentheses and brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// Candidate is a mutated program of the repair search.
type Candidate struct {
	// Name names the patterns applied, joined by "+".
	Name string
	// Source is the mutated program.
	Source string
}

// maxRepairSites bounds the sites a repair search considers: a large
// program has too many to pair them all.
const maxRepairSites = 200

// Candidates returns the repairs of src to try, at most budget of them:
// each site of each pattern alone, in pattern order, then each pair of
// non-overlapping sites (a combination of two mutations, of the same
// pattern or of two), in the order of their first site. Only the first
// 200 sites are considered, and the work is bounded by the budget
// whatever src holds.
func Candidates(src string, patterns []RepairPattern, budget int) []Candidate {
	type site struct {
		name string
		edit Edit
	}
	var sites []site
	for _, p := range patterns {
		for _, e := range p.Sites(src) {
			if len(sites) == maxRepairSites {
				break
			}
			sites = append(sites, site{p.Name, e})
		}
	}
	seen := map[string]bool{src: true}
	var out []Candidate
	add := func(name, text string) bool {
		if len(out) >= budget {
			return false
		}
		if !seen[text] {
			seen[text] = true
			out = append(out, Candidate{Name: name, Source: text})
		}
		return true
	}
	for _, s := range sites {
		if !add(s.name, applyEdits(src, []Edit{s.edit})) {
			return out
		}
	}
	tries := 0
	for i := range sites {
		for j := i + 1; j < len(sites); j++ {
			if tries++; tries > 4*budget {
				return out
			}
			a, b := sites[i].edit, sites[j].edit
			if a.End > b.Start && b.End > a.Start {
				continue
			}
			if !add(sites[i].name+"+"+sites[j].name, applyEdits(src, []Edit{a, b})) {
				return out
			}
		}
	}
	return out
}

// applyEdits applies non-overlapping edits to src.
func applyEdits(src string, edits []Edit) string {
	sorted := append([]Edit(nil), edits...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start > sorted[j].Start })
	for _, e := range sorted {
		src = src[:e.Start] + e.Text + src[e.End:]
	}
	return src
}

// repairHints map words of an agent's answer to the patterns they hint at.
var repairHints = []struct {
	re       *regexp.Regexp
	patterns []string
}{
	{regexp.MustCompile(`(?i)off[- ]by[- ]one|boundar|inclusive|exclusive|fence ?post`), []string{"off_by_one_range", "range_start", "plus_minus_one", "comparison_boundary"}},
	{regexp.MustCompile(`(?i)percent|/ ?100|fraction`), []string{"remove_percent_division"}},
	{regexp.MustCompile(`(?i)f-?string|placeholder|interpolat|format`), []string{"fstring_prefix"}},
	{regexp.MustCompile(`(?i)type ?error|concatenat|can only concatenate`), []string{"str_concat"}},
	{regexp.MustCompile(`(?i)condition|parity|\beven\b|\bodd\b|negat|invert|\bnot\b`), []string{"equality_flip", "logic_flip", "comparison_boundary", "comprehension_filter"}},
	{regexp.MustCompile(`(?i)\bskip|continue|guard|filter`), []string{"remove_continue_guard", "comprehension_filter"}},
	{regexp.MustCompile(`(?i)integer division|floor|truncat|float`), []string{"integer_division"}},
	{regexp.MustCompile(`(?i)\bmin\b|\bmax\b|minimum|maximum|smallest|largest`), []string{"min_max_swap"}},
}

// HintedRepairs returns patterns with those that hint (an agent's answer,
// "looks like an off-by-one") points at first, each group in its original
// order. Patterns of other names keep their place after them.
func HintedRepairs(patterns []RepairPattern, hint string) []RepairPattern {
	wanted := map[string]bool{}
	for _, h := range repairHints {
		if h.re.MatchString(hint) {
			for _, p := range h.patterns {
				wanted[p] = true
			}
		}
	}
	if len(wanted) == 0 {
		return patterns
	}
	out := make([]RepairPattern, 0, len(patterns))
	for _, p := range patterns {
		if wanted[p.Name] {
			out = append(out, p)
		}
	}
	for _, p := range patterns {
		if !wanted[p.Name] {
			out = append(out, p)
		}
	}
	return out
}
