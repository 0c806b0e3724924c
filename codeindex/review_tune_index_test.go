package codeindex

// Review attacks on the tuned term model through the Index: the same
// bytes whatever the files' creation order, GOMAXPROCS or process;
// searches with tuned chunks on and off while Update retrains; an index
// without a term model under the default WithTunedChunks(true); the cost.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// reviewTuneTree is tuneTree and termTree together: documented and
// undocumented definitions over several files.
func reviewTuneTree() map[string]string {
	tree := tuneTree()
	maps.Copy(tree, termTree())
	return tree
}

// reviewModelBytes writes tree under a new root, file by file in order,
// updates an index of it with GOMAXPROCS procs and returns its terms.bin.
func reviewModelBytes(t *testing.T, tree map[string]string, order []string, procs int) []byte {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	root := t.TempDir()
	for _, p := range order {
		writeTermTree(t, root, map[string]string{p: tree[p]})
	}
	ix := openUpdated(t, root)
	require.NotNil(t, ix.termModel().tuned(), "the model is tuned")
	data, err := os.ReadFile(filepath.Join(ix.dir, termModelFile))
	require.NoError(t, err)
	return data
}

func TestReviewTuneModelBytesIgnoreFileOrderAndGOMAXPROCS(t *testing.T) {
	tree := reviewTuneTree()
	order := slices.Sorted(maps.Keys(tree))
	a := reviewModelBytes(t, tree, order, 1)
	slices.Reverse(order)
	b := reviewModelBytes(t, tree, order, 2)
	require.Equal(t, a, b)
}

// TestReviewTuneChildProcess is the other process of
// TestReviewTuneModelBytesAreTheSameInAnotherProcess.
func TestReviewTuneChildProcess(t *testing.T) {
	out := os.Getenv("REVIEW_TUNE_CHILD_OUT")
	if out == "" {
		t.Skip("run by TestReviewTuneModelBytesAreTheSameInAnotherProcess")
	}
	tree := reviewTuneTree()
	data := reviewModelBytes(t, tree, slices.Sorted(maps.Keys(tree)), 2)
	require.NoError(t, os.WriteFile(out, data, 0o644))
}

func TestReviewTuneModelBytesAreTheSameInAnotherProcess(t *testing.T) {
	if os.Getenv("REVIEW_TUNE_CHILD_OUT") != "" {
		t.Skip("in the child")
	}
	tree := reviewTuneTree()
	mine := reviewModelBytes(t, tree, slices.Sorted(maps.Keys(tree)), 2)
	out := filepath.Join(t.TempDir(), "child.bin")
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewTuneChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REVIEW_TUNE_CHILD_OUT="+out)
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", got)
	theirs, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, mine, theirs)
}

func TestReviewTuneSearchesWhileUpdateRetrains(t *testing.T) {
	root := t.TempDir()
	tree := reviewTuneTree()
	maps.Copy(tree, latentTree())
	writeTermTree(t, root, tree)
	ix := openUpdated(t, root)
	first := ix.man.TermModel
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := ix.Search(context.Background(), "halt sluggish deadline", WithMode(BM25), WithTunedChunks((g+i)%2 == 0))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for round := range 3 {
		for p, src := range tree { // every file changed: more than a quarter, the model is trained again
			tree[p] = src + fmt.Sprintf("\n// round %d\n", round)
		}
		writeTermTree(t, root, tree)
		_, err := ix.Update(context.Background())
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NotEqual(t, first, ix.man.TermModel, "the model was trained again")
	require.NotNil(t, ix.termModel().tuned())
}

func TestReviewTuneNoTermModelWithTunedChunksOnSearches(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root, WithTermModel(0))
	require.Nil(t, ix.termModel())
	on, err := ix.Search(context.Background(), "halt sluggish", WithTunedChunks(true))
	require.NoError(t, err)
	require.NotEmpty(t, on)
	off, err := ix.Search(context.Background(), "halt sluggish", WithTunedChunks(false))
	require.NoError(t, err)
	require.Equal(t, off, on)
}

func TestReviewTuneDamagedModelFileFallsBackWithoutTheModel(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	want, err := ix.Search(context.Background(), "halt sluggish", WithExpansion(0), WithLatentChunkWeight(0), WithLatentFileWeight(0), WithCoverageWeight(0))
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	path := filepath.Join(ix.dir, termModelFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)-3], 0o644)) // the tuned block cut
	ix2, err := Open(context.Background(), root)
	require.NoError(t, err)
	t.Cleanup(func() { ix2.Close() })
	require.Nil(t, ix2.termModel(), "a damaged model file: no model")
	got, err := ix2.Search(context.Background(), "halt sluggish")
	require.NoError(t, err)
	require.Equal(t, want, got, "searches as without the model")
	_, err = ix2.Update(context.Background())
	require.NoError(t, err)
	require.NotNil(t, ix2.termModel().tuned(), "the next Update trains it again")
}

func TestReviewTuneModelFileReplacedAfterTheLoadIsNotReread(t *testing.T) {
	ix, _ := latentIndex(t)
	m := ix.termModel()
	require.NotNil(t, m.tuned())
	before, err := ix.Search(context.Background(), "halt sluggish")
	require.NoError(t, err)
	path := filepath.Join(ix.dir, termModelFile)
	require.NoError(t, os.WriteFile(path+".new", []byte("garbage"), 0o644))
	require.NoError(t, os.Rename(path+".new", path))
	after, err := ix.Search(context.Background(), "halt sluggish")
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Same(t, m, ix.termModel())
}

// TestReviewTuneCost measures Open + Update of this repository with the
// default term model and without one (REVIEW_TUNE_COST=1 to run).
func TestReviewTuneCost(t *testing.T) {
	if os.Getenv("REVIEW_TUNE_COST") == "" {
		t.Skip("REVIEW_TUNE_COST=1 to measure")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	for _, opts := range [][]Option{{WithTermModel(0)}, {}} {
		dir := t.TempDir()
		start := time.Now()
		ix, err := Open(context.Background(), root, append(opts, WithDir(dir))...)
		require.NoError(t, err)
		st, err := ix.Update(context.Background())
		require.NoError(t, err)
		took := time.Since(start)
		var size int64
		if fi, err := os.Stat(filepath.Join(dir, termModelFile)); err == nil {
			size = fi.Size()
		}
		m := ix.termModel()
		var dim, terms, tuned int
		if m != nil {
			dim, terms, tuned = m.Dim, len(m.Terms), len(m.Tuned)
		}
		if m != nil {
			paths, err := ix.walk()
			require.NoError(t, err)
			for _, tc := range []tuneConfig{{}, defaultTuning()} {
				start := time.Now()
				_, err := ix.trainTermModelWith(context.Background(), paths, tc)
				require.NoError(t, err)
				t.Logf("training with %d epochs of tuning: %v", tc.epochs, time.Since(start))
			}
		}
		t.Logf("term model %v: %d files, Open+Update %v, terms.bin %d bytes, dim %d, %d terms, %d tuned floats", len(opts) == 0, st.Added, took, size, dim, terms, tuned)
		require.NoError(t, ix.Close())
	}
}
