package codeindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// termTree is a corpus big enough for a term model (see termsPerDim):
// definitions that say "sluggish" beside SetDeadline, one that sets a
// deadline alone, and 40 unrelated ones.
func termTree() map[string]string {
	words := []string{"apple", "river", "stone", "cloud", "lamp", "garden", "violin", "rabbit", "copper", "meadow",
		"anchor", "pepper", "candle", "forest", "marble", "ribbon", "saddle", "tunnel", "walnut", "yellow",
		"basket", "cotton", "dragon", "harbor", "island", "jacket", "kettle", "lemon", "mirror", "needle"}
	tree := map[string]string{
		"netx/peers.go": "package netx\n\n// Reap drops a sluggish peer.\nfunc Reap(p *Peer) { p.SetDeadline(0) }\n\n" +
			"// Evict closes sluggish clients.\nfunc Evict(cl *Client) { cl.SetDeadline(0) }\n\n" +
			"// Kick is for sluggish readers.\nfunc Kick(r *Reader) { r.SetDeadline(0) }\n\n" +
			"// Shed ends sluggish writers.\nfunc Shed(w *Writer) { w.SetDeadline(0) }\n\n" +
			"// armTimer arms the timer.\nfunc armTimer(t *Timer) { t.SetDeadline(1) }\n",
	}
	for f := range 4 {
		src := "package filler\n"
		for i := f * 10; i < f*10+10; i++ {
			a, b, c := words[i%30], words[(i*7+3)%30], words[(i*11+5)%30]
			src += fmt.Sprintf("\n// F%d joins the %s and the %s with a %s.\nfunc F%d(%s, %s int) int { return %s }\n", i, a, b, c, i, a, b, c)
		}
		tree[fmt.Sprintf("filler/f%d.go", f)] = src
	}
	return tree
}

func writeTermTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	for p, content := range tree {
		abs := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		require.NoError(t, os.WriteFile(abs, []byte(content), 0o644))
	}
}

// openUpdated opens the index of root with opts and updates it.
func openUpdated(t *testing.T, root string, opts ...Option) *Index {
	t.Helper()
	ix, err := Open(context.Background(), root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	_, err = ix.Update(context.Background())
	require.NoError(t, err)
	return ix
}

func TestTermModelTrainingIsDeterministic(t *testing.T) {
	tree := termTree()
	a, b := t.TempDir(), t.TempDir()
	writeTermTree(t, a, tree)
	writeTermTree(t, b, tree)
	ia, ib := openUpdated(t, a), openUpdated(t, b)
	require.NotNil(t, ia.termModel())
	require.NotZero(t, ia.termModel().Dim)
	require.Equal(t, ia.man.TermModel, ib.man.TermModel, "the recorded ID hashes the model's file")
	require.Equal(t, ia.termModel().Terms, ib.termModel().Terms)
	require.Equal(t, ia.termModel().Vecs, ib.termModel().Vecs)
	require.NotNil(t, ia.termModel().Tuned, "the doc comments make pairs: the model is tuned")
	require.NotEqual(t, ia.termModel().Vecs, ia.termModel().Tuned)
	require.Equal(t, ia.termModel().Tuned, ib.termModel().Tuned)
	require.Len(t, ia.termModel().Files, len(tree))
	require.Len(t, ia.termModel().FileVecs, len(tree)*ia.termModel().Dim)
	require.Equal(t, ia.termModel().Files, ib.termModel().Files)
	require.Equal(t, ia.termModel().FileVecs, ib.termModel().FileVecs)
	require.Equal(t, ia.termModel().IDF, ib.termModel().IDF)
	da, err := os.ReadFile(filepath.Join(ia.Dir(), termModelFile))
	require.NoError(t, err)
	db, err := os.ReadFile(filepath.Join(ib.Dir(), termModelFile))
	require.NoError(t, err)
	require.Equal(t, da, db)
}

func TestTermModelPutsAWordBesideTheIdentifierItIsUsedWith(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, termTree())
	ix := openUpdated(t, root)
	require.Contains(t, ix.termModel().expand("sluggish"), "deadlin")
	require.Empty(t, ix.termModel().expand("zebra"), "a word the model does not know brings nothing")
}

func TestTermModelRoundTripsThroughOpen(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, termTree())
	ix := openUpdated(t, root)
	id, want, vecs, tuned := ix.man.TermModel, ix.termModel().expand("sluggish"), ix.termModel().Vecs, ix.termModel().Tuned
	files, fileVecs, idf := ix.termModel().Files, ix.termModel().FileVecs, ix.termModel().IDF
	hits, err := ix.Search(ctx, "sluggish", WithMode(BM25))
	require.NoError(t, err)
	require.NoError(t, ix.Close())

	ix, err = Open(ctx, root)
	require.NoError(t, err)
	defer ix.Close()
	require.NotNil(t, ix.termModel(), "read from the folder, no Update needed")
	require.Equal(t, id, ix.man.TermModel)
	require.Equal(t, vecs, ix.termModel().Vecs)
	require.NotNil(t, tuned)
	require.Equal(t, tuned, ix.termModel().Tuned)
	require.Equal(t, files, ix.termModel().Files)
	require.Equal(t, fileVecs, ix.termModel().FileVecs)
	require.Equal(t, idf, ix.termModel().IDF)
	require.Equal(t, want, ix.termModel().expand("sluggish"))
	again, err := ix.Search(ctx, "sluggish", WithMode(BM25))
	require.NoError(t, err)
	require.Equal(t, hits, again)
	st, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, st.Files, st.Unchanged)
	require.Equal(t, id, ix.man.TermModel, "an Update that changes nothing keeps the model")
}

func TestTermModelOfAnotherDimensionIsTrainedAgain(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, termTree())
	ix := openUpdated(t, root)
	require.NoError(t, ix.Close())

	ix = openUpdated(t, root, WithTermModel(4))
	require.True(t, trainsAs(ix.man.TermModel, 4), ix.man.TermModel)
	require.Equal(t, 4, ix.termModel().Dim)
	require.NoError(t, ix.Close())

	ix = openUpdated(t, root, WithTermModel(0))
	require.Nil(t, ix.termModel())
	require.Empty(t, ix.man.TermModel)
	_, err := os.Stat(filepath.Join(ix.Dir(), termModelFile))
	require.ErrorIs(t, err, os.ErrNotExist)
	hits, err := ix.Search(ctx, "sluggish", WithMode(BM25))
	require.NoError(t, err)
	require.Len(t, hits, 4, "without a model only the definitions that say it")
}

func TestTermModelFileNotTheRecordedOneIsNotUsedAndIsTrainedAgain(t *testing.T) {
	ctx := context.Background()
	for name, damage := range map[string]func(path string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte("not a model"), 0o644) },
		"missing": os.Remove,
		"truncated": func(p string) error { // the recorded header, half the vectors
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, data[:len(data)/2], 0o644)
		},
		"another model": func(p string) error { // a valid model, not the one the manifest names
			words := []string{"apple", "river", "stone", "cloud", "lamp", "garden", "violin", "rabbit", "copper"}
			var c termCounter
			for i := range 40 {
				c.add(fmt.Sprintf("alpha beta gamma delta %s %s %s", words[i%9], words[i%7], words[i%5]))
			}
			m, err := c.train(ctx, defaultTermTraining(4))
			if err != nil {
				return err
			}
			data, _ := m.encode(4)
			return os.WriteFile(p, data, 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeTermTree(t, root, termTree())
			ix := openUpdated(t, root)
			id := ix.man.TermModel
			require.NoError(t, ix.Close())
			require.NoError(t, damage(filepath.Join(ix.Dir(), termModelFile)))

			ix, err := Open(ctx, root)
			require.NoError(t, err, "a damaged model does not stop the index from opening")
			defer ix.Close()
			require.Nil(t, ix.termModel())
			hits, err := ix.Search(ctx, "sluggish", WithMode(BM25))
			require.NoError(t, err)
			require.Len(t, hits, 4, "searched without expansion")
			_, err = ix.Update(ctx)
			require.NoError(t, err)
			require.Equal(t, id, ix.man.TermModel, "the next Update trains the same model again")
			require.NotNil(t, ix.termModel())
		})
	}
}

func TestTermModelIsTrainedAgainOnceAQuarterOfTheFilesChanged(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tree := termTree()
	tree["netx/extra.go"] = "package netx\n\n// Extra is one more.\nfunc Extra() {}\n"
	writeTermTree(t, root, tree) // 6 files
	ix := openUpdated(t, root)
	first := ix.termModel()

	require.NoError(t, os.WriteFile(filepath.Join(root, "netx/extra.go"), []byte("package netx\n\n// Extra is still one more.\nfunc Extra() {}\n"), 0o644))
	_, err := ix.Update(ctx)
	require.NoError(t, err)
	require.Same(t, first, ix.termModel(), "one file of six: kept")
	require.Equal(t, 1, ix.man.TermsChanged)

	require.NoError(t, os.Remove(filepath.Join(root, "netx/extra.go")))
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	require.NotSame(t, first, ix.termModel(), "two of five: trained again")
	require.Zero(t, ix.man.TermsChanged)
}
