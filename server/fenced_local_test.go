package server_test

import (
	"context"
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

// stalledRenewals is a saver whose lease renewals fail once stalled is
// set, as a paused process's would: its lease runs out.
type stalledRenewals struct {
	leasingSaver
	stalled *atomic.Bool
}

func (s stalledRenewals) RenewLease(ctx context.Context, l checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	if s.stalled.Load() {
		return checkpoint.Lease{}, errors.New("stalled")
	}
	return s.leasingSaver.RenewLease(ctx, l, ttl)
}

// TestAFencedRunOfALocalServerIsNotRunAgain: a server without a Backend
// whose run lost its thread to another holder (its write is fenced) ends
// the run with the fenced error; it does not run it again over the other
// holder's work (nothing would hand the run on: running it again applies
// its input a second time).
func TestAFencedRunOfALocalServerIsNotRunAgain(t *testing.T) {
	mem := checkpoint.NewMemory()
	var stalled atomic.Bool
	var executions atomic.Int32
	wake, started := make(chan struct{}), make(chan struct{})
	saver := stalledRenewals{mem, &stalled}
	b := graph.New[StepState]()
	b.AddNode("a", func(ctx context.Context, s StepState) (StepState, error) {
		if executions.Add(1) == 1 {
			stalled.Store(true) // the lease runs out while the node waits
			close(started)
			<-wake
		}
		return StepState{Steps: state.Items("a")}, nil
	})
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(200*time.Millisecond))
	require.NoError(t, err)
	srv, err := server.New(server.Graph("steps", g), server.WithCheckpointer(saver), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	var th struct {
		ThreadID string `json:"thread_id"`
	}
	faultFreeCall(t, hs.URL, "POST", "/threads", map[string]any{}, &th)
	var run struct {
		RunID string `json:"run_id"`
	}
	faultFreeCall(t, hs.URL, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "steps", "input": map[string]any{}}, &run)

	// Another process takes the thread over once the lease ran out, and
	// runs on it. (The run is executed by a worker of the server, not by
	// its creation: it must hold the lease before the other tries.)
	<-started
	ob := graph.New[StepState]()
	ob.AddNode("b", func(ctx context.Context, s StepState) (StepState, error) {
		return StepState{Steps: state.Items("other")}, nil
	})
	ob.AddEdge(graph.Start, "b")
	ob.AddEdge("b", graph.End)
	other, err := ob.Compile(graph.WithCheckpointer(mem))
	require.NoError(t, err)
	for {
		_, err = other.Invoke(t.Context(), StepState{}, graph.WithThread(th.ThreadID))
		if _, held := errors.AsType[*checkpoint.LeaseHeldError](err); !held {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, err)
	close(wake) // the stalled run goes on: its next write is fenced

	var joined map[string]any
	faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+run.RunID+"/join", nil, &joined)
	var got struct {
		Status string `json:"status"`
	}
	faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+run.RunID, nil, &got)
	require.Equal(t, "error", got.Status)
	require.Equal(t, int32(1), executions.Load(), "the fenced run was run again")
	st, err := other.GetState(t.Context(), graph.WithThread(th.ThreadID))
	require.NoError(t, err)
	require.Equal(t, []string{"other"}, st.Values.Steps.Get(), "the other holder's state, untouched")
}
