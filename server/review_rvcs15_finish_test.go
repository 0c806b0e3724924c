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

func TestRvcs15StatelessFailedEndDropsItsCheckpoints(t *testing.T) {
	saver, b := sqliteEnv(t)
	rb := &refusingResults{Backend: b}
	e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
	var out map[string]any
	r := e.ok("POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
	require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
	tid := statelessThread(t, e, r)
	require.Eventually(t, func() bool { return checkpointsOf(t, saver, tid) == 0 }, 2*time.Second, 10*time.Millisecond,
		"the dropped thread's checkpoints are deleted")
}

func TestRvcs15StatelessFailedEndWhoseAnswerIsLostDropsItsCheckpoints(t *testing.T) {
	saver, b := sqliteEnv(t)
	rb := &lostFailure{refusingResults: refusingResults{Backend: b}}
	e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
	var out map[string]any
	r := e.ok("POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
	require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
	require.Equal(t, int32(2), rb.tries.Load())
	tid := statelessThread(t, e, r)
	require.Eventually(t, func() bool { return checkpointsOf(t, saver, tid) == 0 }, 2*time.Second, 10*time.Millisecond,
		"the dropped thread's checkpoints are deleted")
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

func TestRvcs15StatelessEndWhoseAnswerIsLostDropsItsCheckpoints(t *testing.T) {
	saver, b := sqliteEnv(t)
	rb := &lostFinish{Backend: b}
	e := serve(t, server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithBackend(rb))
	var out map[string]any
	r := e.ok("POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
	require.Equal(t, int32(2), rb.tries.Load())
	tid := statelessThread(t, e, r)
	require.Eventually(t, func() bool { return checkpointsOf(t, saver, tid) == 0 }, 2*time.Second, 10*time.Millisecond,
		"the dropped thread's checkpoints are deleted")
}
