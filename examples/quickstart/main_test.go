package main

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// stdout runs f and returns what it printed.
func stdout(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = saved }()
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	ferr := f()
	require.NoError(t, w.Close())
	out := <-done
	require.NoError(t, ferr)
	return string(out)
}

func TestQuickstartRunsEndToEnd(t *testing.T) {
	require.NoError(t, run(context.Background(), "testing", false))
}

// The node that asks for approval is reported as paused, not finished.
func TestQuickstartReportsThePausedNodeAsPaused(t *testing.T) {
	out := stdout(t, func() error { return run(context.Background(), "testing", false) })
	require.Contains(t, out, "step 4: approve paused\n")
	require.NotContains(t, out, "approve finished")
	require.Contains(t, out, "summary: 3 findings about testing (approved: true)")
}
