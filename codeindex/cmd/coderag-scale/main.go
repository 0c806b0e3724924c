// Command coderag-scale measures codeindex at the scale of the whole Go
// source tree, $(go env GOROOT)/src, on the machine it runs on:
//
//   - the time to copy the tree to a temporary directory (not part of
//     indexing: the copy is what lets the re-index step change a file
//     without touching GOROOT);
//   - the time of the first, full Update of the copy, with the index folder
//     in the temporary directory, and the files and chunks it holds;
//   - the time of an Update after one file was changed (a function appended
//     to it), and of an Update after no change at all: both walk and hash
//     the whole tree, so they are the honest incremental cost at this size;
//   - query latency p50/p95 of bm25, vector (offline hashing embedder) and
//     hybrid search over the questions of the evaluation set (after one
//     keyword and one vector search, timed apart, which compute the BM25
//     statistics and read the vector file), and of
//     "grep -rn" and "git grep --no-index -n" for the same questions' words
//     over the same tree, as the reference a developer would otherwise use;
//   - peak resident memory, VmHWM of /proc/self/status, after indexing and
//     at the end.
//
// Usage, from the repository root:
//
//	go run ./codeindex/cmd/coderag-scale [-root DIR] [-set FILE] [-rounds N] [-grep=false]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/codeindex"
	"github.com/agentgraph/agentgraph/codeindex/evaluation"
)

func main() {
	root := flag.String("root", "", "tree to index (default $(go env GOROOT)/src)")
	set := flag.String("set", "codeindex/evaluation/testdata/questions.json", "question set whose questions are timed")
	rounds := flag.Int("rounds", 3, "times each question is asked per mode")
	changed := flag.String("change", "strings/strings.go", "file, relative to the root, changed before the re-index")
	grep := flag.Bool("grep", true, "also time grep and git grep as the reference")
	flag.Parse()
	if err := run(*root, *set, *rounds, *changed, *grep); err != nil {
		fmt.Fprintln(os.Stderr, "coderag-scale:", err)
		os.Exit(1)
	}
}

func run(root, setFile string, rounds int, changed string, grep bool) error {
	ctx := context.Background()
	if root == "" {
		src, err := evaluation.GOROOTSrc()
		if err != nil {
			return err
		}
		root = src
	}
	s, err := evaluation.LoadSet(setFile)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "coderag-scale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	tree := filepath.Join(work, "src")
	start := time.Now()
	nfiles, nbytes, err := copyTree(root, tree)
	if err != nil {
		return err
	}
	fmt.Printf("tree      %s: %d regular files, %.1f MiB, copied to a temp dir in %v (not part of indexing)\n",
		root, nfiles, float64(nbytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	dir := filepath.Join(work, "index")
	start = time.Now()
	ix, err := codeindex.Open(ctx, tree, codeindex.WithDir(dir))
	if err != nil {
		return err
	}
	defer ix.Close()
	st, err := ix.Update(ctx)
	if err != nil {
		return err
	}
	full := time.Since(start)
	size, _ := dirSize(dir)
	fmt.Printf("index     full Update: %v; %d files, %d chunks, %d skipped, %d Go parse errors; index folder %.1f MiB; VmHWM %s\n",
		full.Round(time.Millisecond), st.Files, st.Chunks, st.Skipped, st.ParseErrors, float64(size)/(1<<20), vmHWM())

	// Re-index after no change, then after one changed file.
	start = time.Now()
	st, err = ix.Update(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("reindex   no change: %v (unchanged %d)\n", time.Since(start).Round(time.Millisecond), st.Unchanged)
	f, err := os.OpenFile(filepath.Join(tree, filepath.FromSlash(changed)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(f, "\n// coderagScaleProbe is appended by coderag-scale.\nfunc coderagScaleProbe() int { return 42 }\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	start = time.Now()
	st, err = ix.Update(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("reindex   one changed file (%s): %v (changed %d, unchanged %d)\n",
		changed, time.Since(start).Round(time.Millisecond), st.Changed, st.Unchanged)

	// Query latency. The first keyword search after an Update counts the
	// keyword index's terms (its BM25 statistics); the first vector search
	// reads the vector file.
	start = time.Now()
	if _, err := ix.Search(ctx, "warm up", codeindex.WithMode(codeindex.BM25)); err != nil {
		return err
	}
	fmt.Printf("query     first keyword search (counts the BM25 statistics): %v\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if _, err := ix.Search(ctx, "warm up", codeindex.WithMode(codeindex.Vector)); err != nil {
		return err
	}
	fmt.Printf("query     first vector search (reads the vector file): %v\n", time.Since(start).Round(time.Millisecond))
	for _, m := range evaluation.Modes {
		var lat []time.Duration
		for range rounds {
			for _, q := range s.Questions {
				start := time.Now()
				if _, err := ix.Search(ctx, q.Question, codeindex.WithMode(m), codeindex.WithLimit(evaluation.Limit)); err != nil {
					return err
				}
				lat = append(lat, time.Since(start))
			}
		}
		fmt.Printf("query     %-7s %s\n", m, percentiles(lat))
	}
	if !grep {
		fmt.Printf("memory    VmHWM at the end: %s\n", vmHWM())
		return nil
	}
	for _, g := range []struct {
		name string
		args func(words []string) (string, []string)
	}{
		{"grep -rn", func(w []string) (string, []string) {
			return "grep", append([]string{"-rn", "-I", "-i", "-F"}, append(patterns(w), tree)...)
		}},
		{"git grep", func(w []string) (string, []string) {
			return "git", append([]string{"-C", tree, "grep", "--no-index", "-n", "-I", "-i", "-F"}, patterns(w)...)
		}},
	} {
		var lat []time.Duration
		var lines int
		for _, q := range s.Questions {
			name, args := g.args(evaluation.ContentWords(q.Question))
			start := time.Now()
			out, err := exec.Command(name, args...).Output()
			lat = append(lat, time.Since(start))
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: no match
				return fmt.Errorf("%s: %w", g.name, err)
			}
			lines += bytes.Count(out, []byte{'\n'})
		}
		fmt.Printf("reference %-8s %s; %d matching lines per question on average (unranked)\n",
			g.name, percentiles(lat), lines/len(s.Questions))
	}
	fmt.Printf("memory    VmHWM at the end: %s\n", vmHWM())
	return nil
}

// patterns turns words into -e arguments.
func patterns(words []string) []string {
	var out []string
	for _, w := range words {
		out = append(out, "-e", w)
	}
	return out
}

func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("p50 %v  p95 %v  max %v  (%d queries)",
		at(0.50).Round(10*time.Microsecond), at(0.95).Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond), len(s))
}

// vmHWM returns the process's peak resident set size from /proc/self/status.
func vmHWM() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// copyTree copies the regular files under from to to, keeping directories.
func copyTree(from, to string) (files int, size int64, err error) {
	err = filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n, err := copyFile(p, dst)
		files++
		size += n
		return err
	})
	return files, size, err
}

func copyFile(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
