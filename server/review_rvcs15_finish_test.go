package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/server"
)

// lostFailure is refusingResults whose first recording of the failed run
// is made but its answer lost, as a connection dropped after the commit.
type lostFailure struct {
	refusingResults
	tries atomic.Int32
}

func (b *lostFailure) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	err := b.refusingResults.FinishRun(ctx, c, res)
	if res.Status != "success" && b.tries.Add(1) == 1 && err == nil {
		return fmt.Errorf("finish: answer lost: %w", server.ErrTransient)
	}
	return err
}

// statelessThread is the thread of the stateless run that answered r.
func statelessThread(t *testing.T, e *env, r resp) string {
	t.Helper()
	var run map[string]any
	e.ok("GET", r.header.Get("Content-Location"), nil, &run)
	tid, _ := run["thread_id"].(string)
	require.NotEmpty(t, tid)
	return tid
}

// checkpointsOf is how many checkpoints thread tid has in saver.
func checkpointsOf(t *testing.T, saver checkpoint.Saver, tid string) int {
	n := 0
	for _, err := range saver.List(context.Background(), tid, checkpoint.ListOptions{}) {
		require.NoError(t, err)
		n++
	}
	return n
}

// lostFinish is a real Backend whose first FinishRun is made but its
// answer lost.
type lostFinish struct {
	server.Backend
	tries atomic.Int32
}

func (b *lostFinish) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	err := b.Backend.FinishRun(ctx, c, res)
	if b.tries.Add(1) == 1 && err == nil {
		return fmt.Errorf("finish: answer lost: %w", server.ErrTransient)
	}
	return err
}

// A stateless run's thread and its checkpoints go at its end, whether
// its result was recorded or it ended failed (StorageError), and also
// when the try that ended it lost its answer (the retry meets
// ErrLeaseLost).
func TestRvcs15StatelessRunDropsItsCheckpointsAtItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name         string
		backend      func(server.Backend) (server.Backend, func() int32)
		storageError bool
		tries        int32 // of FinishRun, when counted
	}{
		{"its result refused: a failed end", func(b server.Backend) (server.Backend, func() int32) {
			return &refusingResults{Backend: b}, nil
		}, true, 0},
		{"its failed end's answer lost", func(b server.Backend) (server.Backend, func() int32) {
			rb := &lostFailure{refusingResults: refusingResults{Backend: b}}
			return rb, rb.tries.Load
		}, true, 2},
		{"its end's answer lost", func(b server.Backend) (server.Backend, func() int32) {
			rb := &lostFinish{Backend: b}
			return rb, rb.tries.Load
		}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saver, b := sqliteEnv(t)
			rb, tries := tc.backend(b)
			e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
			var out map[string]any
			r := e.ok("POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
			if tc.storageError {
				require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
			}
			if tries != nil {
				require.Equal(t, tc.tries, tries())
			}
			tid := statelessThread(t, e, r)
			require.Eventually(t, func() bool { return checkpointsOf(t, saver, tid) == 0 }, 2*time.Second, 10*time.Millisecond,
				"the dropped thread's checkpoints are deleted")
		})
	}
}
