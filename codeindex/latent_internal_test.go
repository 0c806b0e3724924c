package codeindex

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// latentTree is termTree with two more files: one whose comments speak
// of deadlines and never say "sluggish" (a word the term model puts
// beside deadline), and one whose comments speak of something else.
func latentTree() map[string]string {
	tree := termTree()
	tree["netx/timer.go"] = "package netx\n\n// The deadline of a timer: a deadline set once is kept.\n// A deadline in the past fires at once.\nfunc keep(t *Timer) { t.SetDeadline(2) }\n\nfunc stop(t *Timer) { t.Halt() }\n"
	tree["clock/bell.go"] = "package clock\n\n// The bell rings the apple river.\n// Stone and cloud.\nfunc ring(b *Bell) { b.Ring() }\n\nfunc stop(b *Bell) { b.Halt() }\n"
	return tree
}

func TestLatentFileRankingAddsAFileThatSpeaksOfTheQuerysVocabulary(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)

	bm25, err := ix.searchFiles(ctx, "sluggish", fileCandidates)
	require.NoError(t, err)
	require.Equal(t, []string{"netx/peers.go"}, fileIDs(bm25), "BM25 finds only the file that says it")

	latent := fileIDs(ix.latentFiles("sluggish", bm25, DefaultLatentFileWeight, fileCandidates))
	require.Equal(t, "netx/peers.go", latent[0], "the file that says it stays first")
	require.Contains(t, latent, "netx/timer.go")
	if i := slices.Index(latent, "clock/bell.go"); i >= 0 {
		require.Less(t, slices.Index(latent, "netx/timer.go"), i, "the file about deadlines before the one about bells")
	}
}

func TestLatentFileRankingLeavesOutAFileChangedSinceTheModelWasTrained(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	first := ix.termModel()
	bm25, err := ix.searchFiles(ctx, "sluggish", fileCandidates)
	require.NoError(t, err)
	require.Contains(t, fileIDs(ix.latentFiles("sluggish", bm25, DefaultLatentFileWeight, fileCandidates)), "netx/timer.go")

	p := filepath.Join(root, "netx", "timer.go")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(data, "\n// Kept.\n"...), 0o644))
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	require.Same(t, first, ix.termModel(), "one file of eight changed: the model is kept")
	bm25, err = ix.searchFiles(ctx, "sluggish", fileCandidates)
	require.NoError(t, err)
	require.NotContains(t, fileIDs(ix.latentFiles("sluggish", bm25, DefaultLatentFileWeight, fileCandidates)), "netx/timer.go",
		"its vector was made of the content before the change")
}

func TestLatentFileRankingOfAQueryTheModelDoesNotKnowIsBM25s(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	bm25, err := ix.searchFiles(ctx, "zebra bell", fileCandidates)
	require.NoError(t, err)
	require.NotEmpty(t, bm25)
	require.Equal(t, bm25, ix.latentFiles("zebra", bm25, DefaultLatentFileWeight, fileCandidates))
}

func TestTermModelFileVectorsRoundTripAndAreDeterministic(t *testing.T) {
	tree := latentTree()
	a, b := t.TempDir(), t.TempDir()
	writeTermTree(t, a, tree)
	writeTermTree(t, b, tree)
	ia, ib := openUpdated(t, a), openUpdated(t, b)
	ma, mb := ia.termModel(), ib.termModel()
	require.Len(t, ma.Files, len(tree))
	require.Len(t, ma.FileVecs, len(tree)*ma.Dim)
	require.Equal(t, ma.Files, mb.Files)
	require.Equal(t, ma.FileVecs, mb.FileVecs)
	require.Equal(t, ma.IDF, mb.IDF)

	loaded, err := loadTermModel(filepath.Join(ia.Dir(), termModelFile), ia.man.TermModel)
	require.NoError(t, err)
	require.Equal(t, ma.Files, loaded.Files)
	require.Equal(t, ma.FileVecs, loaded.FileVecs)
	require.Equal(t, ma.IDF, loaded.IDF)
}

func TestTermModelFileCutAnywhereIsNotUsed(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	path := filepath.Join(ix.Dir(), termModelFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), termModelFile)
	for n := len(data) - 1; n > 0; n -= max(1, n/64) {
		require.NoError(t, os.WriteFile(cut, data[:n], 0o644))
		_, err := loadTermModel(cut, ix.man.TermModel)
		require.ErrorIs(t, err, errStaleTermModel, "cut at %d of %d", n, len(data))
	}
}

// stopRanks returns the ranks of netx.stop and clock.stop among the hits of
// "halt sluggish" in ix with opts: both stop functions say "halt" alone;
// the timer file's comments speak of deadlines, which the term model puts
// beside "sluggish", the bell file's of bells.
func stopRanks(t *testing.T, ix *Index, opts ...SearchOption) (timer, bell int) {
	t.Helper()
	hits, err := ix.Search(context.Background(), "halt sluggish", append([]SearchOption{WithMode(BM25), WithExpansion(0)}, opts...)...)
	require.NoError(t, err)
	timer, bell = -1, -1
	for i, h := range hits {
		switch h.Symbol {
		case "netx.stop":
			timer = i
		case "clock.stop":
			bell = i
		}
	}
	require.True(t, timer >= 0 && bell >= 0, "both found: %v", hits)
	return timer, bell
}

func TestSearchPutsTheMatchInTheFileCloseToTheQueryFirst(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	timer, bell := stopRanks(t, ix, WithLatentChunkWeight(0), WithLatentFileWeight(0))
	require.Less(t, bell, timer, "BM25 alone: clock.stop first")
	timer, bell = stopRanks(t, ix, WithLatentChunkWeight(0), WithLatentFileWeight(DefaultLatentFileWeight))
	require.Less(t, timer, bell, "with the latent file ranking: the one in the file about deadlines first")
}

func TestSearchPutsTheDefinitionCloseToTheQueryFirst(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithLatentChunkWeight(DefaultLatentChunkWeight))
	require.Less(t, timer, bell, "with the latent chunk ranking: the definition beside the deadlines first")
}

func TestLatentChunkRankingReadsNoFileChangedSinceTheUpdate(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	p := filepath.Join(root, "netx", "timer.go")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(data, "\n// Kept.\n"...), 0o644)) // no Update
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithLatentChunkWeight(DefaultLatentChunkWeight))
	require.Less(t, bell, timer, "the changed file's text is not read: BM25's order")
}

func TestLatentChunkRankingDoesNotFollowALinkOutOfTheRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	// The indexed file swapped, after the Update, for a link to a file of
	// the same content outside the root: its hash still matches.
	p := filepath.Join(root, "netx", "timer.go")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "timer.go"), data, 0o644))
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink(filepath.Join(outside, "timer.go"), p))
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithLatentChunkWeight(DefaultLatentChunkWeight))
	require.Less(t, bell, timer, "the link is not followed: BM25's order")
}
