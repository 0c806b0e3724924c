//go:build unix

package codeindex

// Review attacks on chunkTexts, which reads the files of the best chunks
// from disk at search time.

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// searchWithin runs a BM25 search of "halt sluggish" with the latent chunk
// ranking on and fails if it does not return within d.
func searchWithin(t *testing.T, ix *Index, d time.Duration) ([]Hit, bool) {
	t.Helper()
	type res struct {
		hits []Hit
		err  error
	}
	done := make(chan res, 1)
	go func() {
		hits, err := ix.Search(context.Background(), "halt sluggish", WithMode(BM25), WithLatentChunkWeight(DefaultLatentChunkWeight))
		done <- res{hits, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.NotEmpty(t, r.hits)
		return r.hits, true
	case <-time.After(d):
		return nil, false
	}
}

// TestReviewLatentChunkTextsDoNotBlockOnAFIFO: an indexed file replaced,
// after the Update, by a named pipe. chunkTexts opens it with
// root.ReadFile, which blocks until a writer opens the pipe, while the
// search holds ix.mu: Update and Close then block too.
func TestReviewLatentChunkTextsDoNotBlockOnAFIFO(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root)
	p := filepath.Join(root, "netx", "timer.go")
	require.NoError(t, os.Remove(p))
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	_, ok := searchWithin(t, ix, 3*time.Second)
	if !ok {
		// Unblock the reader so the test can clean up: open the pipe for
		// writing and close it (the reader then sees EOF).
		if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("Search blocked for 3 s reading a FIFO that replaced an indexed file")
	}
}

// TestReviewLatentChunkTextsReadNoMoreThanAnIndexableFile: an indexed file
// replaced by a sparse file far larger than WithMaxFileSize is read whole
// into memory before its hash is compared.
func TestReviewLatentChunkTextsReadNoMoreThanAnIndexableFile(t *testing.T) {
	root := t.TempDir()
	writeTermTree(t, root, latentTree())
	ix := openUpdated(t, root, WithMaxFileSize(64<<10))
	p := filepath.Join(root, "netx", "timer.go")
	const big = 64 << 20
	require.NoError(t, os.Truncate(p, big)) // sparse: no disk used
	var hits []Hit
	var ok bool
	n := allocatedBy(func() { hits, ok = searchWithin(t, ix, 20*time.Second) })
	require.True(t, ok)
	require.NotEmpty(t, hits)
	require.Less(t, n, uint64(big/4), "Search allocated %d bytes to read a %d-byte file the index would never have indexed", n, big)
}

func TestReviewLatentChunkTextsSurviveHostileFiles(t *testing.T) {
	for name, swap := range map[string]func(t *testing.T, root, p string){
		"directory": func(t *testing.T, root, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		},
		"unreadable": func(t *testing.T, root, p string) { require.NoError(t, os.Chmod(p, 0)) },
		"truncated":  func(t *testing.T, root, p string) { require.NoError(t, os.Truncate(p, 10)) },
		"removed":    func(t *testing.T, root, p string) { require.NoError(t, os.Remove(p)) },
		"folder is a link out of the root, same content": func(t *testing.T, root, p string) {
			out := filepath.Join(t.TempDir(), "netx")
			require.NoError(t, os.Rename(filepath.Dir(p), out))
			require.NoError(t, os.Symlink(out, filepath.Dir(p)))
		},
		"link to a file in the root, same content": func(t *testing.T, root, p string) {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(root, "copy.txt"), data, 0o644))
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("../copy.txt", p))
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeTermTree(t, root, latentTree())
			ix := openUpdated(t, root)
			swap(t, root, filepath.Join(root, "netx", "timer.go"))
			_, ok := searchWithin(t, ix, 10*time.Second)
			require.True(t, ok, "Search returns")
			var ids []scored
			for j := range ix.man.Files["netx/timer.go"].Chunks {
				ids = append(ids, scored{id: chunkID("netx/timer.go", j)})
			}
			read := false
			for _, text := range ix.chunkTexts(ids) {
				read = read || text != ""
			}
			switch name {
			case "link to a file in the root, same content":
				require.True(t, read, "a link within the root, same hash: read")
			case "unreadable":
				require.Equal(t, os.Geteuid() == 0, read, "root reads a mode 000 file, others cannot")
			default:
				require.False(t, read, "nothing read")
			}
		})
	}
}

// TestReviewLatentChunkTextsStayInTheRoot: manifest paths with "..", an
// absolute path, and line ranges beyond the file, each with the hash of
// the content they would read.
func TestReviewLatentChunkTextsStayInTheRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	writeTermTree(t, root, latentTree())
	secret := []byte("// deadline sluggish secret\nfunc Secret() {}\n")
	require.NoError(t, os.WriteFile(filepath.Join(parent, "secret.go"), secret, 0o644))
	ix := openUpdated(t, root)
	entry := &fileEntry{Hash: sha256.Sum256(secret), Chunks: []chunkMeta{{Symbol: "Secret", StartLine: 1, EndLine: 2}}}
	ix.mu.Lock()
	ix.man.Files["../secret.go"] = entry
	ix.man.Files[filepath.ToSlash(filepath.Join(parent, "secret.go"))] = entry
	ix.man.Files["netx/../../secret.go"] = entry
	ix.man.Files["netx/timer.go"].Chunks = append(ix.man.Files["netx/timer.go"].Chunks,
		chunkMeta{StartLine: 1, EndLine: 1 << 20}, chunkMeta{StartLine: 0, EndLine: 1}, chunkMeta{StartLine: 3, EndLine: 2}, chunkMeta{StartLine: -5, EndLine: -1})
	n := len(ix.man.Files["netx/timer.go"].Chunks)
	ix.mu.Unlock()

	ids := []scored{
		{id: "../secret.go#0"},
		{id: filepath.ToSlash(filepath.Join(parent, "secret.go")) + "#0"},
		{id: "netx/../../secret.go#0"},
		{id: chunkID("netx/timer.go", n-4)},
		{id: chunkID("netx/timer.go", n-3)},
		{id: chunkID("netx/timer.go", n-2)},
		{id: chunkID("netx/timer.go", n-1)},
		{id: "netx/timer.go#-1"},
		{id: "netx/timer.go#99999999999999999999"},
		{id: "netx/timer.go"},
		{id: "#0"},
	}
	var texts []string
	require.NotPanics(t, func() { texts = ix.chunkTexts(ids) })
	for i, text := range texts {
		require.Empty(t, text, "%s", ids[i].id)
	}
}
