package codeindex_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/codeindex"
)

// tree is a small project: file path to content.
var tree = map[string]string{
	"web/request.go": `package web

// parseHTTPRequest reads a request line and its headers.
func parseHTTPRequest(line string) (string, error) {
	return line, nil
}

// Server answers requests.
type Server struct{ Addr string }

// ListenAndServe starts the server.
func (s *Server) ListenAndServe() error { return nil }
`,
	"store/config.go": `package store

// readConfigFile loads settings from disk.
func readConfigFile(path string) ([]byte, error) { return nil, nil }
`,
	"README.md": "# Demo\n\nThe shopping cart service keeps baskets in memory.\n",
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		require.NoError(t, os.WriteFile(abs, []byte(content), 0o644))
	}
}

// indexed writes tree to a temporary root and indexes it.
func indexed(t *testing.T, opts ...codeindex.Option) (*codeindex.Index, string) {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, tree)
	ix, err := codeindex.Open(context.Background(), root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	return ix, root
}

func symbols(hits []codeindex.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Symbol)
	}
	return out
}

func paths(hits []codeindex.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Path)
	}
	return out
}

func TestSearchBM25FindsDefinitionBySplitIdentifier(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "parse http request", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(1))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	h := hits[0]
	h.Score = 0
	want := codeindex.Hit{Path: "web/request.go", StartLine: 3, EndLine: 6, Symbol: "web.parseHTTPRequest", Kind: codeindex.KindFunc}
	require.Empty(t, cmp.Diff(want, h))
}

func TestSearchBM25MatchesWholeIdentifier(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "readConfigFile", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "store.readConfigFile", hits[0].Symbol)
}

func TestSearchBM25FindsLineChunksOfOtherFiles(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "shopping baskets", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.Equal(t, []string{"README.md"}, paths(hits))
	require.Equal(t, codeindex.KindLines, hits[0].Kind)
	require.Equal(t, 1, hits[0].StartLine)
	require.Equal(t, 3, hits[0].EndLine)
}

func TestSearchVectorRanksByOfflineHashingEmbedding(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "server listen serve", codeindex.WithMode(codeindex.Vector), codeindex.WithLimit(1))
	require.NoError(t, err)
	require.Equal(t, []string{"web.(*Server).ListenAndServe"}, symbols(hits))
	require.Greater(t, hits[0].Score, 0.0)
	require.LessOrEqual(t, hits[0].Score, 1.0+1e-6)
}

func TestSearchHybridIsTheDefaultMode(t *testing.T) {
	ix, _ := indexed(t)
	hybrid, err := ix.Search(context.Background(), "config file", codeindex.WithMode(codeindex.Hybrid), codeindex.WithFileWeight(0))
	require.NoError(t, err)
	def, err := ix.Search(context.Background(), "config file", codeindex.WithFileWeight(0))
	require.NoError(t, err)
	require.Equal(t, hybrid, def)
	require.Equal(t, "store.readConfigFile", def[0].Symbol)
	// Both rankings put it first: min-max normalised, 1 from each, and
	// CombMNZ multiplies the sum by the two rankings that returned it
	// (without the file ranking, which would add its share).
	require.InDelta(t, 4, def[0].Score, 1e-9)
}

func TestSearchHybridWithMinMaxAddsNormalisedScores(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "config file", codeindex.WithFusion(codeindex.FuseMinMax), codeindex.WithFileWeight(0))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "store.readConfigFile", hits[0].Symbol)
	// Both rankings put it first: 1 from each, not multiplied.
	require.InDelta(t, 2, hits[0].Score, 1e-9)
}

func TestSearchWithoutTermsHasNoHits(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "  () {} ")
	require.NoError(t, err)
	require.Empty(t, hits)
}

func TestSearchRejectsBadOptions(t *testing.T) {
	ix, _ := indexed(t)
	tests := []struct {
		name   string
		opt    codeindex.SearchOption
		option string
	}{
		{"zero limit", codeindex.WithLimit(0), "WithLimit"},
		{"unknown mode", codeindex.WithMode(codeindex.Mode(9)), "WithMode"},
		{"negative k", codeindex.WithRRFK(-1), "WithRRFK"},
		{"zero weights", codeindex.WithWeights(0, 0), "WithWeights"},
		{"negative weight", codeindex.WithWeights(-1, 1), "WithWeights"},
		{"unknown fusion", codeindex.WithFusion(codeindex.Fusion(9)), "WithFusion"},
		{"negative file weight", codeindex.WithFileWeight(-1), "WithFileWeight"},
		{"file weight not a number", codeindex.WithFileWeight(math.NaN()), "WithFileWeight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Search(context.Background(), "server", tt.opt)
			var oe *codeindex.OptionError
			require.True(t, errors.As(err, &oe), "%v", err)
			require.Equal(t, tt.option, oe.Option)
		})
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name   string
		opt    codeindex.Option
		option string
	}{
		{"nil embedder", codeindex.WithEmbedder(nil), "WithEmbedder"},
		{"zero window", codeindex.WithLineWindow(0, 0), "WithLineWindow"},
		{"overlap as large as window", codeindex.WithLineWindow(5, 5), "WithLineWindow"},
		{"zero max size", codeindex.WithMaxFileSize(0), "WithMaxFileSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codeindex.Open(context.Background(), t.TempDir(), tt.opt)
			var oe *codeindex.OptionError
			require.True(t, errors.As(err, &oe), "%v", err)
			require.Equal(t, tt.option, oe.Option)
		})
	}
}

func TestParseModeRoundTrips(t *testing.T) {
	for _, m := range []codeindex.Mode{codeindex.BM25, codeindex.Vector, codeindex.Hybrid} {
		got, err := codeindex.ParseMode(m.String())
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	_, err := codeindex.ParseMode("fuzzy")
	var oe *codeindex.OptionError
	require.True(t, errors.As(err, &oe))
}

func TestParseFusionRoundTrips(t *testing.T) {
	for _, f := range []codeindex.Fusion{codeindex.FuseMNZ, codeindex.FuseMinMax, codeindex.FuseRRF} {
		got, err := codeindex.ParseFusion(f.String())
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	_, err := codeindex.ParseFusion("borda")
	var oe *codeindex.OptionError
	require.True(t, errors.As(err, &oe))
}

func TestSearchHybridWithRRFScoresReciprocalRanks(t *testing.T) {
	ix, _ := indexed(t)
	hits, err := ix.Search(context.Background(), "config file", codeindex.WithFusion(codeindex.FuseRRF), codeindex.WithFileWeight(0))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "store.readConfigFile", hits[0].Symbol)
	// Both rankings put it first: 1/(60+1) from each.
	require.InDelta(t, 2.0/61, hits[0].Score, 1e-9)
}

func TestUpdateSkipsUnchangedFiles(t *testing.T) {
	ix, _ := indexed(t)
	st, err := ix.Update(context.Background())
	require.NoError(t, err)
	require.Equal(t, codeindex.Stats{Files: 3, Chunks: 7, Unchanged: 3}, st)
}

func TestUpdateReindexesChangedAddedAndDeletedFiles(t *testing.T) {
	ctx := context.Background()
	ix, root := indexed(t)
	writeTree(t, root, map[string]string{
		"store/config.go": "package store\n\n// loadSettingsFile replaces readConfigFile.\nfunc loadSettingsFile() {}\n",
		"cart/cart.go":    "package cart\n\n// Checkout pays for the basket.\nfunc Checkout() {}\n",
	})
	require.NoError(t, os.Remove(filepath.Join(root, "README.md")))

	st, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, codeindex.Stats{Files: 3, Chunks: 8, Unchanged: 1, Added: 1, Changed: 1, Removed: 1}, st)

	for _, mode := range []codeindex.Mode{codeindex.BM25, codeindex.Vector, codeindex.Hybrid} {
		t.Run(mode.String(), func(t *testing.T) {
			hits, err := ix.Search(ctx, "load settings file", codeindex.WithMode(mode), codeindex.WithLimit(1))
			require.NoError(t, err)
			require.Equal(t, []string{"store.loadSettingsFile"}, symbols(hits))

			hits, err = ix.Search(ctx, "checkout", codeindex.WithMode(mode), codeindex.WithLimit(1))
			require.NoError(t, err)
			require.Equal(t, []string{"cart.Checkout"}, symbols(hits))

			hits, err = ix.Search(ctx, "shopping baskets memory readConfigFile", codeindex.WithMode(mode), codeindex.WithLimit(50))
			require.NoError(t, err)
			require.NotContains(t, paths(hits), "README.md")
			require.NotContains(t, symbols(hits), "store.readConfigFile")
		})
	}
}

func TestReopenedIndexSearchesWithoutUpdate(t *testing.T) {
	ctx := context.Background()
	ix, root := indexed(t)
	want, err := ix.Search(ctx, "server requests")
	require.NoError(t, err)
	require.NoError(t, ix.Close())

	re, err := codeindex.Open(ctx, root)
	require.NoError(t, err)
	defer re.Close()
	got, err := re.Search(ctx, "server requests")
	require.NoError(t, err)
	require.Equal(t, want, got)
	st, err := re.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, st.Unchanged)
	require.Zero(t, st.Added+st.Changed+st.Removed)
}

func TestUpdateReembedsEverythingWhenTheEmbedderChanges(t *testing.T) {
	ctx := context.Background()
	ix, root := indexed(t, codeindex.WithEmbedder(codeindex.NewHashingEmbedder(64)))
	require.NoError(t, ix.Close())

	re, err := codeindex.Open(ctx, root, codeindex.WithEmbedder(codeindex.NewHashingEmbedder(32)))
	require.NoError(t, err)
	defer re.Close()
	st, err := re.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, st.Changed)
	hits, err := re.Search(ctx, "checkout config", codeindex.WithMode(codeindex.Vector))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
}

func TestUpdateSkipsBinaryVendorAndTestdata(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"main.go":             "package main\n\nfunc main() {}\n",
		"vendor/dep/dep.go":   "package dep\n\nfunc Vendored() {}\n",
		"testdata/case.txt":   "fixture words\n",
		".git/config":         "[core]\n",
		"image.png":           "\x89PNG\x00\x01binary",
		"big.txt":             "too large for the limit of forty bytes\n",
		".coderag/notes.txt":  "an index folder is never indexed\n",
		"pkg/testdata/in.txt": "more fixture\n",
	})
	tests := []struct {
		name string
		opts []codeindex.Option
		want []string
	}{
		{"default", nil, []string{"main.go main", "main.go main.main"}},
		{"with testdata", []codeindex.Option{codeindex.WithTestdata(true)}, []string{"main.go main", "main.go main.main", "pkg/testdata/in.txt ", "testdata/case.txt "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]codeindex.Option{codeindex.WithDir(t.TempDir()), codeindex.WithMaxFileSize(35)}, tt.opts...)
			ix, err := codeindex.Open(context.Background(), root, opts...)
			require.NoError(t, err)
			defer ix.Close()
			var seen []string
			st, err := ix.Update(context.Background())
			require.NoError(t, err)
			require.Equal(t, 2, st.Skipped) // image.png is binary, big.txt too large
			hits, err := ix.Search(context.Background(), "main vendored fixture words more core png large index", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(50))
			require.NoError(t, err)
			for _, h := range hits {
				seen = append(seen, h.Path+" "+h.Symbol)
			}
			require.ElementsMatch(t, tt.want, seen)
		})
	}
}

func TestUpdateReportsProgressPerFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, tree)
	var got []codeindex.Progress
	ix, err := codeindex.Open(context.Background(), root, codeindex.WithProgress(func(p codeindex.Progress) { got = append(got, p) }))
	require.NoError(t, err)
	defer ix.Close()
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	want := []codeindex.Progress{
		{Done: 1, Total: 3, Path: "README.md"},
		{Done: 2, Total: 3, Path: "store/config.go"},
		{Done: 3, Total: 3, Path: "web/request.go"},
	}
	require.Empty(t, cmp.Diff(want, got))
}

func TestUpdateDropsAFileRemovedWhileItRuns(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, tree)
	remove := ""
	ix, err := codeindex.Open(ctx, root, codeindex.WithProgress(func(p codeindex.Progress) {
		if p.Path == "README.md" && remove != "" { // the walk has listed the file, Update has not looked at it yet
			require.NoError(t, os.Remove(filepath.Join(root, remove)))
		}
	}))
	require.NoError(t, err)
	defer ix.Close()

	remove = "store/config.go" // never indexed
	st, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, st.Files)
	require.Equal(t, 2, st.Added)

	writeTree(t, root, map[string]string{"store/config.go": tree["store/config.go"]})
	remove = ""
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	remove = "store/config.go" // indexed by the Update before
	st, err = ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, codeindex.Stats{Files: 2, Chunks: st.Chunks, Unchanged: 2, Removed: 1}, st)
	hits, err := ix.Search(ctx, "readConfigFile", codeindex.WithMode(codeindex.BM25), codeindex.WithLimit(50))
	require.NoError(t, err)
	require.NotContains(t, paths(hits), "store/config.go")
}

func TestAnIndexReopenedAfterAnotherWasCreatedReadsItsOwnFolder(t *testing.T) {
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, map[string]string{"a.go": "package a\n\n// Alpha is only in the first tree.\nfunc Alpha() {}\n"})
	writeTree(t, b, map[string]string{"b.go": "package b\n\n// Bravo is only in the second tree.\nfunc Bravo() {}\n"})
	ia := openIndexed(t, a)
	ib := openIndexed(t, b) // created after the first was opened
	require.NoError(t, ia.Close())

	t.Run("while the other is open", func(t *testing.T) {
		ia, err := codeindex.Open(ctx, a)
		require.NoError(t, err, "not the other index's lock")
		defer ia.Close()
		hits, err := ia.Search(ctx, "alpha", codeindex.WithMode(codeindex.BM25))
		require.NoError(t, err)
		require.Equal(t, []string{"a.Alpha"}, symbols(hits))
	})
	require.NoError(t, ib.Close())
	t.Run("once the other is closed", func(t *testing.T) {
		ia, err := codeindex.Open(ctx, a)
		require.NoError(t, err)
		defer ia.Close()
		hits, err := ia.Search(ctx, "alpha", codeindex.WithMode(codeindex.BM25))
		require.NoError(t, err)
		require.Equal(t, []string{"a.Alpha"}, symbols(hits), "the first index reads its own keyword index, not the second's")
	})
}

func TestUpdateStopsOnCancelledContext(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, tree)
	ix, err := codeindex.Open(context.Background(), root)
	require.NoError(t, err)
	defer ix.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ix.Update(ctx)
	require.True(t, errors.Is(err, context.Canceled))
}

func TestClosedIndexReturnsErrClosed(t *testing.T) {
	ix, _ := indexed(t)
	require.NoError(t, ix.Close())
	require.NoError(t, ix.Close())
	_, err := ix.Search(context.Background(), "server")
	require.ErrorIs(t, err, codeindex.ErrClosed)
	_, err = ix.Update(context.Background())
	require.ErrorIs(t, err, codeindex.ErrClosed)
}

func TestASecondOpenOfAHeldFolderFailsInsteadOfWaitingForEver(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644))
	first, err := codeindex.Open(t.Context(), root)
	require.NoError(t, err)
	_, err = first.Update(t.Context())
	require.NoError(t, err)

	_, err = codeindex.Open(t.Context(), root)
	var locked *codeindex.LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, filepath.Join(root, ".coderag"), locked.Dir)

	require.NoError(t, first.Close())
	again, err := codeindex.Open(t.Context(), root)
	require.NoError(t, err, "once closed, the folder opens again")
	require.NoError(t, again.Close())
}

func TestASecondOpenDuringTheFirstIndexingLeavesItAlone(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// Alpha greets.\nfunc Alpha() {}\n"), 0o644))
	// The first Index has no manifest yet: its first Update is to come.
	first, err := codeindex.Open(t.Context(), root)
	require.NoError(t, err)
	t.Cleanup(func() { first.Close() })
	require.Zero(t, first.Files())

	// Another Index of the folder must not start it afresh under it.
	_, err = codeindex.Open(t.Context(), root)
	var locked *codeindex.LockedError
	require.ErrorAs(t, err, &locked)

	st, err := first.Update(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Added)
	require.Equal(t, 1, first.Files())
	hits, err := first.Search(t.Context(), "Alpha", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
}

func TestWithRebuildIndexesADamagedFolderAgain(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\n// Alpha greets.\nfunc Alpha() {}\n"), 0o644))
	ix, err := codeindex.Open(t.Context(), root)
	require.NoError(t, err)
	_, err = ix.Update(t.Context())
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	manifest := filepath.Join(root, codeindex.DefaultDir, "manifest.bin")
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, data[:len(data)/2], 0o644))

	_, err = codeindex.Open(t.Context(), root)
	require.Error(t, err, "a truncated manifest is not read as an index")

	ix, err = codeindex.Open(t.Context(), root, codeindex.WithRebuild())
	require.NoError(t, err)
	defer ix.Close()
	require.Zero(t, ix.Files())
	st, err := ix.Update(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, st.Added)
	hits, err := ix.Search(t.Context(), "Alpha", codeindex.WithMode(codeindex.BM25))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
}
