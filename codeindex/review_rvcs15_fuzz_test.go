package codeindex

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReviewRvcs15MutatedModelFileNeverPanics(t *testing.T) {
	if testing.Short() {
		t.Skip("3000 loads and searches")
	}
	_, ix, id, data := reviewModelIndex(t)
	t.Cleanup(func() { ix.Close() })
	path := filepath.Join(ix.Dir(), termModelFile)
	head := alignUp(len(termMagic)+len(id)+1, termAlign)
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	loaded := 0
	for i := range 3000 {
		d := append([]byte(nil), data...)
		switch i % 5 {
		case 0: // a random byte of the payload
			d[head+r.IntN(len(d)-head)] = byte(r.IntN(256))
		case 1: // the dimension
			binary.LittleEndian.PutUint32(d[head:], uint32(r.IntN(130)))
		case 2: // the terms' count
			n := binary.LittleEndian.Uint32(d[head+4:])
			binary.LittleEndian.PutUint32(d[head+4:], uint32(int(n)+r.IntN(9)-4))
		case 3: // a random 4 bytes anywhere after the header
			o := head + r.IntN(len(d)-head-4)
			binary.LittleEndian.PutUint32(d[o:], r.Uint32())
		case 4: // cut
			d = d[:head+r.IntN(len(d)-head)]
		}
		require.NoError(t, os.WriteFile(path, d, 0o644))
		ix.mu.Lock()
		ix.terms.close()
		ix.terms, ix.termsTried = nil, false
		ix.mu.Unlock()
		if ix.termModel() != nil {
			loaded++
		}
		for _, mode := range []Mode{BM25, Hybrid} {
			_, err := ix.Search(ctx, "halt sluggish deadline timer", WithMode(mode), WithMaxSim(true), WithTunedChunks(true))
			require.NoError(t, err)
		}
	}
	t.Logf("%d of 3000 mutated files loaded", loaded)
}
