package codeindex

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReviewRvcs15SearchesRacingCloseEndInErrClosed(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	require.NoError(t, openUpdated(t, root).Close())
	ix, err := Open(ctx, root)
	require.NoError(t, err)
	if littleEndian {
		require.NotNil(t, ix.termModel().mapped)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i++ {
				_, err := ix.Search(ctx, "halt sluggish deadline timer", WithMode([]Mode{BM25, Hybrid}[i%2]), WithMaxSim(true), WithTunedChunks(i%3 == 0))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, ix.Close())
	require.NoError(t, ix.Close(), "idempotent")
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, err = ix.Update(ctx)
	require.ErrorIs(t, err, ErrClosed)
}

func TestReviewRvcs15BigEndianLoadCopiesTheFloats(t *testing.T) {
	path, _, id := reviewTunedModelFile(t)
	inPlace, err := loadTermModel(path, id)
	require.NoError(t, err)
	t.Cleanup(func() { inPlace.close() })
	was := littleEndian
	littleEndian = false
	t.Cleanup(func() { littleEndian = was })
	copied, err := loadTermModel(path, id)
	require.NoError(t, err)
	require.Nil(t, copied.mapped, "nothing in place: the mapping is released")
	require.Equal(t, inPlace.Vecs, copied.Vecs)
	require.Equal(t, inPlace.Tuned, copied.Tuned)
	require.Equal(t, inPlace.FileVecs, copied.FileVecs)
	require.Equal(t, inPlace.expand("deadline timer halt"), copied.expand("deadline timer halt"))
}
