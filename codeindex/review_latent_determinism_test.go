package codeindex

// Review attack: terms.bin depends on the tree alone.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func termsBin(t *testing.T, ix *Index) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ix.Dir(), termModelFile))
	require.NoError(t, err)
	return data
}

func TestReviewLatentTermsBinIsByteIdenticalAcrossFoldersUpdatesAndRetrains(t *testing.T) {
	ctx := context.Background()
	tree := latentTree()
	a, b := t.TempDir(), t.TempDir()
	writeTermTree(t, a, tree)
	writeTermTree(t, b, tree)
	ia, ib := openUpdated(t, a), openUpdated(t, b)
	first := termsBin(t, ia)
	require.Equal(t, first, termsBin(t, ib), "same tree, two folders")
	require.Equal(t, ia.man.TermModel, ib.man.TermModel)

	// One file of eight changes: no retrain, terms.bin untouched.
	timer := "package netx\n\n// The deadline of a timer, kept; a sluggish timer halts.\nfunc keep(t *Timer) { t.SetDeadline(3) }\n\nfunc stop(t *Timer) { t.Halt() }\n"
	require.NoError(t, os.WriteFile(filepath.Join(a, "netx", "timer.go"), []byte(timer), 0o644))
	_, err := ia.Update(ctx)
	require.NoError(t, err)
	require.Equal(t, first, termsBin(t, ia), "no retrain: the file is left as it was")

	// Then enough changes for a retrain; a fresh folder of the final
	// tree trains on its first Update: the two files must be equal.
	tree["netx/timer.go"] = timer
	tree["clock/bell.go"] += "\n// The bell is sluggish at noon.\nfunc noon() {}\n"
	tree["filler/f0.go"] += "\n// F99 joins the apple and the river.\nfunc F99() {}\n"
	for _, p := range []string{"clock/bell.go", "filler/f0.go"} {
		require.NoError(t, os.WriteFile(filepath.Join(a, filepath.FromSlash(p)), []byte(tree[p]), 0o644))
	}
	before := ia.termModel()
	_, err = ia.Update(ctx)
	require.NoError(t, err)
	require.NotSame(t, before, ia.termModel(), "three of eight changed: trained again")

	c := t.TempDir()
	writeTermTree(t, c, tree)
	ic := openUpdated(t, c)
	require.Equal(t, termsBin(t, ic), termsBin(t, ia), "retrained in place vs trained fresh")
	require.Equal(t, ic.man.TermModel, ia.man.TermModel)

	// And the file decodes to a model that encodes back to it.
	m, err := loadTermModel(filepath.Join(ia.Dir(), termModelFile), ia.man.TermModel)
	require.NoError(t, err)
	data, id := m.encode(DefaultTermModelDim)
	require.Equal(t, termsBin(t, ic), data, "decode then encode gives the file back")
	require.Equal(t, ia.man.TermModel, id)
}
