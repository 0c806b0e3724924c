package codeindex

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// latentIndex returns the updated index of latentTree, and its root.
func latentIndex(t *testing.T) (*Index, string) {
	t.Helper()
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	return openUpdated(t, root), root
}

// sluggishFiles returns the BM25 file ranking of "sluggish" in ix and the
// latent one made of it.
func sluggishFiles(t *testing.T, ix *Index) (bm25, latent []string) {
	t.Helper()
	files, err := ix.searchFiles(context.Background(), "sluggish", fileCandidates)
	require.NoError(t, err)
	return fileIDs(files), fileIDs(ix.latentFiles(ix.latentQueryOf("sluggish"), files, DefaultLatentFileWeight, fileCandidates))
}

func TestLatentFileRankingAddsAFileThatSpeaksOfTheQuerysVocabulary(t *testing.T) {
	ix, _ := latentIndex(t)
	bm25, latent := sluggishFiles(t, ix)
	require.Equal(t, []string{"netx/peers.go"}, bm25, "BM25 finds only the file that says it")
	require.Equal(t, "netx/peers.go", latent[0], "the file that says it stays first")
	require.Contains(t, latent, "netx/timer.go")
	if i := slices.Index(latent, "clock/bell.go"); i >= 0 {
		require.Less(t, slices.Index(latent, "netx/timer.go"), i, "the file about deadlines before the one about bells")
	}
}

func TestLatentFileRankingLeavesOutAFileChangedSinceTheModelWasTrained(t *testing.T) {
	ix, root := latentIndex(t)
	first := ix.termModel()
	_, latent := sluggishFiles(t, ix)
	require.Contains(t, latent, "netx/timer.go")

	appendKept(t, root)
	_, err := ix.Update(context.Background())
	require.NoError(t, err)
	require.Same(t, first, ix.termModel(), "one file of eight changed: the model is kept")
	_, latent = sluggishFiles(t, ix)
	require.NotContains(t, latent, "netx/timer.go", "its vector was made of the content before the change")
}

// appendKept appends a comment line to the timer file of latentTree under
// root: its content, and so its hash, changes; its vocabulary does not.
func appendKept(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, "netx", "timer.go")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(data, "\n// Kept.\n"...), 0o644))
}

func TestLatentFileRankingOfAQueryTheModelDoesNotKnowIsBM25s(t *testing.T) {
	ix, _ := latentIndex(t)
	bm25, err := ix.searchFiles(context.Background(), "zebra bell", fileCandidates)
	require.NoError(t, err)
	require.NotEmpty(t, bm25)
	require.Equal(t, bm25, ix.latentFiles(ix.latentQueryOf("zebra"), bm25, DefaultLatentFileWeight, fileCandidates))
}

func TestTermModelFileCutAnywhereIsNotUsed(t *testing.T) {
	ix, _ := latentIndex(t)
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
	ix, _ := latentIndex(t)
	timer, bell := stopRanks(t, ix, WithLatentChunkWeight(0), WithLatentFileWeight(0))
	require.Less(t, bell, timer, "BM25 alone: clock.stop first")
	timer, bell = stopRanks(t, ix, WithLatentChunkWeight(0), WithLatentFileWeight(DefaultLatentFileWeight))
	require.Less(t, timer, bell, "with the latent file ranking: the one in the file about deadlines first")
}

func TestSearchPutsTheDefinitionCloseToTheQueryFirst(t *testing.T) {
	ix, _ := latentIndex(t)
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithLatentChunkWeight(DefaultLatentChunkWeight))
	require.Less(t, timer, bell, "with the latent chunk ranking: the definition beside the deadlines first")
}

func TestLatentChunkRankingReadsNoFileChangedSinceTheUpdate(t *testing.T) {
	ix, root := latentIndex(t)
	appendKept(t, root) // no Update
	timer, bell := stopRanks(t, ix, WithLatentFileWeight(0), WithLatentChunkWeight(DefaultLatentChunkWeight))
	require.Less(t, bell, timer, "the changed file's text is not read: BM25's order")
}

func TestLatentChunkRankingDoesNotFollowALinkOutOfTheRoot(t *testing.T) {
	ix, root := latentIndex(t)
	outside := t.TempDir()
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

func TestTermMemoTokenisesAsModelTerms(t *testing.T) {
	texts := []string{
		"",
		"pkg.(*Reader).ReadMIMEHeader\n// ReadMIMEHeader reads a MIME-style header from r.\nfunc (r *Reader) ReadMIMEHeader() (MIMEHeader, error) { return readMIMEHeader(r, maxHeaders) }",
		"x_y__z HTTPServer2Go utf8 a1b2 the of 9lives ünïcode naïve_name",
		strings.Repeat("verylongidentifier", 20) + " short_one " + strings.Repeat("ab", 100),
		"\t\n  ;;; ReadMIMEHeader readMIMEHeader READ_MIME_HEADER",
	}
	memo := termMemo{}
	for range 2 { // empty, then filled by the texts before
		for _, text := range texts {
			require.Equal(t, modelTerms(text), memo.terms(text), "%q", text)
			require.Equal(t, chunkTermsOf(text), memo.chunkTerms(text), "%q", text)
		}
	}
	require.NotEmpty(t, memo)
	got := memo.terms("read header")
	got[0] = "changed"
	require.Equal(t, modelTerms("read header"), memo.terms("read header"), "a caller's slice is its own")
}
