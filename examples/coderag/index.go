package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentgraph/agentgraph/codeindex"
)

// indexCommand is `coderag index [DIR]`.
func indexCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("index", "index [DIR]",
		"Indexes DIR (default: the current directory) into DIR/"+codeindex.DefaultDir+
			", incrementally: unchanged files are skipped, deleted ones dropped.", stderr)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageErrorf(fs, "want at most one directory, got %d arguments", len(pos))
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	var progress func(codeindex.Progress)
	if isTerminal(stderr) {
		progress = progressLine(stderr, time.Now())
	}
	ix, err := index(ctx, dir, progress, stdout)
	if err != nil {
		return fail(stderr, err)
	}
	if err := ix.Close(); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// index brings the index of dir up to date, calling progress (if not nil)
// after each file, and prints a summary line to w. It returns the index,
// open; the caller closes it.
func index(ctx context.Context, dir string, progress func(codeindex.Progress), w io.Writer) (*codeindex.Index, error) {
	var opts []codeindex.Option
	if progress != nil {
		opts = append(opts, codeindex.WithProgress(progress))
	}
	ix, err := codeindex.Open(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	st, err := ix.Update(ctx)
	if err != nil {
		ix.Close()
		return nil, err
	}
	elapsed := time.Since(start)
	seen := st.Unchanged + st.Added + st.Changed + st.Skipped
	fmt.Fprintf(w, "indexed %s: %d files, %d chunks (%d added, %d changed, %d unchanged, %d removed, %d skipped) in %s, %.0f files/s\n",
		ix.Root(), st.Files, st.Chunks, st.Added, st.Changed, st.Unchanged, st.Removed, st.Skipped,
		elapsed.Round(100*time.Microsecond), float64(seen)/max(elapsed.Seconds(), 1e-6))
	return ix, nil
}

// progressLine returns a progress callback that rewrites one line of w
// (a terminal) with the files done, the total and the rate, at most ten
// times a second, and ends the line after the last file.
func progressLine(w io.Writer, start time.Time) func(codeindex.Progress) {
	var last time.Time
	return func(p codeindex.Progress) {
		now := time.Now()
		done := p.Done == p.Total
		if !done && now.Sub(last) < 100*time.Millisecond {
			return
		}
		last = now
		rate := float64(p.Done) / max(now.Sub(start).Seconds(), 1e-6)
		fmt.Fprintf(w, "\r\033[Kindexing %d/%d files, %.0f files/s", p.Done, p.Total, rate)
		if done {
			fmt.Fprintln(w)
		}
	}
}

// isTerminal reports whether w is a character device, a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// errNotIndexed is returned for a directory that has no index.
type errNotIndexed struct{ dir string }

func (e errNotIndexed) Error() string {
	return fmt.Sprintf("%s has no index (no %s folder); run: coderag index %s", e.dir, codeindex.DefaultDir, e.dir)
}

// openExisting opens the index of dir, which must have been built by
// `coderag index`.
func openExisting(ctx context.Context, dir string) (*codeindex.Index, error) {
	if _, err := os.Stat(filepath.Join(dir, codeindex.DefaultDir)); errors.Is(err, fs.ErrNotExist) {
		return nil, errNotIndexed{dir}
	}
	return codeindex.Open(ctx, dir)
}

// searchCommand is `coderag search "query"`.
func searchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("search", `search "query" [--mode bm25|vector|hybrid] [--json] [--limit N] [--dir DIR]`,
		"Searches the index of DIR (built by coderag index). Vector search uses the offline\n"+
			"HashingEmbedder (hashed tokens and trigrams, not a semantic model).", stderr)
	mode := fs.String("mode", "hybrid", "ranking: bm25, vector or hybrid (both, their scores normalised and added)")
	asJSON := fs.Bool("json", false, "print one JSON object per hit and line")
	limit := fs.Int("limit", codeindex.DefaultLimit, "the number of hits at most")
	dir := fs.String("dir", ".", "the indexed directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErrorf(fs, "want one query, got %d arguments", len(pos))
	}
	m, err := codeindex.ParseMode(*mode)
	if err != nil {
		return usageErrorf(fs, "--mode %q: want bm25, vector or hybrid", *mode)
	}
	if *limit < 1 {
		return usageErrorf(fs, "--limit %d: want at least 1", *limit)
	}
	ix, err := openExisting(ctx, *dir)
	if err != nil {
		return fail(stderr, err)
	}
	defer ix.Close()
	hits, err := ix.Search(ctx, pos[0], codeindex.WithMode(m), codeindex.WithLimit(*limit))
	if err != nil {
		return fail(stderr, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, h := range hits {
			if err := enc.Encode(h); err != nil {
				return fail(stderr, err)
			}
		}
		return exitOK
	}
	if len(hits) == 0 {
		fmt.Fprintln(stdout, "no hits")
	}
	fmt.Fprint(stdout, formatHits(hits))
	return exitOK
}

// formatHits renders hits one a line: "path:start-end  kind symbol  (score)".
func formatHits(hits []codeindex.Hit) string {
	var b []byte
	for i, h := range hits {
		sym := h.Symbol
		if sym == "" {
			sym = "-"
		}
		b = fmt.Appendf(b, "%2d. %s:%d-%d  %s %s  (%.4f)\n", i+1, h.Path, h.StartLine, h.EndLine, h.Kind, sym, h.Score)
	}
	return string(b)
}

// callsCommand is `coderag callers NAME` and `coderag callees NAME`.
func callsCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	about := "Prints the call sites of the Go functions NAME denotes"
	if cmd == "callees" {
		about = "Prints the calls made by the Go functions NAME denotes"
	}
	fs := newFlagSet(cmd, cmd+" NAME [--dir DIR] [--json]",
		about+", from the call graph of the Go module\n"+
			"at DIR (class hierarchy analysis). NAME is a symbol as search prints it (pricing.Discount,\n"+
			"cart.(*Cart).Add), a full name (example.com/shop/pricing.Discount) or a bare name.", stderr)
	dir := fs.String("dir", ".", "the root of the Go module")
	asJSON := fs.Bool("json", false, "print one JSON object per call and line")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErrorf(fs, "want one function name, got %d arguments", len(pos))
	}
	cg, err := codeindex.LoadCallGraph(ctx, *dir)
	if err != nil {
		return fail(stderr, err)
	}
	calls, err := queryCalls(cg, cmd, pos[0])
	if err != nil {
		return fail(stderr, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, c := range calls {
			if err := enc.Encode(c); err != nil {
				return fail(stderr, err)
			}
		}
		return exitOK
	}
	fmt.Fprint(stdout, formatCalls(cmd, pos[0], calls))
	return exitOK
}

// queryCalls asks cg for the callers or the callees (by cmd) of name.
func queryCalls(cg *codeindex.CallGraph, cmd, name string) ([]codeindex.Call, error) {
	if cmd == "callees" {
		return cg.Callees(name)
	}
	return cg.Callers(name)
}

// formatCalls renders calls one a line, "path:line  in caller: calls
// callee", or says there are none.
func formatCalls(cmd, name string, calls []codeindex.Call) string {
	if len(calls) == 0 {
		if cmd == "callees" {
			return fmt.Sprintf("%s calls no function of the module's packages or their dependencies\n", name)
		}
		return fmt.Sprintf("no calls of %s in the module\n", name)
	}
	var b []byte
	for _, c := range calls {
		dyn := ""
		if c.Dynamic {
			dyn = "  (dynamic: through an interface or function value)"
		}
		b = fmt.Appendf(b, "%s:%d  in %s: calls %s%s\n", c.Path, c.Line, c.Caller, c.Callee, dyn)
	}
	return string(b)
}
