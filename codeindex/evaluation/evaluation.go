// Package evaluation measures how well [codeindex] retrieves the function
// that answers a developer's question, over code nobody here wrote: packages
// of the Go toolchain's own source under $(go env GOROOT)/src.
//
// A labelled set ([Set], stored in testdata/questions.json) pairs natural
// language questions with the symbols of the functions that answer them, in
// codeindex's symbol format ("http.CanonicalHeaderKey",
// "textproto.(*Reader).ReadMIMEHeader", "time.Time.Format"). [Run] indexes
// the set's packages and reports, for each search mode, recall@1, recall@5
// and MRR@10 at symbol granularity (a hit counts when its symbol is one of
// the labels) and, for reference, at file granularity (a hit counts when its
// file defines one of the labels).
//
// The test TestRetrievalEvaluation and the command coderag-eval print the
// table; see README.md for the numbers and how to re-run them.
package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentgraph/agentgraph/codeindex"
)

// Limit is how many hits each question asks for: MRR is computed over them
// (MRR@10), and a question whose answer is not among them scores 0.
const Limit = 10

// A Question is one labelled query.
type Question struct {
	// Question is the query as a developer would type it.
	Question string `json:"question"`
	// Symbols are the acceptable answers, in codeindex's symbol format.
	Symbols []string `json:"symbols"`
}

// A Set is a labelled question set and the GOROOT packages it is asked of.
type Set struct {
	// Packages are directories under $(go env GOROOT)/src, slash-separated;
	// only each directory's own files are indexed, not its subdirectories.
	Packages  []string   `json:"goroot_packages"`
	Questions []Question `json:"questions"`
}

// LoadSet reads a Set from a JSON file.
func LoadSet(file string) (*Set, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	var s Set
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("evaluation: %s: %w", file, err)
	}
	if len(s.Packages) == 0 || len(s.Questions) == 0 {
		return nil, fmt.Errorf("evaluation: %s: no packages or no questions", file)
	}
	for i, q := range s.Questions {
		if strings.TrimSpace(q.Question) == "" || len(q.Symbols) == 0 {
			return nil, fmt.Errorf("evaluation: %s: question %d has no text or no symbols", file, i)
		}
	}
	return &s, nil
}

// GOROOTSrc returns $(go env GOROOT)/src, asking the go command so that the
// toolchain on PATH, not the one this binary was built with, is measured.
func GOROOTSrc() (string, error) {
	out, err := execGo("env", "GOROOT")
	if err != nil {
		return "", fmt.Errorf("evaluation: go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(out), "src")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("evaluation: GOROOT source %s is missing", src)
	}
	return src, nil
}

// CopyPackages copies the regular files of each package directory of src
// (not its subdirectories) to the same relative place under dst, so that
// the index sees paths relative to the root of the copy, such as "net/http" followed by a file name.
func CopyPackages(src, dst string, pkgs []string) error {
	for _, p := range pkgs {
		from := filepath.Join(src, filepath.FromSlash(p))
		to := filepath.Join(dst, filepath.FromSlash(p))
		ents, err := os.ReadDir(from)
		if err != nil {
			return fmt.Errorf("evaluation: package %s: %w", p, err)
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			return fmt.Errorf("evaluation: %w", err)
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("evaluation: copy %s: %w", from, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	return nil
}

// Definitions maps every symbol defined by the Go files under root to the
// slash-separated paths, relative to root, of the files that define it. It
// chunks with [codeindex.ChunkGo], as the index does, so a symbol is here
// exactly when the index holds a chunk of that symbol.
func Definitions(root string) (map[string][]string, error) {
	defs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		chunks, err := codeindex.ChunkGo(filepath.ToSlash(rel), src)
		var pe *codeindex.ParseError
		if errors.As(err, &pe) {
			return nil // the index chunks it by lines: no symbols
		} else if err != nil {
			return err
		}
		for _, c := range chunks {
			if !slices.Contains(defs[c.Symbol], c.Path) {
				defs[c.Symbol] = append(defs[c.Symbol], c.Path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("evaluation: definitions: %w", err)
	}
	return defs, nil
}

// UnknownLabels returns the labels of s that name no symbol in defs, as
// "question: symbol" strings.
func UnknownLabels(s *Set, defs map[string][]string) []string {
	var bad []string
	for _, q := range s.Questions {
		for _, sym := range q.Symbols {
			if len(defs[sym]) == 0 {
				bad = append(bad, fmt.Sprintf("%q: %s", q.Question, sym))
			}
		}
	}
	return bad
}

// Metrics are the scores of one mode at one granularity.
type Metrics struct {
	RecallAt1 float64 // share of questions answered by the first hit
	RecallAt5 float64 // share of questions answered within the first five hits
	MRR       float64 // mean of 1/rank of the first answering hit, 0 beyond Limit
}

// Score computes Metrics from the 1-based rank of the first answering hit of
// each question, 0 meaning not found within [Limit].
func Score(ranks []int) Metrics {
	if len(ranks) == 0 {
		return Metrics{}
	}
	var m Metrics
	for _, r := range ranks {
		if r < 1 || r > Limit {
			continue
		}
		if r == 1 {
			m.RecallAt1++
		}
		if r <= 5 {
			m.RecallAt5++
		}
		m.MRR += 1 / float64(r)
	}
	n := float64(len(ranks))
	return Metrics{RecallAt1: m.RecallAt1 / n, RecallAt5: m.RecallAt5 / n, MRR: m.MRR / n}
}

// Ranks returns the 1-based rank of the first hit whose symbol is one of
// symbols and of the first hit in a file that defines one of them (0 when
// there is none).
func Ranks(hits []codeindex.Hit, symbols []string, defs map[string][]string) (symRank, fileRank int) {
	files := map[string]bool{}
	for _, s := range symbols {
		for _, f := range defs[s] {
			files[f] = true
		}
	}
	for i, h := range hits {
		if symRank == 0 && slices.Contains(symbols, h.Symbol) {
			symRank = i + 1
		}
		if fileRank == 0 && files[h.Path] {
			fileRank = i + 1
		}
	}
	return symRank, fileRank
}

// A Result is the evaluation of one search mode.
type Result struct {
	Mode            codeindex.Mode
	Symbol, File    Metrics
	SymbolRanks     []int           // per question, as in [Score]
	Latencies       []time.Duration // per question, of Index.Search
	FirstHitSymbols []string        // per question, the symbol of the first hit
}

// Evaluate asks every question of s in each mode and scores the answers.
func Evaluate(ctx context.Context, ix *codeindex.Index, s *Set, defs map[string][]string, modes []codeindex.Mode, opts ...codeindex.SearchOption) ([]Result, error) {
	var out []Result
	for _, m := range modes {
		r := Result{Mode: m}
		var fileRanks []int
		for _, q := range s.Questions {
			start := time.Now()
			hits, err := ix.Search(ctx, q.Question, append([]codeindex.SearchOption{codeindex.WithMode(m), codeindex.WithLimit(Limit)}, opts...)...)
			r.Latencies = append(r.Latencies, time.Since(start))
			if err != nil {
				return nil, fmt.Errorf("evaluation: %s search %q: %w", m, q.Question, err)
			}
			sr, fr := Ranks(hits, q.Symbols, defs)
			r.SymbolRanks = append(r.SymbolRanks, sr)
			fileRanks = append(fileRanks, fr)
			first := ""
			if len(hits) > 0 {
				first = hits[0].Symbol
			}
			r.FirstHitSymbols = append(r.FirstHitSymbols, first)
		}
		r.Symbol, r.File = Score(r.SymbolRanks), Score(fileRanks)
		out = append(out, r)
	}
	return out, nil
}

// Modes are the search modes evaluated, in table order.
var Modes = []codeindex.Mode{codeindex.BM25, codeindex.Vector, codeindex.Hybrid}

// Run copies the set's packages from goroot (a GOROOT/src directory) into
// a fresh directory under work, indexes them and evaluates every mode. It
// returns the definitions it found so callers can report per question.
func Run(ctx context.Context, s *Set, goroot, work string, opts ...codeindex.SearchOption) ([]Result, map[string][]string, error) {
	root, err := os.MkdirTemp(work, "corpus")
	if err != nil {
		return nil, nil, fmt.Errorf("evaluation: %w", err)
	}
	if err := CopyPackages(goroot, root, s.Packages); err != nil {
		return nil, nil, err
	}
	defs, err := Definitions(root)
	if err != nil {
		return nil, nil, err
	}
	if bad := UnknownLabels(s, defs); len(bad) > 0 {
		return nil, nil, fmt.Errorf("evaluation: labels name symbols not in the index:\n%s", strings.Join(bad, "\n"))
	}
	ix, err := codeindex.Open(ctx, root, codeindex.WithDir(filepath.Join(work, path.Base(root)+".coderag")))
	if err != nil {
		return nil, nil, err
	}
	defer ix.Close()
	if _, err := ix.Update(ctx); err != nil {
		return nil, nil, err
	}
	res, err := Evaluate(ctx, ix, s, defs, Modes, opts...)
	return res, defs, err
}

// WriteTable writes results as an aligned table: one row per mode, recall@1,
// recall@5 and MRR at symbol and at file granularity.
func WriteTable(w io.Writer, n int, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode (%d questions)\tsym R@1\tsym R@5\tsym MRR\tfile R@1\tfile R@5\tfile MRR\t\n", n)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f%%\t%.3f\t%.1f%%\t%.1f%%\t%.3f\t\n", r.Mode,
			100*r.Symbol.RecallAt1, 100*r.Symbol.RecallAt5, r.Symbol.MRR,
			100*r.File.RecallAt1, 100*r.File.RecallAt5, r.File.MRR)
	}
	return tw.Flush()
}

// WriteRanks writes, per question, the rank of the first answering symbol in
// each mode ("-" when not in the top Limit) and hybrid's first hit.
func WriteRanks(w io.Writer, s *Set, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "#\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t", r.Mode)
	}
	fmt.Fprint(tw, "question\tlast mode's first hit\n")
	for i, q := range s.Questions {
		fmt.Fprintf(tw, "%d\t", i+1)
		for _, r := range results {
			if r.SymbolRanks[i] == 0 {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%d\t", r.SymbolRanks[i])
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", q.Question, results[len(results)-1].FirstHitSymbols[i])
	}
	return tw.Flush()
}

// execGo runs the go command and returns its standard output.
func execGo(args ...string) (string, error) {
	out, err := exec.Command("go", args...).Output()
	return string(out), err
}

// stopWords are English function words and question words that carry no
// signal for a search over code; [ContentWords] drops them.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "does": true, "for": true, "from": true, "how": true, "i": true,
	"in": true, "is": true, "it": true, "its": true, "of": true, "on": true, "or": true, "s": true,
	"that": true, "the": true, "their": true, "to": true, "what": true, "when": true, "where": true,
	"which": true, "with": true, "without": true,
}

// ContentWords returns the lowercased words of a question without English
// function words, in order: what a developer would feed to grep.
func ContentWords(q string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if !stopWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
