//go:build unix

package codeindex

// Review attack on openMapped: a named pipe at the term model's path.

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReviewTuneFIFOAtTheModelPathDoesNotBlock: Index.termModel loads the
// file under ix.tmu on a search's first use of the model; a FIFO there
// blocked os.Open until a writer came, and every search with it.
func TestReviewTuneFIFOAtTheModelPathDoesNotBlock(t *testing.T) {
	path, _, id := reviewTunedModelFile(t)
	require.NoError(t, os.Remove(path))
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := loadTermModel(path, id)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(3 * time.Second):
		// Unblock the reader: open the pipe for writing and close it.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("loadTermModel blocked on a FIFO at the model's path")
	}
}
