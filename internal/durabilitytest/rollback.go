//go:build unix

package durabilitytest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// rollbackState is the state of rollbackGraph.
type rollbackState struct {
	Block state.Value[bool]    `json:"block"`
	Steps state.Append[string] `json:"steps"`
}

// rollbackGraph's node waits for its context when the input says block,
// and records name otherwise.
func rollbackGraph(t testing.TB, saver checkpoint.Saver, name string) *graph.Graph[rollbackState] {
	t.Helper()
	b := graph.New[rollbackState]()
	b.AddNode("n", func(ctx context.Context, s rollbackState) (rollbackState, error) {
		if s.Block.Get() {
			<-ctx.Done()
			return rollbackState{}, context.Cause(ctx)
		}
		return rollbackState{Steps: state.Items(name)}, nil
	})
	b.AddEdge(graph.Start, "n")
	b.AddEdge("n", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(500*time.Millisecond))
	require.NoError(t, err)
	return g
}

// pausedAtDelete pauses its server when it first deletes a thread: the
// delete, and every lease renewal of its Backend (pausedRenewals), wait
// until resume is closed, as in a process stopped just before its delete
// statement. Then the delete is made as the process began it, whatever
// the server learnt meanwhile (its context is not cancelled).
type pausedAtDelete struct {
	Saver
	paused          atomic.Bool
	stopped, resume chan struct{}
	err             chan error // the paused delete's outcome
}

func (s *pausedAtDelete) DeleteThread(ctx context.Context, tid string) error {
	del := s.Saver.(checkpoint.ThreadDeleter)
	if !s.paused.CompareAndSwap(false, true) {
		return del.DeleteThread(ctx, tid)
	}
	close(s.stopped)
	<-s.resume
	err := del.DeleteThread(context.WithoutCancel(ctx), tid)
	s.err <- err
	return err
}

type pausedRenewals struct {
	server.Backend
	s *pausedAtDelete
}

func (b pausedRenewals) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	if b.s.paused.Load() {
		<-b.s.resume
	}
	return b.Backend.RenewLease(ctx, c, ttl)
}

// RollbackReset tests that the reset of a rolled-back thread is fenced.
// A run that rolled back a thread's first run deletes the thread's
// checkpoints before it starts. Server A claims it and pauses just before
// that delete, past its run and thread leases; server B takes the run
// over, deletes, runs and finishes it. When A resumes, its delete is
// refused: B's checkpoints stay.
func RollbackReset(t *testing.T, sb ServerBackend) {
	ctx := t.Context()
	addr := sb.Saver.Fresh(t)
	open := func() (Saver, server.Backend) {
		saver, err := sb.Saver.Open(ctx, addr)
		require.NoError(t, err)
		t.Cleanup(func() { saver.Close() })
		b, closeB, err := sb.Open(ctx, addr)
		require.NoError(t, err)
		t.Cleanup(closeB)
		return saver, b
	}
	start := func(name string, saver checkpoint.Saver, b server.Backend) *httptest.Server {
		srv, err := server.New(server.Graph("g", rollbackGraph(t, saver, name)), server.WithCheckpointer(saver), server.WithBackend(b),
			server.WithoutAuthLoopbackOnly(), server.WithHolder(name), server.WithRunLeaseTTL(500*time.Millisecond),
			server.WithPollInterval(20*time.Millisecond), server.WithWorkers(1))
		require.NoError(t, err)
		h := httptest.NewServer(srv)
		t.Cleanup(func() {
			h.Close()
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, srv.Shutdown(sctx))
		})
		return h
	}
	saverA, backendA := open()
	a := &pausedAtDelete{Saver: saverA, stopped: make(chan struct{}), resume: make(chan struct{}), err: make(chan error, 1)}
	hA := start("A", a, pausedRenewals{backendA, a})

	var th struct {
		ThreadID string `json:"thread_id"`
	}
	postJSON(t, hA.URL+"/threads", map[string]any{}, &th)
	var r1, r2 struct {
		RunID string `json:"run_id"`
	}
	postJSON(t, hA.URL+"/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "g", "input": map[string]any{"block": true}}, &r1)
	checkpoints := func() []*checkpoint.Tuple {
		var out []*checkpoint.Tuple
		for tup, err := range saverA.List(ctx, th.ThreadID, checkpoint.ListOptions{}) {
			require.NoError(t, err)
			out = append(out, tup)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(checkpoints()) > 0 }, time.Minute, 10*time.Millisecond, "the first run's input checkpoint")
	postJSON(t, hA.URL+"/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "g", "input": map[string]any{"block": false},
		"multitask_strategy": "rollback"}, &r2)
	<-a.stopped

	saverB, backendB := open()
	start("B", saverB, backendB)
	var rec server.RunRecord
	require.Eventually(t, func() bool {
		var err error
		rec, err = backendB.Run(ctx, r2.RunID)
		require.NoError(t, err)
		return rec.Status == "success"
	}, time.Minute, 10*time.Millisecond, "B finishing the run")
	require.Equal(t, 2, rec.Attempt, "B's claim")
	before := checkpoints()
	require.NotEmpty(t, before)
	for _, tup := range before {
		require.Equal(t, r2.RunID, tup.Metadata.RunID, "a checkpoint of the rolled-back run is left")
	}

	close(a.resume)
	err := <-a.err
	var fenced *checkpoint.FencedError
	require.True(t, errors.As(err, &fenced), "A's delete once resumed: %v", err)
	require.Equal(t, len(before), len(checkpoints()), "A's delete landed")
	var res struct {
		Steps []string `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(rec.Result, &res))
	require.Equal(t, []string{"B"}, res.Steps)
}
