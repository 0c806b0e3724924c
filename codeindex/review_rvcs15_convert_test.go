package codeindex

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReviewRvcs15ConversionCutBeforeManifestSearchesThenRecovers(t *testing.T) {
	// kill -9 after terms.bin's rename, before the manifest's: the
	// manifest records the version 2 ID, the file is version 3.
	ctx := context.Background()
	root, data3, id3 := v2Index(t)
	require.NoError(t, saveTermModel(filepath.Join(root, ".coderag", termModelFile), data3))
	ix, err := Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	require.Nil(t, ix.termModel(), "model off: not the recorded one")
	hits, err := ix.Search(ctx, "halt sluggish", WithMode(Hybrid))
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, id3, ix.man.TermModel, "retrained to the same model")
	require.NotNil(t, ix.termModel())
}

func TestReviewRvcs15UpdateAfterAFailedConversionRecordsTheModel(t *testing.T) {
	// Update converts the version 2 file, then cannot save the manifest;
	// a later Update that succeeds must leave a manifest that records
	// the file on disk.
	ctx := context.Background()
	root, _, id3 := v2Index(t)
	manPath := filepath.Join(root, ".coderag", manifestFile)
	saved, err := os.ReadFile(manPath)
	require.NoError(t, err)
	var block atomic.Bool
	block.Store(true)
	ix, err := Open(ctx, root, WithProgress(func(Progress) {
		if block.Load() { // a non-empty directory in its place: its rename fails
			os.Remove(manPath)
			os.MkdirAll(filepath.Join(manPath, "x"), 0o755)
		}
	}))
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	_, err = ix.Update(ctx)
	require.Error(t, err, "the manifest cannot be saved")
	block.Store(false)
	require.NoError(t, os.RemoveAll(manPath))
	require.NoError(t, os.WriteFile(manPath, saved, 0o644))
	_, err = ix.Update(ctx)
	require.NoError(t, err)
	require.NoError(t, ix.Close())

	again, err := Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { again.Close() })
	require.Equal(t, id3, again.man.TermModel, "the manifest records terms.bin")
	require.NotNil(t, again.termModel(), "the model is on after reopening")
}
