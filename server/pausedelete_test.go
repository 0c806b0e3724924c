package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// pause freezes a server process the way SIGSTOP would, as seen from the
// database: from its graph's first checkpoint write on, none of its saver
// and Backend calls is made until resume is closed.
type pause struct {
	once      sync.Once
	began     chan struct{} // closed at the first checkpoint write
	resumePut chan struct{} // lets that write go on, alone
	putDone   chan error    // what that write returned
	resume    chan struct{} // lets the rest go on
}

func newPause() *pause {
	return &pause{began: make(chan struct{}), resumePut: make(chan struct{}), putDone: make(chan error, 1), resume: make(chan struct{})}
}

// wait blocks while the process is paused.
func (p *pause) wait() {
	select {
	case <-p.began:
		<-p.resume
	default:
	}
}

// pausedSaver is a saver of the paused process.
type pausedSaver struct {
	s leasingSaver
	p *pause
}

func (s pausedSaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	s.p.wait()
	return s.s.Get(ctx, ref)
}

func (s pausedSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	first := false
	s.p.once.Do(func() {
		close(s.p.began)
		first = true
	})
	if !first {
		s.p.wait()
		return s.s.Put(ctx, cp)
	}
	<-s.p.resumePut
	err := s.s.Put(ctx, cp)
	s.p.putDone <- err
	return err
}

func (s pausedSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	s.p.wait()
	return s.s.PutWrites(ctx, ref, writes)
}

func (s pausedSaver) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	s.p.wait()
	return s.s.List(ctx, threadID, opts)
}

func (s pausedSaver) DeleteThread(ctx context.Context, threadID string) error {
	s.p.wait()
	return s.s.DeleteThread(ctx, threadID)
}

func (s pausedSaver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	s.p.wait()
	return s.s.AcquireLease(ctx, threadID, holder, ttl)
}

func (s pausedSaver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	s.p.wait()
	return s.s.RenewLease(ctx, lease, ttl)
}

func (s pausedSaver) ReleaseLease(ctx context.Context, lease checkpoint.Lease) error {
	s.p.wait()
	return s.s.ReleaseLease(ctx, lease)
}

// pausedBackend is the Backend of the paused process.
type pausedBackend struct {
	server.Backend
	p *pause
}

func (b pausedBackend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	b.p.wait()
	return b.Backend.ClaimRun(ctx, holder, ttl, graphs)
}

func (b pausedBackend) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	b.p.wait()
	return b.Backend.RenewLease(ctx, c, ttl)
}

func (b pausedBackend) AppendEvent(ctx context.Context, c *server.Claim, name string, data json.RawMessage) (int, error) {
	b.p.wait()
	return b.Backend.AppendEvent(ctx, c, name, data)
}

func (b pausedBackend) ReleaseRun(ctx context.Context, c *server.Claim) error {
	b.p.wait()
	return b.Backend.ReleaseRun(ctx, c)
}

func (b pausedBackend) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	b.p.wait()
	return b.Backend.FinishRun(ctx, c, res)
}

// TestDeletingAThreadFencesAPausedProcessHoldingItsRun: process A claims
// a run and is paused (as by SIGSTOP) before its graph writes the run's
// first checkpoint; the thread is deleted through process B. The delete
// waits until A's leases expired and deletes under the thread's lease,
// so that A, woken up, has its checkpoint write refused: the thread stays
// deleted, with no checkpoint. When B then makes a thread of the same ID
// again before A wakes up, A's write is refused all the same: the new
// thread gets nothing of the old one's run, and runs its own.
func TestDeletingAThreadFencesAPausedProcessHoldingItsRun(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	for _, tc := range []struct {
		name     string
		open     func(*testing.T) (checkpoint.Saver, server.Backend)
		recreate bool
	}{
		{"sqlite", sqliteEnv, false},
		{"postgres", postgresEnv, false},
		{"sqlite, the thread made again", sqliteEnv, true},
		{"postgres, the thread made again", postgresEnv, true},
	} {
		name, open := tc.name, tc.open
		t.Run(name, func(t *testing.T) {
			saver, backend := open(t)
			p := newPause()
			newServer := func(s checkpoint.Saver, b server.Backend) (*server.Server, *httptest.Server) {
				gb := graph.New[StepState]()
				gb.AddNode("a", func(ctx context.Context, s StepState) (StepState, error) {
					return StepState{Steps: state.Items("a")}, nil
				})
				gb.AddEdge(graph.Start, "a")
				gb.AddEdge("a", graph.End)
				g, err := gb.Compile(graph.WithCheckpointer(s))
				require.NoError(t, err)
				srv, err := server.New(server.Graph("steps", g), server.WithCheckpointer(s), server.WithBackend(b),
					server.WithAuthToken(token), server.WithPollInterval(10*time.Millisecond), server.WithRunLeaseTTL(time.Second))
				require.NoError(t, err)
				hs := httptest.NewServer(srv)
				t.Cleanup(func() {
					hs.Close()
					ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
					defer stop()
					_ = srv.Shutdown(ctx)
				})
				return srv, hs
			}
			srvA, a := newServer(pausedSaver{s: saver.(leasingSaver), p: p}, pausedBackend{Backend: backend, p: p})

			var th struct {
				ThreadID string `json:"thread_id"`
			}
			faultFreeCall(t, a.URL, "POST", "/threads", map[string]any{}, &th)
			faultFreeCall(t, a.URL, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "steps",
				"input": map[string]any{"seq": 1}}, nil)
			<-p.began // A is paused, holding the run and its thread's lease

			_, b := newServer(saver, backend)
			faultFreeCall(t, b.URL, "DELETE", "/threads/"+th.ThreadID, nil, nil)
			_, err := saver.Get(t.Context(), checkpoint.Ref{ThreadID: th.ThreadID})
			require.ErrorIs(t, err, checkpoint.ErrNotFound)
			if tc.recreate {
				faultFreeCall(t, b.URL, "POST", "/threads", map[string]any{"thread_id": th.ThreadID}, nil)
			}

			// A wakes up in the middle of writing its checkpoint: the
			// write is made before anything else of A's (the renewal of its
			// run lease that would tell it the run is gone).
			close(p.resumePut)
			err = <-p.putDone
			_, fenced := errors.AsType[*checkpoint.FencedError](err)
			require.True(t, fenced, "A's write is refused as fenced: %v", err)
			close(p.resume)
			ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			require.NoError(t, srvA.Shutdown(ctx), "A's run returned")
			_, err = saver.Get(t.Context(), checkpoint.Ref{ThreadID: th.ThreadID})
			require.ErrorIs(t, err, checkpoint.ErrNotFound, "the deleted thread has no checkpoint")
			if !tc.recreate {
				_, err = backend.Thread(t.Context(), th.ThreadID)
				require.True(t, errors.Is(err, server.ErrNotFound), "the deleted thread stays deleted: %v", err)
				return
			}
			// The thread made again is new: empty, idle, and its own run
			// starts from its own input.
			var got struct {
				Status string         `json:"status"`
				Values map[string]any `json:"values"`
			}
			faultFreeCall(t, b.URL, "GET", "/threads/"+th.ThreadID, nil, &got)
			require.Equal(t, "idle", got.Status)
			require.Empty(t, got.Values, "nothing of the old thread's run")
			var out map[string]any
			faultFreeCall(t, b.URL, "POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "steps",
				"input": map[string]any{"seq": 2}}, &out)
			require.Equal(t, []any{"a"}, out["steps"], "one step, of its own run")
			var history []map[string]any
			faultFreeCall(t, b.URL, "POST", "/threads/"+th.ThreadID+"/history", map[string]any{}, &history)
			for _, h := range history {
				require.NotEqual(t, float64(1), h["values"].(map[string]any)["seq"], "no checkpoint of the old run: %v", h)
			}
		})
	}
}
