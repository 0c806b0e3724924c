package codeindex

// Review attack: searches in every mode, latent rankings on, while Update
// runs again and again (retraining the term model) and files change on
// disk under the searches. Run with -race.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReviewLatentSearchesDuringUpdatesAndChangingFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tree := latentTree()
	writeTermTree(t, root, tree)
	ix := openUpdated(t, root)
	require.NotNil(t, ix.termModel())
	scratch := t.TempDir()

	var stop atomic.Bool
	var searches atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	queries := []string{"halt sluggish", "deadline timer", "zebra", "apple river stone", "bell ring", "sluggish"}
	options := [][]SearchOption{
		{WithMode(BM25)},
		{WithMode(Hybrid)},
		{WithMode(Vector)},
		{WithMode(Hybrid), WithLatentFileWeight(2), WithLatentChunkWeight(2)},
		{WithMode(BM25), WithFileWeight(0), WithLatentFileWeight(1)},
		{WithMode(Hybrid), WithFusion(FuseRRF), WithExpansion(1)},
	}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				q, opts := queries[i%len(queries)], options[(i/len(queries)+g)%len(options)]
				hits, err := ix.Search(ctx, q, opts...)
				if err != nil {
					errs <- fmt.Errorf("search %q: %w", q, err)
					return
				}
				for _, h := range hits {
					if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
						errs <- fmt.Errorf("search %q: %s scores %v", q, h.Symbol, h.Score)
						return
					}
				}
				searches.Add(1)
			}
		}()
	}
	// Files change on disk under the searches, without an Update.
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := filepath.Join(root, "netx", "timer.go")
		tmp := filepath.Join(scratch, "timer.go") // outside the root: a walk must not see it
		for i := 0; !stop.Load(); i++ {
			content := tree["netx/timer.go"]
			if i%2 == 1 {
				content += fmt.Sprintf("\n// Edit %d of the deadline.\n", i)
			}
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				errs <- err
				return
			}
			if err := os.Rename(tmp, p); err != nil {
				errs <- err
				return
			}
		}
	}()
	// Updates, some of them retraining the model (a quarter of the files
	// changed), some adding and removing files.
	models := map[*termModel]bool{ix.termModel(): true}
	for round := range 12 {
		for f := range 4 {
			if round%3 == 0 || f == 0 {
				p := filepath.Join(root, "filler", fmt.Sprintf("f%d.go", f))
				require.NoError(t, os.WriteFile(p, []byte(tree[fmt.Sprintf("filler/f%d.go", f)]+fmt.Sprintf("\n// Round %d.\nfunc R%d() {}\n", round, round)), 0o644))
			}
		}
		extra := filepath.Join(root, "netx", "extra.go")
		if round%2 == 0 {
			require.NoError(t, os.WriteFile(extra, []byte("package netx\n\n// Extra keeps the sluggish deadline.\nfunc Extra() {}\n"), 0o644))
		} else {
			require.NoError(t, os.Remove(extra))
		}
		_, err := ix.Update(ctx)
		require.NoError(t, err)
		models[ix.termModel()] = true
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Positive(t, searches.Load())
	require.Greater(t, len(models), 2, "the model was trained again during the searches")
	t.Logf("%d searches during 12 updates", searches.Load())
}
