// Package evaluation measures how well [codeindex] retrieves the function
// that answers a developer's question, over code nobody here wrote: packages
// of the Go toolchain's own source under $(go env GOROOT)/src.
//
// A labelled set ([Set], stored in testdata/*.json) pairs natural language
// questions with the functions that answer them, in codeindex's symbol
// format ("http.CanonicalHeaderKey", "textproto.(*Reader).ReadMIMEHeader",
// "time.Time.Format"), either by symbol alone (answering in the set's
// packages) or bound to the defining file ([Answer]). [OpenCorpus] indexes
// the whole of GOROOT/src, as a user would, and [Corpus.Evaluate] asks a
// set of it; [Run] indexes only the set's packages (the first sets'
// protocol). Both report, for each search mode, recall@1, recall@5,
// recall@10 and MRR@10 at symbol granularity (a hit counts when it is one
// of the answers) and at file granularity (a hit counts when it is in an
// answer's file).
//
// The test TestRetrievalEvaluation and the command coderag-eval print the
// table; see README.md for the numbers and how to re-run them.
package evaluation

import (
	"bytes"
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
	// Symbols are the acceptable answers, in codeindex's symbol format,
	// wherever the set's packages define them.
	Symbols []string `json:"symbols,omitempty"`
	// Answers are acceptable answers each bound to the file defining it,
	// for symbols whose name alone is ambiguous over a whole GOROOT (twins
	// in build-tagged files are listed one by one).
	Answers []Answer `json:"answers,omitempty"`
}

// An Answer is one acceptable answering definition.
type Answer struct {
	// File is the defining file, slash-separated, relative to GOROOT/src.
	File string `json:"file"`
	// Symbol is the definition in codeindex's symbol format.
	Symbol string `json:"symbol"`
}

// A Set is a labelled question set and the GOROOT packages it is asked of.
type Set struct {
	// Packages are directories under $(go env GOROOT)/src, slash-separated;
	// only each directory's own files are indexed, not its subdirectories,
	// when the set is run over its packages alone ([Run]). A label given
	// by symbol alone answers only in these packages.
	Packages  []string   `json:"goroot_packages"`
	Questions []Question `json:"questions"`
	// Frozen is the date the questions and labels were committed, before
	// anything was measured on them.
	Frozen string `json:"frozen,omitempty"`
}

// LoadSet reads a Set from a JSON file.
func LoadSet(file string) (*Set, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	var s Set
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("evaluation: %s: %w", file, err)
	}
	if len(s.Packages) == 0 || len(s.Questions) == 0 {
		return nil, fmt.Errorf("evaluation: %s: no packages or no questions", file)
	}
	for i, q := range s.Questions {
		if strings.TrimSpace(q.Question) == "" || len(q.Symbols)+len(q.Answers) == 0 {
			return nil, fmt.Errorf("evaluation: %s: question %d has no text or no labels", file, i)
		}
		for _, a := range q.Answers {
			if a.File == "" || a.Symbol == "" {
				return nil, fmt.Errorf("evaluation: %s: question %d has an answer without file or symbol", file, i)
			}
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
		if fi, err := d.Info(); err != nil || fi.Size() > codeindex.DefaultMaxFileSize {
			return err // the index skips files over its size cap
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return addDefinitions(defs, root, filepath.ToSlash(rel))
	})
	if err != nil {
		return nil, fmt.Errorf("evaluation: definitions: %w", err)
	}
	return defs, nil
}

// Resolve returns the acceptable answers of each question of s, in order,
// and the labels that name no definition in defs ("question: label"): an
// [Answer] must be defined in its file, and a symbol given alone answers in
// each file of the set's packages that defines it, and must be defined in
// one.
func Resolve(s *Set, defs map[string][]string) (answers [][]Answer, bad []string) {
	for _, q := range s.Questions {
		var as []Answer
		for _, a := range q.Answers {
			if !slices.Contains(defs[a.Symbol], a.File) {
				bad = append(bad, fmt.Sprintf("%q: %s in %s", q.Question, a.Symbol, a.File))
				continue
			}
			as = append(as, a)
		}
		for _, sym := range q.Symbols {
			n := len(as)
			for _, f := range defs[sym] {
				if slices.Contains(s.Packages, path.Dir(f)) {
					as = append(as, Answer{File: f, Symbol: sym})
				}
			}
			if len(as) == n {
				bad = append(bad, fmt.Sprintf("%q: %s", q.Question, sym))
			}
		}
		answers = append(answers, as)
	}
	return answers, bad
}

// FileDefinitions is [Definitions] restricted to the files the answers of
// s name: enough to check a set labelled by file without chunking a whole
// tree.
func FileDefinitions(root string, s *Set) (map[string][]string, error) {
	defs := map[string][]string{}
	seen := map[string]bool{}
	for _, q := range s.Questions {
		for _, a := range q.Answers {
			if seen[a.File] {
				continue
			}
			seen[a.File] = true
			if err := addDefinitions(defs, root, a.File); err != nil {
				return nil, fmt.Errorf("evaluation: definitions: %w", err)
			}
		}
	}
	return defs, nil
}

// addDefinitions adds the symbols the Go file rel (slash-separated,
// relative to root) defines, as the index chunks it, to defs.
func addDefinitions(defs map[string][]string, root, rel string) error {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	chunks, err := codeindex.ChunkGo(rel, src)
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
}

// Metrics are the scores of one mode at one granularity.
type Metrics struct {
	RecallAt1  float64 // share of questions answered by the first hit
	RecallAt5  float64 // share of questions answered within the first five hits
	RecallAt10 float64 // share of questions answered within the first ten hits
	MRR        float64 // mean of 1/rank of the first answering hit, 0 beyond Limit
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
		m.RecallAt10++
		m.MRR += 1 / float64(r)
	}
	n := float64(len(ranks))
	return Metrics{RecallAt1: m.RecallAt1 / n, RecallAt5: m.RecallAt5 / n, RecallAt10: m.RecallAt10 / n, MRR: m.MRR / n}
}

// Ranks returns the 1-based rank of the first hit that is one of answers
// (its symbol in its file) and of the first hit in a file of one of them
// (0 when there is none).
func Ranks(hits []codeindex.Hit, answers []Answer) (symRank, fileRank int) {
	for i, h := range hits {
		for _, a := range answers {
			if symRank == 0 && h.Symbol == a.Symbol && h.Path == a.File {
				symRank = i + 1
			}
			if fileRank == 0 && h.Path == a.File {
				fileRank = i + 1
			}
		}
	}
	return symRank, fileRank
}

// A Result is the evaluation of one search mode.
type Result struct {
	Mode            codeindex.Mode
	Symbol, File    Metrics
	SymbolRanks     []int           // per question, as in [Score]
	FileRanks       []int           // per question, as in [Score]
	Latencies       []time.Duration // per question, of Index.Search
	FirstHitSymbols []string        // per question, the symbol of the first hit
}

// Evaluate asks every question of s in each mode and scores the hits
// against answers, the acceptable answers of each question ([Resolve]).
func Evaluate(ctx context.Context, ix *codeindex.Index, s *Set, answers [][]Answer, modes []codeindex.Mode, opts ...codeindex.SearchOption) ([]Result, error) {
	if len(answers) != len(s.Questions) {
		return nil, fmt.Errorf("evaluation: %d questions, answers for %d", len(s.Questions), len(answers))
	}
	var out []Result
	for _, m := range modes {
		r := Result{Mode: m}
		for i, q := range s.Questions {
			start := time.Now()
			hits, err := ix.Search(ctx, q.Question, append([]codeindex.SearchOption{codeindex.WithMode(m), codeindex.WithLimit(Limit)}, opts...)...)
			r.Latencies = append(r.Latencies, time.Since(start))
			if err != nil {
				return nil, fmt.Errorf("evaluation: %s search %q: %w", m, q.Question, err)
			}
			sr, fr := Ranks(hits, answers[i])
			r.SymbolRanks = append(r.SymbolRanks, sr)
			r.FileRanks = append(r.FileRanks, fr)
			first := ""
			if len(hits) > 0 {
				first = hits[0].Path + ": " + hits[0].Symbol
			}
			r.FirstHitSymbols = append(r.FirstHitSymbols, first)
		}
		r.Symbol, r.File = Score(r.SymbolRanks), Score(r.FileRanks)
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
	answers, bad := Resolve(s, defs)
	if len(bad) > 0 {
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
	res, err := Evaluate(ctx, ix, s, answers, Modes, opts...)
	return res, defs, err
}

// A Corpus is an index of a whole tree (the whole of GOROOT/src, tests
// included) that every set is asked of, as a user would index it.
type Corpus struct {
	Root  string
	Index *codeindex.Index
	Defs  map[string][]string // symbol -> files under Root defining it
	Build time.Duration       // how long Open and Update took
	Stats codeindex.Stats
}

// OpenCorpus opens (and brings up to date) the index of the tree at root,
// kept in dir, and collects the definitions of its Go files. A dir that
// already holds an up-to-date index is reused: only the walk and the hashes
// of the files are redone.
func OpenCorpus(ctx context.Context, root, dir string, opts ...codeindex.Option) (*Corpus, error) {
	start := time.Now()
	ix, err := codeindex.Open(ctx, root, append([]codeindex.Option{codeindex.WithDir(dir)}, opts...)...)
	if err != nil {
		return nil, err
	}
	st, err := ix.Update(ctx)
	if err != nil {
		ix.Close()
		return nil, err
	}
	c := &Corpus{Root: root, Index: ix, Build: time.Since(start), Stats: st}
	if c.Defs, err = Definitions(root); err != nil {
		ix.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the corpus' index.
func (c *Corpus) Close() error { return c.Index.Close() }

// Evaluate asks s of the whole corpus in every mode. It fails when a label
// names no definition of the corpus.
func (c *Corpus) Evaluate(ctx context.Context, s *Set, opts ...codeindex.SearchOption) ([]Result, error) {
	answers, bad := Resolve(s, c.Defs)
	if len(bad) > 0 {
		return nil, fmt.Errorf("evaluation: labels name definitions not in the index:\n%s", strings.Join(bad, "\n"))
	}
	return Evaluate(ctx, c.Index, s, answers, Modes, opts...)
}

// WriteTable writes results as an aligned table: one row per mode,
// recall@1, recall@5, recall@10 and MRR at symbol and at file granularity.
func WriteTable(w io.Writer, n int, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode (%d questions)\tsym R@1\tsym R@5\tsym R@10\tsym MRR\tfile R@1\tfile R@5\tfile R@10\tfile MRR\t\n", n)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f%%\t%.1f%%\t%.3f\t%.1f%%\t%.1f%%\t%.1f%%\t%.3f\t\n", r.Mode,
			100*r.Symbol.RecallAt1, 100*r.Symbol.RecallAt5, 100*r.Symbol.RecallAt10, r.Symbol.MRR,
			100*r.File.RecallAt1, 100*r.File.RecallAt5, 100*r.File.RecallAt10, r.File.MRR)
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
