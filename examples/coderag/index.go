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
	fs := newFlagSet("index", "index [--rebuild] [DIR]",
		"Indexes DIR (default: the current directory) into DIR/"+codeindex.DefaultDir+
			", incrementally: unchanged files are skipped, deleted ones dropped.", stderr)
	rebuild := fs.Bool("rebuild", false, "delete the index of DIR first and index every file again (for a damaged index)")
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
	ix, err := index(ctx, dir, *rebuild, progress, stdout, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	if err := ix.Close(); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// index brings the index of dir up to date — after deleting it, when
// rebuild — calling progress (if not nil) after each file, and prints a
// summary line to w; waits for other coderag processes are reported on
// errw. It returns the index, open; the caller closes it.
func index(ctx context.Context, dir string, rebuild bool, progress func(codeindex.Progress), w, errw io.Writer) (*codeindex.Index, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	var opts []codeindex.Option
	if progress != nil {
		opts = append(opts, codeindex.WithProgress(progress))
	}
	if rebuild {
		opts = append(opts, codeindex.WithRebuild())
	}
	ix, err := openWaiting(ctx, dir, errw, opts...)
	if err != nil {
		return nil, damaged(dir, err)
	}
	start := time.Now()
	st, err := ix.Update(ctx)
	if err != nil {
		ix.Close()
		return nil, damaged(dir, err)
	}
	elapsed := time.Since(start)
	seen := st.Unchanged + st.Added + st.Changed + st.Skipped
	fmt.Fprintf(w, "indexed %s: %d files, %d chunks (%d added, %d changed, %d unchanged, %d removed, %d skipped) in %s, %.0f files/s\n",
		ix.Root(), st.Files, st.Chunks, st.Added, st.Changed, st.Unchanged, st.Removed, st.Skipped,
		elapsed.Round(100*time.Microsecond), float64(seen)/max(elapsed.Seconds(), 1e-6))
	return ix, nil
}

// damagedError is an error opening or updating an index that may be
// damaged: it says how to rebuild it.
type damagedError struct {
	dir string
	err error
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("%v\nthe index in %s may be damaged; rebuild it with: coderag index --rebuild %s",
		e.err, filepath.Join(e.dir, codeindex.DefaultDir), e.dir)
}

func (e *damagedError) Unwrap() error { return e.err }

// damaged returns err as a *damagedError unless it has another cause
// than the index folder's content: a cancelled run, the lock of another
// process, or a bad option.
func damaged(dir string, err error) error {
	_, locked := errors.AsType[*codeindex.LockedError](err)
	_, option := errors.AsType[*codeindex.OptionError](err)
	if locked || option || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &damagedError{dir: dir, err: err}
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

// errNotIndexed is returned for a directory that has no index, or an
// empty one (empty says which).
type errNotIndexed struct {
	dir   string
	empty bool
}

func (e errNotIndexed) Error() string {
	if e.empty {
		return fmt.Sprintf("the index of %s holds no file: it was never finished (an interrupted coderag index leaves it empty), "+
			"or there is nothing to index; run: coderag index %s", e.dir, e.dir)
	}
	return fmt.Sprintf("%s has no index (no %s folder); run: coderag index %s", e.dir, codeindex.DefaultDir, e.dir)
}

// openExisting opens the index of dir, which must have been built by
// `coderag index`, waiting while another process holds it (see
// openWaiting; w tells about the wait).
func openExisting(ctx context.Context, dir string, w io.Writer) (*codeindex.Index, error) {
	if _, err := os.Stat(filepath.Join(dir, codeindex.DefaultDir)); errors.Is(err, fs.ErrNotExist) {
		return nil, errNotIndexed{dir: dir}
	}
	ix, err := openWaiting(ctx, dir, w)
	if err != nil {
		return nil, damaged(dir, err)
	}
	if ix.Files() == 0 {
		ix.Close()
		return nil, errNotIndexed{dir: dir, empty: true}
	}
	return ix, nil
}

// searchCommand is `coderag search "query"`.
func searchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("search", `search "query" [--mode bm25|vector|hybrid] [--json] [--limit N] [--dir DIR]`,
		"Searches the index of DIR (built by coderag index). Vector search uses the offline\n"+
			"HashingEmbedder (hashed tokens and trigrams, not a semantic model).", stderr)
	mode := fs.String("mode", "hybrid", "ranking: bm25, vector or hybrid (both, their normalised scores fused by CombMNZ)")
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
	ix, err := openExisting(ctx, *dir, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer ix.Close()
	hits, err := ix.Search(ctx, pos[0], codeindex.WithMode(m), codeindex.WithLimit(*limit))
	if err != nil {
		return fail(stderr, damaged(*dir, err))
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
	about := "Prints the call sites of the functions NAME denotes"
	if cmd == "callees" {
		about = "Prints the calls made by the functions NAME denotes"
	}
	fs := newFlagSet(cmd, cmd+" NAME [--dir DIR] [--json]",
		about+": from the call graph of the Go packages\n"+
			"under DIR (class hierarchy analysis) and from that of its Python files, resolved by name\n"+
			"(approximate). NAME is a symbol as search prints it (pricing.Discount, cart.(*Cart).Add,\n"+
			"shop.pricing.Cart.checkout), a full Go name (example.com/shop/pricing.Discount) or a bare name.", stderr)
	dir := fs.String("dir", ".", "the directory (a Go module, Python files or both)")
	asJSON := fs.Bool("json", false, "print one JSON object per call and line")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErrorf(fs, "want one function name, got %d arguments", len(pos))
	}
	cg, err := loadCallGraphs(ctx, *dir)
	if err != nil {
		return fail(stderr, err)
	}
	calls, err := cg.query(cmd, pos[0])
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprint(stderr, cg.note())
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

// openWaiting opens the index of dir with opts, waiting while another
// Index holds its folder — another coderag process indexing or asking,
// which codeindex.Open reports as a *codeindex.LockedError after 2 s —
// and saying so once on w (if not nil). The wait ends with ctx.
func openWaiting(ctx context.Context, dir string, w io.Writer, opts ...codeindex.Option) (*codeindex.Index, error) {
	told := false
	for {
		ix, err := codeindex.Open(ctx, dir, opts...)
		if _, locked := errors.AsType[*codeindex.LockedError](err); !locked {
			return ix, err
		}
		if !told && w != nil {
			fmt.Fprintf(w, "coderag: waiting for another process using the index of %s\n", dir)
			told = true
		}
	}
}
