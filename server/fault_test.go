package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// faults decides which calls of the faulty Backend and saver fail: each
// call fails with probability rate, half of those before the call is
// made and half after it was made (its answer lost, as when a connection
// drops after the commit).
type faults struct {
	mu       sync.Mutex
	rnd      *rand.Rand
	rate     float64
	injected atomic.Int64
}

// fault is what a dropped connection looks like to a driver.
func fault(op string) error {
	return fmt.Errorf("%s: %w", op, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
}

// before and after report whether the call fails before, or after, it is
// made.
func (f *faults) roll() (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.rnd.Float64()
	switch {
	case x < f.rate/2:
		f.injected.Add(1)
		return true, false
	case x < f.rate:
		f.injected.Add(1)
		return false, true
	}
	return false, false
}

// call makes the call op through the faults.
func call(f *faults, op string, do func() error) error {
	before, after := f.roll()
	if before {
		return fault(op)
	}
	if err := do(); err != nil {
		return err
	}
	if after {
		return fault(op)
	}
	return nil
}

func call1[T any](f *faults, op string, do func() (T, error)) (T, error) {
	var out T
	err := call(f, op, func() error {
		var err error
		out, err = do()
		return err
	})
	return out, err
}

// faultyBackend fails the calls of the run service through f: the
// creations of threads and runs, the claims, leases, events and ends of
// runs and the reads of threads and runs.
type faultyBackend struct {
	server.Backend
	f *faults
}

func (b faultyBackend) CreateThread(ctx context.Context, t server.ThreadRecord, ifExists string) (server.ThreadRecord, error) {
	return call1(b.f, "create thread", func() (server.ThreadRecord, error) { return b.Backend.CreateThread(ctx, t, ifExists) })
}

func (b faultyBackend) Thread(ctx context.Context, id string) (server.ThreadRecord, error) {
	return call1(b.f, "thread", func() (server.ThreadRecord, error) { return b.Backend.Thread(ctx, id) })
}

func (b faultyBackend) CreateRun(ctx context.Context, r server.RunRecord, create *server.ThreadRecord) (server.RunRecord, error) {
	return call1(b.f, "create run", func() (server.RunRecord, error) { return b.Backend.CreateRun(ctx, r, create) })
}

func (b faultyBackend) ClaimRun(ctx context.Context, holder string, ttl time.Duration, graphs []string) (*server.Claim, error) {
	return call1(b.f, "claim", func() (*server.Claim, error) { return b.Backend.ClaimRun(ctx, holder, ttl, graphs) })
}

func (b faultyBackend) RenewLease(ctx context.Context, c *server.Claim, ttl time.Duration) (string, error) {
	return call1(b.f, "renew", func() (string, error) { return b.Backend.RenewLease(ctx, c, ttl) })
}

func (b faultyBackend) StartRun(ctx context.Context, c *server.Claim, checkpointID string) error {
	return call(b.f, "start", func() error { return b.Backend.StartRun(ctx, c, checkpointID) })
}

func (b faultyBackend) ReleaseRun(ctx context.Context, c *server.Claim) error {
	return call(b.f, "release", func() error { return b.Backend.ReleaseRun(ctx, c) })
}

func (b faultyBackend) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	return call(b.f, "finish", func() error { return b.Backend.FinishRun(ctx, c, res) })
}

func (b faultyBackend) AppendEvent(ctx context.Context, c *server.Claim, name string, data json.RawMessage) (int, error) {
	return call1(b.f, "append", func() (int, error) { return b.Backend.AppendEvent(ctx, c, name, data) })
}

func (b faultyBackend) Events(ctx context.Context, runID string, from int) ([]server.Event, error) {
	return call1(b.f, "events", func() ([]server.Event, error) { return b.Backend.Events(ctx, runID, from) })
}

func (b faultyBackend) Run(ctx context.Context, id string) (server.RunRecord, error) {
	return call1(b.f, "run", func() (server.RunRecord, error) { return b.Backend.Run(ctx, id) })
}

// leasingSaver is a saver with thread leases that deletes threads, as the
// SQL savers are.
type leasingSaver interface {
	checkpoint.Saver
	checkpoint.Leaser
	checkpoint.ThreadDeleter
}

// faultySaver fails the calls of a saver through f.
type faultySaver struct {
	s leasingSaver
	f *faults
}

func (s faultySaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	return call1(s.f, "get", func() (*checkpoint.Tuple, error) { return s.s.Get(ctx, ref) })
}

func (s faultySaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	return call(s.f, "put", func() error { return s.s.Put(ctx, cp) })
}

func (s faultySaver) PutWrites(ctx context.Context, ref checkpoint.Ref, writes []checkpoint.Write) error {
	return call(s.f, "put writes", func() error { return s.s.PutWrites(ctx, ref, writes) })
}

func (s faultySaver) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return s.s.List(ctx, threadID, opts)
}

func (s faultySaver) DeleteThread(ctx context.Context, threadID string) error {
	return call(s.f, "delete", func() error { return s.s.DeleteThread(ctx, threadID) })
}

func (s faultySaver) AcquireLease(ctx context.Context, threadID, holder string, ttl time.Duration) (checkpoint.Lease, error) {
	return call1(s.f, "acquire", func() (checkpoint.Lease, error) { return s.s.AcquireLease(ctx, threadID, holder, ttl) })
}

func (s faultySaver) RenewLease(ctx context.Context, lease checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	return call1(s.f, "renew lease", func() (checkpoint.Lease, error) { return s.s.RenewLease(ctx, lease, ttl) })
}

func (s faultySaver) ReleaseLease(ctx context.Context, lease checkpoint.Lease) error {
	return call(s.f, "release lease", func() error { return s.s.ReleaseLease(ctx, lease) })
}

// StepState is the state of the graph of the fault test: each run appends
// "<seq>a" and "<seq>b".
type StepState struct {
	Seq   state.Value[int]     `json:"seq"`
	Steps state.Append[string] `json:"steps"`
}

// TestEveryRunSucceedsOnceThroughTransientFaults runs threads of enqueued
// runs through a server whose Backend and saver fail one call in ten —
// before the call, or after it (the answer lost) — with what a dropped
// connection returns; the graph's second node is a subgraph, whose saver
// calls fail inside the node. Every run must end "success", and every thread's
// state must hold each of its runs' steps once, in order: a fault is
// retried or its run released and resumed from its last checkpoint, never
// turned into a failed run, and no run is applied twice.
func TestEveryRunSucceedsOnceThroughTransientFaults(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	memory := func(*testing.T) (checkpoint.Saver, server.Backend) { return checkpoint.NewMemory(), nil }
	memoryBackend := func(*testing.T) (checkpoint.Saver, server.Backend) {
		return checkpoint.NewMemory(), server.NewMemoryBackend()
	}
	backends := map[string]func(*testing.T) (checkpoint.Saver, server.Backend){"memory": memory,
		"memory-backend": memoryBackend, "sqlite": sqliteEnv, "postgres": postgresEnv}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			saver, backend := open(t)
			f := &faults{rnd: rand.New(rand.NewPCG(1, 2)), rate: 0.1}
			fs := faultySaver{s: saver.(leasingSaver), f: f}

			var mu sync.Mutex
			execs := map[string]int{} // "<thread> <seq><node>" → executions
			node := func(name string) func(context.Context, StepState) (StepState, error) {
				return func(ctx context.Context, s StepState) (StepState, error) {
					mu.Lock()
					execs[fmt.Sprintf("%s %d%s", graph.ThreadID(ctx), s.Seq.Get(), name)]++
					mu.Unlock()
					return StepState{Steps: state.Items(fmt.Sprintf("%d%s", s.Seq.Get(), name))}, nil
				}
			}
			// b is a subgraph: a fault of the saver it shares, inside
			// the node, is retried as any other.
			sub, err := graph.New[StepState]().AddNode("b", node("b")).
				AddEdge(graph.Start, "b").AddEdge("b", graph.End).Compile()
			require.NoError(t, err)
			gb := graph.New[StepState]()
			gb.AddNode("a", node("a"))
			gb.AddCommandNode("b", graph.Subgraph[StepState, StepState](sub, nil, nil))
			gb.AddEdge(graph.Start, "a")
			gb.AddEdge("a", "b")
			gb.AddEdge("b", graph.End)
			// A thread lease a fault left held (a release that failed)
			// expires in a second.
			g, err := gb.Compile(graph.WithCheckpointer(fs), graph.WithLeaseTTL(time.Second))
			require.NoError(t, err)
			opts := []server.Option{server.Graph("steps", g), server.WithCheckpointer(fs), server.WithAuthToken(token)}
			if backend != nil {
				opts = append(opts, server.WithBackend(faultyBackend{Backend: backend, f: f}),
					server.WithPollInterval(10*time.Millisecond), server.WithRunLeaseTTL(time.Second), server.WithWorkers(4))
			}
			srv, err := server.New(opts...)
			require.NoError(t, err)
			hs := httptest.NewServer(srv)
			t.Cleanup(func() {
				hs.Close()
				ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
				defer stop()
				_ = srv.Shutdown(ctx)
			})

			const threads, runs = 6, 3
			var wg sync.WaitGroup
			runIDs := make([][]string, threads)
			threadIDs := make([]string, threads)
			for i := range threads {
				wg.Go(func() {
					var th struct {
						ThreadID string `json:"thread_id"`
					}
					faultFreeCall(t, hs.URL, "POST", "/threads", map[string]any{}, &th)
					threadIDs[i] = th.ThreadID
					for seq := range runs {
						var r struct {
							RunID string `json:"run_id"`
						}
						faultFreeCall(t, hs.URL, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "steps",
							"input": map[string]any{"seq": seq}, "multitask_strategy": "enqueue",
							"stream_mode": []string{"values", "updates"}, "stream_resumable": true}, &r)
						runIDs[i] = append(runIDs[i], r.RunID)
					}
					for _, id := range runIDs[i] {
						faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+id+"/join", nil, nil)
					}
				})
			}
			wg.Wait()
			require.NotZero(t, f.injected.Load(), "faults were injected")

			want := make([]any, 0, 2*runs)
			for seq := range runs {
				want = append(want, fmt.Sprintf("%da", seq), fmt.Sprintf("%db", seq))
			}
			for i, tid := range threadIDs {
				var list []struct {
					RunID  string `json:"run_id"`
					Status string `json:"status"`
				}
				faultFreeCall(t, hs.URL, "GET", "/threads/"+tid+"/runs?limit=100", nil, &list)
				require.Len(t, list, runs, "thread %s has its runs once each", tid)
				for _, r := range list {
					require.Contains(t, runIDs[i], r.RunID)
					require.Equal(t, "success", r.Status, "run %s", r.RunID)
				}
				var th struct {
					Values map[string]any `json:"values"`
				}
				faultFreeCall(t, hs.URL, "GET", "/threads/"+tid, nil, &th)
				require.Equal(t, want, th.Values["steps"], "thread %s shows each run's steps once, in order", tid)
				var st struct {
					Values map[string]any `json:"values"`
				}
				faultFreeCall(t, hs.URL, "GET", "/threads/"+tid+"/state", nil, &st)
				require.Equal(t, want, st.Values["steps"], "thread %s holds each run's steps once, in order", tid)
				for _, rid := range runIDs[i] {
					// An event whose answer a fault lost is not
					// recorded twice.
					evs := faultFreeStream(t, hs.URL, "/threads/"+tid+"/runs/"+rid+"/stream")
					require.NotEmpty(t, evs)
					require.Equal(t, "end", evs[len(evs)-1].Name, "run %s", rid)
					for k := 1; k < len(evs); k++ {
						require.Greater(t, evs[k].ID, evs[k-1].ID, "run %s", rid)
						require.False(t, evs[k].Name == evs[k-1].Name && bytes.Equal(evs[k].Data, evs[k-1].Data),
							"run %s: event %d (%s %s) recorded twice", rid, evs[k].ID, evs[k].Name, evs[k].Data)
					}
				}
				mu.Lock()
				for seq := range runs {
					for _, n := range []string{"a", "b"} {
						// A node whose writes a fault lost runs again.
						require.GreaterOrEqual(t, execs[fmt.Sprintf("%s %d%s", tid, seq, n)], 1)
					}
				}
				mu.Unlock()
			}
		})
	}
}

// faultFreeStream reads a run's whole event stream (a join of a
// resumable run from its first event), sent again after a 503 as
// faultFreeCall does.
func faultFreeStream(t *testing.T, url, path string) []event {
	for try := 0; ; try++ {
		require.Less(t, try, 50, "GET %s kept failing", path)
		req, err := http.NewRequestWithContext(t.Context(), "GET", url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Last-Event-ID", "-1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusServiceUnavailable {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, b)
		return parseSSE(t, b)
	}
}

// faultFreeCall sends a request as the SDKs do: a 503 (a transient fault
// the server could not wait out) is sent again, as is a request that got
// no answer; anything else but a 2xx fails the test. Only idempotent
// requests and creations whose answer cannot be lost after the fact (the
// faults are the server's, not the client's) are sent through it.
func faultFreeCall(t *testing.T, url, method, path string, body, out any) {
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	for try := 0; ; try++ {
		require.Less(t, try, 50, "%s %s kept failing", method, path)
		req, err := http.NewRequestWithContext(t.Context(), method, url+path, bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusServiceUnavailable {
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			time.Sleep(20 * time.Millisecond)
			continue
		}
		require.Less(t, resp.StatusCode, 300, "%s %s: %d %s", method, path, resp.StatusCode, b)
		if out != nil {
			require.NoError(t, json.Unmarshal(b, out))
		}
		return
	}
}

// TestRunsPauseAndResumeThroughTransientFaults: through the same faults,
// a run that pauses at an interrupt still ends "success" with its thread
// "interrupted", and the run that resumes it ends the graph with each
// node's work applied once.
func TestRunsPauseAndResumeThroughTransientFaults(t *testing.T) {
	if onBackend() {
		t.Skip("runs on every backend itself: in the run without " + backendEnv)
	}
	memory := func(*testing.T) (checkpoint.Saver, server.Backend) { return checkpoint.NewMemory(), nil }
	backends := map[string]func(*testing.T) (checkpoint.Saver, server.Backend){"memory": memory, "sqlite": sqliteEnv, "postgres": postgresEnv}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			saver, backend := open(t)
			f := &faults{rnd: rand.New(rand.NewPCG(3, 4)), rate: 0.1}
			fs := faultySaver{s: saver.(leasingSaver), f: f}
			opts := []server.Option{server.Graph("agent", pausingGraph(t, fs)), server.WithCheckpointer(fs), server.WithAuthToken(token)}
			if backend != nil {
				opts = append(opts, server.WithBackend(faultyBackend{Backend: backend, f: f}),
					server.WithPollInterval(10*time.Millisecond), server.WithRunLeaseTTL(time.Second), server.WithWorkers(4))
			}
			srv, err := server.New(opts...)
			require.NoError(t, err)
			hs := httptest.NewServer(srv)
			t.Cleanup(func() {
				hs.Close()
				ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
				defer stop()
				_ = srv.Shutdown(ctx)
			})

			const threads = 4
			var wg sync.WaitGroup
			for i := range threads {
				wg.Go(func() {
					var th struct {
						ThreadID string `json:"thread_id"`
					}
					faultFreeCall(t, hs.URL, "POST", "/threads", map[string]any{}, &th)
					topic := fmt.Sprint("t", i)
					var r struct {
						RunID string `json:"run_id"`
					}
					faultFreeCall(t, hs.URL, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "agent",
						"input": map[string]any{"topic": topic}}, &r)
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+r.RunID+"/join", nil, nil)
					var got struct {
						Status string `json:"status"`
					}
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+r.RunID, nil, &got)
					require.Equal(t, "success", got.Status)
					var thread struct {
						Status string `json:"status"`
					}
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID, nil, &thread)
					require.Equal(t, "interrupted", thread.Status)

					faultFreeCall(t, hs.URL, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "agent",
						"command": map[string]any{"resume": "ok"}}, &r)
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+r.RunID+"/join", nil, nil)
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/runs/"+r.RunID, nil, &got)
					require.Equal(t, "success", got.Status)
					var st struct {
						Values map[string]any `json:"values"`
					}
					faultFreeCall(t, hs.URL, "GET", "/threads/"+th.ThreadID+"/state", nil, &st)
					require.Equal(t, []any{"plan:" + topic, "ask", "finish"}, st.Values["log"])
					require.Equal(t, "ok", st.Values["answer"])
					require.Equal(t, float64(1), st.Values["count"], "plan's Sum applied once")
				})
			}
			wg.Wait()
			require.NotZero(t, f.injected.Load(), "faults were injected")
		})
	}
}

// pausingGraph: plan → ask (interrupt) → finish, as agentGraph, with
// thread leases of a second, so that one a fault left held (a release
// that failed) is soon waited out.
func pausingGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("plan", func(ctx context.Context, s AgentState) (AgentState, error) {
		s.Log.Append("plan:" + s.Topic.Get())
		s.Count.Add(1)
		return s, nil
	})
	b.AddNode("ask", func(ctx context.Context, s AgentState) (AgentState, error) {
		ans, err := graph.Interrupt(ctx, map[string]any{"question": "approve " + s.Topic.Get() + "?"})
		if err != nil {
			return s, err
		}
		s.Answer.Set(fmt.Sprint(ans))
		s.Log.Append("ask")
		return s, nil
	})
	b.AddNode("finish", func(ctx context.Context, s AgentState) (AgentState, error) {
		s.Log.Append("finish")
		return s, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddEdge("plan", "ask")
	b.AddEdge("ask", "finish")
	b.AddEdge("finish", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(time.Second))
	require.NoError(t, err)
	return g
}
