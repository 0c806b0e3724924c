//go:build unix

package durabilitytest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// counter is the state of the graphs the ops children run.
type counter struct {
	N state.Value[int]
	// Runs counts the node executions that were committed.
	Runs state.Sum[int]
}

// rmwGraph is one read-modify-write: Start → inc (N+1) → End.
func rmwGraph(t testing.TB, saver checkpoint.Saver, opts ...graph.CompileOption) *graph.Graph[counter] {
	b := graph.New[counter]()
	b.AddNode("inc", func(_ context.Context, s counter) (counter, error) {
		return counter{N: state.Set(s.N.Get() + 1), Runs: state.Delta(1)}, nil
	})
	b.AddEdge(graph.Start, "inc")
	b.AddEdge("inc", graph.End)
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	require.NoError(t, err)
	return g
}

// blockGraph is Start → prep (N+1) → wait (N+100) → End; wait first calls
// block, which may never return.
func blockGraph(t testing.TB, saver checkpoint.Saver, block func(context.Context) error, opts ...graph.CompileOption) *graph.Graph[counter] {
	b := graph.New[counter]()
	b.AddNode("prep", func(_ context.Context, s counter) (counter, error) {
		return counter{N: state.Set(s.N.Get() + 1), Runs: state.Delta(1)}, nil
	})
	b.AddNode("wait", func(ctx context.Context, s counter) (counter, error) {
		if err := block(ctx); err != nil {
			return counter{}, err
		}
		return counter{N: state.Set(s.N.Get() + 100), Runs: state.Delta(1)}, nil
	})
	b.AddEdge(graph.Start, "prep")
	b.AddEdge("prep", "wait")
	b.AddEdge("wait", graph.End)
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	require.NoError(t, err)
	return g
}

// spinGraph is Start → step (N+1) → step … → End once N reaches limit;
// step calls started each time it runs.
func spinGraph(t testing.TB, saver checkpoint.Saver, limit *atomic.Int64, started func(), opts ...graph.CompileOption) *graph.Graph[counter] {
	b := graph.New[counter]()
	b.AddNode("step", func(_ context.Context, s counter) (counter, error) {
		started()
		return counter{N: state.Set(s.N.Get() + 1), Runs: state.Delta(1)}, nil
	})
	b.AddEdge(graph.Start, "step")
	b.AddConditionalEdges("step", func(_ context.Context, s counter) (string, error) {
		if int64(s.N.Get()) >= limit.Load() {
			return graph.End, nil
		}
		return "step", nil
	})
	g, err := b.Compile(append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
	require.NoError(t, err)
	return g
}

// request is what the parent asks of an ops child.
type request struct {
	// Op is hello, invoke, resume, update, get or rmw.
	Op string `json:"op"`
	// Graph is "rmw" (the default) or "block".
	Graph        string `json:"graph,omitempty"`
	Thread       string `json:"thread,omitempty"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// N is the value written: invoke's input, resume's update, update's
	// values.
	N     *int   `json:"n,omitempty"`
	RunID string `json:"run_id,omitempty"`
	// Count is rmw's number of runs, Pause the longest random pause
	// between them.
	Count int           `json:"count,omitempty"`
	Pause time.Duration `json:"pause,omitempty"`
	// Block makes the block graph's wait node block (until the process
	// dies) after it reports the event "blocked".
	Block bool `json:"block,omitempty"`
}

// reply is an ops child's answer.
type reply struct {
	Event string `json:"event,omitempty"`
	Pid   int    `json:"pid,omitempty"`
	// N and Runs are the state the run returned.
	N    int `json:"n"`
	Runs int `json:"runs"`
	// ID is the checkpoint written (update) or read back (resume with a
	// run ID, get); ReadN is N read back from it.
	ID    string `json:"id,omitempty"`
	ReadN int    `json:"read_n"`
	outcome
	Results []outcome `json:"results,omitempty"`
}

// outcome is how one run ended.
type outcome struct {
	N int `json:"n"`
	// Kind is "" (success), "lease" (a *checkpoint.LeaseHeldError),
	// "conflict" (checkpoint.ErrConflict), "fenced" (a
	// *checkpoint.FencedError), "lost" (another error wrapping
	// checkpoint.ErrLeaseLost) or "other".
	Kind   string `json:"kind,omitempty"`
	Err    string `json:"err,omitempty"`
	Holder string `json:"holder,omitempty"`
}

func classify(err error) outcome {
	var held *checkpoint.LeaseHeldError
	switch {
	case err == nil:
		return outcome{}
	case errors.As(err, &held):
		return outcome{Kind: "lease", Err: err.Error(), Holder: held.Holder}
	case errors.Is(err, checkpoint.ErrConflict):
		return outcome{Kind: "conflict", Err: err.Error()}
	case errors.As(err, new(*checkpoint.FencedError)):
		return outcome{Kind: "fenced", Err: err.Error()}
	case errors.Is(err, checkpoint.ErrLeaseLost):
		return outcome{Kind: "lost", Err: err.Error()}
	}
	return outcome{Kind: "other", Err: err.Error()}
}

// startOps starts an ops child on the database addr.
func startOps(t testing.TB, b Backend, addr, name string, extraEnv ...string) *proc {
	t.Helper()
	p := startProc(t, name, true, append([]string{env(envRole, "ops"), env(envAddr, addr)}, extraEnv...)...)
	r := p.call(request{Op: "hello"})
	require.Equal(t, p.pid(), r.Pid)
	return p
}

func ptr(n int) *int { return &n }

// opsChild serves the parent's requests, one JSON object a line on stdin,
// with one JSON reply each (and events) on fd 3, until stdin closes.
func opsChild(t *testing.T, b Backend) {
	ctx := context.Background()
	saver, err := b.Open(ctx, os.Getenv(envAddr))
	require.NoError(t, err)
	defer saver.Close()
	var opts []graph.CompileOption
	if ttl, ok := leaseTTLFromEnv(t); ok {
		opts = append(opts, graph.WithLeaseTTL(ttl))
	}
	out := os.NewFile(3, "replies")
	var outMu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(r reply) {
		outMu.Lock()
		defer outMu.Unlock()
		require.NoError(t, enc.Encode(r))
	}
	var blocking bool // the wait node blocks (set per request)
	rmw := rmwGraph(t, saver, opts...)
	blk := blockGraph(t, saver, func(ctx context.Context) error {
		if !blocking {
			return nil
		}
		send(reply{Event: "blocked"})
		<-ctx.Done() // until the process is killed (or the lease lost)
		return context.Cause(ctx)
	}, opts...)

	var spinLimit atomic.Int64
	var spinStarted atomic.Bool
	spin := spinGraph(t, saver, &spinLimit, func() {
		if spinStarted.CompareAndSwap(false, true) {
			send(reply{Event: "spinning"})
		}
	}, opts...)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var req request
		require.NoError(t, json.Unmarshal(sc.Bytes(), &req))
		g := rmw
		if req.Graph == "block" {
			g = blk
		}
		blocking = req.Block
		ro := []graph.RunOption{graph.WithThread(req.Thread)}
		if req.CheckpointID != "" {
			ro = append(ro, graph.WithCheckpointID(req.CheckpointID))
		}
		if req.RunID != "" {
			ro = append(ro, graph.WithRunID(req.RunID))
		}
		var in counter
		if req.N != nil {
			in.N = state.Set(*req.N)
		}
		var r reply
		switch req.Op {
		case "hello":
			r.Pid = os.Getpid()
		case "invoke", "resume":
			var s counter
			if req.Op == "invoke" {
				s, err = g.Invoke(ctx, in, ro...)
			} else {
				s, err = g.Resume(ctx, graph.Command[counter]{Update: in}, ro...)
			}
			r.outcome = classify(err)
			if err == nil {
				r.N, r.Runs = s.N.Get(), s.Runs.Get()
				if req.RunID != "" {
					// Read back the run's last checkpoint.
					for snap, err := range g.History(ctx, req.Thread, graph.WithFilter(map[string]any{"run_id": req.RunID}), graph.WithLimit(1)) {
						require.NoError(t, err)
						r.ID, r.ReadN = snap.CheckpointID, snap.Values.N.Get()
					}
				}
			}
		case "update":
			r.ID, err = g.UpdateState(ctx, in, "inc", ro...)
			r.outcome = classify(err)
			if err == nil {
				snap, err := g.GetState(ctx, graph.WithThread(req.Thread), graph.WithCheckpointID(r.ID))
				require.NoError(t, err)
				r.ReadN = snap.Values.N.Get()
			}
		case "get":
			snap, err := g.GetState(ctx, ro...)
			require.NoError(t, err)
			r.ID, r.ReadN = snap.CheckpointID, snap.Values.N.Get()
		case "spin", "spin-resume":
			// The spin graph's run, one checkpoint a step: Invoke (spin)
			// until N reaches Count, or Resume (spin-resume) for Count
			// more steps.
			limit := int64(req.Count)
			if req.Op == "spin-resume" {
				snap, err := spin.GetState(ctx, graph.WithThread(req.Thread))
				require.NoError(t, err)
				limit += int64(snap.Values.N.Get())
			}
			spinLimit.Store(limit)
			spinStarted.Store(false)
			ro = append(ro, graph.WithRecursionLimit(1<<30))
			var s counter
			if req.Op == "spin" {
				s, err = spin.Invoke(ctx, in, ro...)
			} else {
				s, err = spin.Resume(ctx, graph.Command[counter]{}, ro...)
			}
			r.outcome = classify(err)
			if err == nil {
				r.N = s.N.Get()
			}
		case "rmw":
			for range req.Count {
				s, err := g.Invoke(ctx, counter{}, ro...)
				o := classify(err)
				if err == nil {
					o.N = s.N.Get()
				}
				r.Results = append(r.Results, o)
				if req.Pause > 0 {
					time.Sleep(rand.N(req.Pause))
				}
			}
		default:
			t.Fatalf("unknown op %q", req.Op)
		}
		send(r)
	}
	require.NoError(t, sc.Err())
}
