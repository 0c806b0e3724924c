package graph_test

// Property-style tests of the invariants of
// the project's LangGraph behavioural specification (not shipped) §9:
//
//	(i)   reducer application order = triggered nodes by name, then Send
//	      tasks by index, whatever the completion order;
//	(ii)  a step either produces a checkpoint or leaves only pending writes;
//	(iii) re-running against the same checkpoint never re-executes a task
//	      that has successful writes;
//	(iv)  checkpoint IDs are strictly increasing and History is newest first;
//	(v)   apart from interrupt notifications and the snapshot emitted at the
//	      start of a resumed run, values is emitted at most once per
//	      superstep, after all of the step's writes are applied;
//	(vi)  recursion error iff the run has not finished after recursion-limit
//	      supersteps (counting the input step), the (L+1)-th still executed;
//
// plus the refusal of a checkpoint written by a graph of another shape and
// the task runtime a node can read (Step, RemainingSteps, TaskID, NodeName).
// Helpers live in scenario_helpers_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type invState struct {
	L state.Append[string]
	X state.Value[int] // Send argument
}

// invGate forces the completion order of parallel tasks: the task at
// position k of order waits until the task at k-1 completed. A task counts
// as completed when its pending writes reached the saver (with a saver) or
// when its function returned (without one).
type invGate struct {
	order []string
	mu    sync.Mutex
	done  map[string]chan struct{}
}

func newInvGate(order []string) *invGate {
	g := &invGate{order: order, done: map[string]chan struct{}{}}
	for _, n := range order {
		g.done[n] = make(chan struct{})
	}
	return g
}

func (g *invGate) wait(ctx context.Context, name string) error {
	i := slices.Index(g.order, name)
	if i <= 0 {
		return nil
	}
	select {
	case <-g.done[g.order[i-1]]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *invGate) complete(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.done[name]:
	default:
		close(g.done[name])
	}
}

// ---------------------------------------------------------------------------
// (i)

// invMergeOrderRun runs the six tasks of the (i) graph, forcing them to
// complete in order, and checks the merge order.
func invMergeOrderRun(t *testing.T, order []string, withSaver bool) {
	t.Helper()
	want := []string{"input", "a", "b", "c", "s|1", "s|2", "s|3"}
	ctx := dexCtx(t)
	gate := newInvGate(order)
	key := func(name string, s invState) string {
		if name == "s" {
			return fmt.Sprintf("s|%d", s.X.Get())
		}
		return name
	}
	node := func(name string) graph.NodeFunc[invState] {
		return func(ctx context.Context, s invState) (invState, error) {
			k := key(name, s)
			if err := gate.wait(ctx, k); err != nil {
				return s, err
			}
			if !withSaver {
				defer gate.complete(k)
			}
			return invState{L: state.Items(k)}, nil
		}
	}
	b := graph.New[invState]()
	for _, n := range []string{"c", "a", "b", "s"} { // insertion order is not the merge order
		b.AddNode(n, node(n)).AddEdge(n, graph.End)
	}
	b.AddBranch(graph.Start, func(ctx context.Context, s invState) (graph.Route[invState], error) {
		r := graph.Route[invState]{Nodes: []string{"c", "b", "a"}}
		for i := 1; i <= 3; i++ {
			r.Sends = append(r.Sends, graph.Send[invState]{Node: "s", Arg: invState{X: state.Set(i)}})
		}
		return r, nil
	})
	var opts []graph.CompileOption
	var run []graph.RunOption
	if withSaver {
		saver := newDexSaver()
		saver.afterPutWrites = func(_ checkpoint.Ref, ws []checkpoint.Write) {
			for _, w := range ws {
				if w.Channel == "L" {
					var v struct{ Updates []string }
					if err := json.Unmarshal(w.Value, &v); err == nil && len(v.Updates) == 1 {
						gate.complete(v.Updates[0])
					}
				}
			}
		}
		opts = append(opts, graph.WithCheckpointer(saver))
		run = append(run, graph.WithThread("1"))
	}
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	out, err := g.Invoke(ctx, invState{L: state.Items("input")}, run...)
	require.NoError(t, err)
	require.Equal(t, want, out.L.Get())
	if withSaver {
		require.Equal(t, want, dexState(t, g, "1").Values.L.Get())
	}
}

// The engine starts GOMAXPROCS workers per step and gives blocked steps
// more after a short delay; the test raises GOMAXPROCS so that every task
// has a worker from the start and the completion order is set by the
// channels alone (TestInvariantIFewWorkers covers the other path).
func TestInvariantIMergeOrderIndependentOfCompletionOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(8, runtime.GOMAXPROCS(0))))
	tasks := []string{"a", "b", "c", "s|1", "s|2", "s|3"}
	orders := [][]string{
		slices.Clone(tasks),
		{"s|3", "s|2", "s|1", "c", "b", "a"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		o := slices.Clone(tasks)
		rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		orders = append(orders, o)
	}
	for _, withSaver := range []bool{false, true} {
		for _, order := range orders {
			t.Run(fmt.Sprintf("saver=%v/%v", withSaver, order), func(t *testing.T) {
				invMergeOrderRun(t, order, withSaver)
			})
		}
	}
}

// The same property when tasks outnumber the engine's initial workers, so
// that blocked tasks wait for the extra workers started after a delay.
// Under -race this also checks that the step's worker pool is race-free.
func TestInvariantIFewWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for i := range 60 {
		for _, withSaver := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/saver=%v", i, withSaver), func(t *testing.T) {
				invMergeOrderRun(t, []string{"b", "s|2", "a", "s|3", "c", "s|1"}, withSaver)
			})
		}
	}
}

// ---------------------------------------------------------------------------
// (ii)

func TestInvariantIIFailedStepLeavesOnlyPendingWrites(t *testing.T) {
	errBoom := errors.New("boom")
	for _, d := range dexDurabilities {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			exit := d.d == graph.DurabilityExit
			saver := newDexSaver()
			var mu sync.Mutex
			saved := map[string]bool{}
			bothSafe := make(chan struct{})
			markSafe := func(name string) {
				mu.Lock()
				defer mu.Unlock()
				if (name == "a" || name == "b") && !saved[name] {
					saved[name] = true
					if saved["a"] && saved["b"] {
						close(bothSafe)
					}
				}
			}
			if !exit {
				saver.afterPutWrites = func(_ checkpoint.Ref, ws []checkpoint.Write) {
					for _, w := range ws {
						if w.TaskPath == "a" || w.TaskPath == "b" {
							markSafe(w.TaskPath)
						}
					}
				}
			}
			ok := func(name string) graph.NodeFunc[invState] {
				return func(ctx context.Context, s invState) (invState, error) {
					if exit {
						defer markSafe(name)
					}
					return invState{L: state.Items(name)}, nil
				}
			}
			var fail atomic.Bool
			fail.Store(true)
			g, err := graph.New[invState]().
				AddNode("a", ok("a")).
				AddNode("b", ok("b")).
				AddNode("c", func(ctx context.Context, s invState) (invState, error) {
					select {
					case <-bothSafe:
					case <-ctx.Done():
						return s, ctx.Err()
					}
					if fail.Load() {
						return s, errBoom
					}
					return invState{L: state.Items("c")}, nil
				}).
				AddNode("d", ok("d")).
				AddEdge(graph.Start, "a").
				AddEdge(graph.Start, "b").
				AddEdge(graph.Start, "c").
				AddJoin([]string{"a", "b", "c"}, "d").
				AddEdge("d", graph.End).
				Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			th := graph.WithThread("1")
			dur := graph.WithDurability(d.d)

			_, err = g.Invoke(ctx, invState{L: state.Items("in")}, th, dur)
			require.ErrorIs(t, err, errBoom)
			hist := dexHistory(t, g, "1")
			latest := hist[0]
			tup, err := saver.Memory.Get(ctx, checkpoint.Ref{ThreadID: "1"})
			require.NoError(t, err)
			require.Equal(t, latest.CheckpointID, tup.ID)
			writers := map[string]bool{}
			for _, w := range tup.PendingWrites {
				kind := "write"
				if w.Channel == checkpoint.ChannelError {
					kind = "error"
				}
				writers[w.TaskPath+":"+kind] = true
			}
			require.Equal(t, 0, latest.Metadata.Step, "no checkpoint for the failed step 1")
			require.Equal(t, []string{"in"}, latest.Values.L.Get(), "history values do not include pending writes")
			require.True(t, writers["a:write"] && writers["b:write"] && writers["c:error"], "pending writes: %v", writers)
			require.False(t, writers["c:write"])

			snap := dexState(t, g, "1")
			require.Equal(t, []string{"in", "a", "b"}, snap.Values.L.Get(), "GetState applies the successful pending writes")
			require.Equal(t, []string{"c"}, snap.Next)

			fail.Store(false)
			out, err := g.Resume(ctx, graph.Command[invState]{}, th, dur)
			require.NoError(t, err)
			require.Equal(t, []string{"in", "a", "b", "c", "d"}, out.L.Get())
			after := dexHistory(t, g, "1")
			require.Equal(t, 2, after[0].Metadata.Step)
			if !exit {
				require.Len(t, after, len(hist)+2, "one checkpoint per completed step")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// (iii)

func TestInvariantIIINoReexecutionOfSucceededTasks(t *testing.T) {
	errBoom := errors.New("boom")

	// Property: whatever the number of failed attempts of one task, its
	// finished siblings run once, and the result is the same.
	for fails := 1; fails <= 3; fails++ {
		t.Run(fmt.Sprintf("%d failures", fails), func(t *testing.T) {
			ctx := dexCtx(t)
			saver := newDexSaver()
			var mu sync.Mutex
			safe := map[string]bool{}
			siblingsSafe := make(chan struct{})
			saver.afterPutWrites = func(_ checkpoint.Ref, ws []checkpoint.Write) {
				mu.Lock()
				defer mu.Unlock()
				for _, w := range ws {
					if !safe[w.TaskPath] {
						safe[w.TaskPath] = true
						if (w.TaskPath == "a" || w.TaskPath == "b" || w.TaskPath == "s") && safe["a"] && safe["b"] && safe["s"] {
							close(siblingsSafe)
						}
					}
				}
			}
			var calls sync.Map
			inc := func(n string) {
				v, _ := calls.LoadOrStore(n, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			count := func(n string) int64 {
				v, _ := calls.LoadOrStore(n, new(atomic.Int64))
				return v.(*atomic.Int64).Load()
			}
			var failures atomic.Int64
			ok := func(name string) graph.NodeFunc[invState] {
				return func(ctx context.Context, s invState) (invState, error) {
					inc(name)
					return invState{L: state.Items(name)}, nil
				}
			}
			g, err := graph.New[invState]().
				AddNode("a", ok("a")).
				AddNode("b", ok("b")).
				AddNode("s", ok("s")).
				AddNode("c", func(ctx context.Context, s invState) (invState, error) {
					inc("c")
					select {
					case <-siblingsSafe:
					case <-ctx.Done():
						return s, ctx.Err()
					}
					if failures.Add(1) <= int64(fails) {
						return s, errBoom
					}
					return invState{L: state.Items("c")}, nil
				}).
				AddBranch(graph.Start, func(ctx context.Context, s invState) (graph.Route[invState], error) {
					return graph.Route[invState]{Nodes: []string{"a", "b", "c"}, Sends: []graph.Send[invState]{{Node: "s"}}}, nil
				}).
				AddEdge("a", graph.End).AddEdge("b", graph.End).AddEdge("c", graph.End).AddEdge("s", graph.End).
				Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			th := graph.WithThread("1")
			_, err = g.Invoke(ctx, invState{L: state.Items("in")}, th)
			for i := 1; i < fails; i++ {
				require.ErrorIs(t, err, errBoom)
				_, err = g.Resume(ctx, graph.Command[invState]{}, th)
			}
			require.ErrorIs(t, err, errBoom)
			out, err := g.Resume(ctx, graph.Command[invState]{}, th)
			require.NoError(t, err)
			require.Equal(t, []string{"in", "a", "b", "c", "s"}, out.L.Get())
			for _, n := range []string{"a", "b", "s"} {
				require.EqualValues(t, 1, count(n), "%s re-executed", n)
			}
			require.EqualValues(t, fails+1, count("c"))
		})
	}

	// A task that finished while the saver was still storing its writes
	// when a sibling failed: its writes are still saved (Python submits
	// put_writes independently of the step's fate), so it does not re-run.
	// The saver is slow for a's writes: it returns only once the step is
	// being torn down because c failed (or after a bounded delay, if the
	// engine does not tear it down).
	t.Run("finished task whose writes are being saved when a sibling fails", func(t *testing.T) {
		ctx := dexCtx(t)
		saver := newDexSaver()
		cFailed := make(chan struct{})
		saver.beforePutWrites = func(ctx context.Context, _ checkpoint.Ref, ws []checkpoint.Write) {
			if len(ws) == 0 || ws[0].TaskPath != "a" {
				return
			}
			<-cFailed
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		var aCalls, cCalls atomic.Int64
		var once sync.Once
		aStarted := make(chan struct{})
		g, err := graph.New[invState]().
			AddNode("a", func(ctx context.Context, s invState) (invState, error) {
				if aCalls.Add(1) == 1 {
					close(aStarted)
				}
				return invState{L: state.Items("a")}, nil
			}).
			AddNode("c", func(ctx context.Context, s invState) (invState, error) {
				if cCalls.Add(1) == 1 {
					<-aStarted
					once.Do(func() { close(cFailed) })
					return s, errBoom
				}
				return invState{L: state.Items("c")}, nil
			}).
			AddEdge(graph.Start, "a").AddEdge(graph.Start, "c").
			AddEdge("a", graph.End).AddEdge("c", graph.End).
			Compile(graph.WithCheckpointer(saver))
		require.NoError(t, err)
		th := graph.WithThread("1")
		_, err = g.Invoke(ctx, invState{L: state.Items("in")}, th)
		require.ErrorIs(t, err, errBoom, "the run fails with c's error, not a cancellation")
		snap := dexState(t, g, "1")
		require.Equal(t, []string{"c"}, snap.Next, "a finished task's pending writes are saved though a sibling failed")
		require.Equal(t, []string{"in", "a"}, snap.Values.L.Get())
		out, err := g.Resume(ctx, graph.Command[invState]{}, th)
		require.NoError(t, err)
		require.Equal(t, []string{"in", "a", "c"}, out.L.Get())
		require.EqualValues(t, 1, aCalls.Load(), "a re-executed")
	})
}

// ---------------------------------------------------------------------------
// (iv)

func TestInvariantIVCheckpointIDsIncreasingHistoryNewestFirst(t *testing.T) {
	ctx := dexCtx(t)
	var aCalls, humanCalls atomic.Int64
	g := s51Graph(t, &aCalls, &humanCalls)
	th := graph.WithThread("1")
	_, err := g.Invoke(ctx, s51State{}, th)
	dexInterrupted(t, err)
	_, err = g.Resume(ctx, graph.Command[s51State]{Resume: "x"}, th)
	require.NoError(t, err)
	hist := dexHistory(t, g, "1")
	// Forks: replay, update on an old checkpoint, copy; and a second run.
	_, err = g.Resume(ctx, graph.Command[s51State]{}, th, graph.WithCheckpointID(dexFind(t, hist, "ask_human").CheckpointID))
	dexInterrupted(t, err)
	_, err = g.UpdateState(ctx, s51State{Value: state.Items("u")}, "node_a", th, graph.WithCheckpointID(dexFind(t, hist, "node_a").CheckpointID))
	require.NoError(t, err)
	_, err = g.UpdateState(ctx, s51State{}, graph.AsCopy, th, graph.WithCheckpointID(hist[0].CheckpointID))
	require.NoError(t, err)
	_, err = g.Resume(ctx, graph.Command[s51State]{Resume: "y"}, th, graph.WithCheckpointID(dexFind(t, hist, "ask_human").CheckpointID))
	require.NoError(t, err)
	_, err = g.Invoke(ctx, s51State{}, th, graph.WithDurability(graph.DurabilityAsync))
	dexInterrupted(t, err)

	all := dexHistory(t, g, "1")
	require.Greater(t, len(all), len(hist))
	byID := map[string]*graph.Snapshot[s51State]{}
	for i, s := range all {
		byID[s.CheckpointID] = s
		if i > 0 {
			require.Less(t, s.CheckpointID, all[i-1].CheckpointID, "History is newest first, IDs strictly increasing")
		}
		if s.ParentID != "" {
			require.Less(t, s.ParentID, s.CheckpointID, "a checkpoint is newer than its parent")
		}
		require.False(t, s.CreatedAt.IsZero())
	}
	require.Len(t, byID, len(all), "IDs are unique")
	for _, s := range all {
		if s.ParentID != "" {
			require.Contains(t, byID, s.ParentID, "parent of %s exists", s.CheckpointID)
		}
	}
	require.Equal(t, all[0].CheckpointID, dexState(t, g, "1").CheckpointID, "GetState is the newest checkpoint")

	// Limit, Before and Filter keep the order.
	require.Equal(t, dexView(t, all[:3]), dexView(t, dexHistory(t, g, "1", graph.WithLimit(3))))
	require.Equal(t, dexView(t, all[4:]), dexView(t, dexHistory(t, g, "1", graph.WithBefore(all[3].CheckpointID))))
	var loops []*graph.Snapshot[s51State]
	for _, s := range all {
		if s.Metadata.Source == "loop" {
			loops = append(loops, s)
		}
	}
	require.Equal(t, dexView(t, loops), dexView(t, dexHistory(t, g, "1", graph.WithFilter(map[string]any{"source": "loop"}))))

	// IDs made in one process are strictly increasing.
	prev := checkpoint.NewID()
	for range 1000 {
		id := checkpoint.NewID()
		require.Less(t, prev, id)
		prev = id
	}
}

// ---------------------------------------------------------------------------
// (v)

func TestInvariantVValuesAtMostOncePerStep(t *testing.T) {
	build := func(t *testing.T, opts ...graph.CompileOption) *graph.Graph[invState] {
		b := graph.New[invState]()
		for _, n := range []string{"a", "b", "c"} {
			b.AddNode(n, func(ctx context.Context, s invState) (invState, error) {
				return invState{L: state.Items(n)}, nil
			})
		}
		b.AddNode("s", func(ctx context.Context, s invState) (invState, error) {
			return invState{L: state.Items(fmt.Sprintf("s|%d", s.X.Get()))}, nil
		}).
			AddBranch(graph.Start, func(ctx context.Context, s invState) (graph.Route[invState], error) {
				return graph.Route[invState]{Nodes: []string{"a", "b"}, Sends: []graph.Send[invState]{
					{Node: "s", Arg: invState{X: state.Set(1)}}, {Node: "s", Arg: invState{X: state.Set(2)}}}}, nil
			}).
			AddEdge("a", "c").AddEdge("b", "c").AddEdge("s", "c").AddEdge("c", graph.End)
		g, err := b.Compile(opts...)
		require.NoError(t, err)
		return g
	}
	// check verifies the values events of one run; skipFirst drops the
	// snapshot emitted at the start of a resumed run.
	check := func(t *testing.T, evs []graph.Event, skipFirst bool) map[int]string {
		t.Helper()
		perStep := map[int]string{}
		pendingUpdates := map[int]int{}
		first := true
		for _, ev := range evs {
			switch ev.Mode {
			case graph.ModeUpdates:
				if ev.Node != "" {
					pendingUpdates[ev.Step]++
				}
			case graph.ModeValues:
				if skipFirst && first {
					first = false
					continue
				}
				if len(ev.Interrupts) > 0 {
					continue
				}
				_, dup := perStep[ev.Step]
				require.False(t, dup, "values emitted twice for step %d", ev.Step)
				perStep[ev.Step] = dexJSON(t, ev.Payload)
				// after all the step's writes: no update of this step follows
				pendingUpdates[ev.Step] = -1 << 30
			}
		}
		for step, n := range pendingUpdates {
			require.Less(t, n, 0, "updates of step %d after its values event", step)
		}
		return perStep
	}
	modes := graph.WithStreamModes(graph.ModeValues | graph.ModeUpdates)

	t.Run("fresh run", func(t *testing.T) {
		g := build(t, graph.WithCheckpointer(checkpoint.NewMemory()))
		evs, err := dexCollect(g.Stream(dexCtx(t), invState{L: state.Items("in")}, graph.WithThread("1"), modes))
		require.NoError(t, err)
		perStep := check(t, evs, false)
		// Each values event is the state checkpointed at the end of its step.
		hist := dexHistory(t, g, "1", graph.WithFilter(map[string]any{"source": "loop"}))
		require.Len(t, perStep, len(hist))
		for _, h := range hist {
			require.Equal(t, dexJSON(t, h.Values), perStep[h.Metadata.Step], "step %d", h.Metadata.Step)
		}
	})

	t.Run("resumed run", func(t *testing.T) {
		g := build(t, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("c"))
		th := graph.WithThread("1")
		evs, err := dexCollect(g.Stream(dexCtx(t), invState{L: state.Items("in")}, th, modes))
		dexInterrupted(t, err)
		check(t, evs, false)
		evs, err = dexCollect(g.StreamResume(dexCtx(t), graph.Command[invState]{}, th, modes))
		require.NoError(t, err)
		perStep := check(t, evs, true)
		require.Len(t, perStep, 1, "one step ran (c)")
	})
}

// ---------------------------------------------------------------------------
// (vi)

func TestInvariantVIRecursionLimit(t *testing.T) {
	ctx := dexCtx(t)

	// A chain of n nodes needs n+1 supersteps (the input step counts): it
	// finishes iff limit >= n+1; otherwise superstep index limit still runs
	// (and is checkpointed) before the error.
	chain := func(t *testing.T, n int, calls []atomic.Int64) *graph.Graph[invState] {
		b := graph.New[invState]()
		prev := graph.Start
		for i := range n {
			name := fmt.Sprintf("n%d", i)
			b.AddNode(name, func(ctx context.Context, s invState) (invState, error) {
				calls[i].Add(1)
				return invState{L: state.Items(name)}, nil
			})
			b.AddEdge(prev, name)
			prev = name
		}
		b.AddEdge(prev, graph.End)
		g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		return g
	}
	const n = 3
	for limit := 1; limit <= n+3; limit++ {
		t.Run(fmt.Sprintf("chain of %d, limit %d", n, limit), func(t *testing.T) {
			calls := make([]atomic.Int64, n)
			g := chain(t, n, calls)
			out, err := g.Invoke(ctx, invState{}, graph.WithThread("1"), graph.WithRecursionLimit(limit))
			hist := dexHistory(t, g, "1")
			if limit >= n+1 {
				require.NoError(t, err)
				require.Len(t, out.L.Get(), n)
				return
			}
			var re *graph.RecursionError
			require.ErrorAs(t, err, &re)
			require.Equal(t, limit, re.Limit)
			// supersteps 0..limit ran: the input step and nodes n0..n(limit-1)
			for i := range n {
				want := int64(0)
				if i < limit {
					want = 1
				}
				require.Equal(t, want, calls[i].Load(), "n%d", i)
			}
			require.Equal(t, limit, hist[0].Metadata.Step, "the last superstep is checkpointed")
			require.Equal(t, "loop", hist[0].Metadata.Source)
			require.Len(t, dexHistory(t, g, "1", graph.WithFilter(map[string]any{"source": "loop"})), limit+1)
		})
	}

	t.Run("endless loop, then resume", func(t *testing.T) {
		var calls atomic.Int64
		g, err := graph.New[invState]().
			AddNode("loop", func(ctx context.Context, s invState) (invState, error) {
				calls.Add(1)
				return invState{L: state.Items("x")}, nil
			}).
			AddEdge(graph.Start, "loop").
			AddEdge("loop", "loop").
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		th := graph.WithThread("1")
		const L = 5
		_, err = g.Invoke(ctx, invState{}, th, graph.WithRecursionLimit(L))
		var re *graph.RecursionError
		require.ErrorAs(t, err, &re)
		require.Equal(t, L, re.Limit)
		require.Equal(t, []string{"loop"}, re.LastNodes)
		require.EqualValues(t, L, calls.Load(), "supersteps 1..L ran the node")
		require.Equal(t, L, dexState(t, g, "1").Metadata.Step)
		require.Equal(t, []string{"loop"}, dexState(t, g, "1").Next)

		// On resume there is no input checkpoint and no input step: the
		// budget counts from the loaded checkpoint, so L+2 supersteps run.
		_, err = g.Resume(ctx, graph.Command[invState]{}, th, graph.WithRecursionLimit(L))
		require.ErrorAs(t, err, &re)
		require.EqualValues(t, L+L+2, calls.Load())
		require.Equal(t, L+L+2, dexState(t, g, "1").Metadata.Step)
	})

	t.Run("limit below 1", func(t *testing.T) {
		calls := make([]atomic.Int64, 1)
		g := chain(t, 1, calls)
		_, err := g.Invoke(ctx, invState{}, graph.WithThread("1"), graph.WithRecursionLimit(0))
		require.Error(t, err)
		require.EqualValues(t, 0, calls[0].Load())
	})
}

// ---------------------------------------------------------------------------
// Shape mismatch.

func TestShapeMismatchRefused(t *testing.T) {
	ctx := dexCtx(t)
	saver := checkpoint.NewMemory()
	node := func(name string) graph.NodeFunc[invState] {
		return func(ctx context.Context, s invState) (invState, error) {
			return invState{L: state.Items(name)}, nil
		}
	}
	a, err := graph.New[invState]().
		AddNode("a", node("a")).AddNode("b", node("b")).
		AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End).
		Compile(graph.WithCheckpointer(saver), graph.WithInterruptBefore("b"))
	require.NoError(t, err)
	_, err = a.Invoke(ctx, invState{}, graph.WithThread("1"))
	dexInterrupted(t, err)
	id := dexState(t, a, "1").CheckpointID

	// Same state type, b replaced by c: the paused node is gone, and
	// the checkpoint cannot be continued.
	other, err := graph.New[invState]().
		AddNode("a", node("a")).AddNode("c", node("c")).
		AddEdge(graph.Start, "a").AddEdge("a", "c").AddEdge("c", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)

	var sm *graph.ShapeMismatchError
	_, err = other.Resume(ctx, graph.Command[invState]{}, graph.WithThread("1"))
	require.ErrorAs(t, err, &sm)
	require.Equal(t, id, sm.CheckpointID)
	require.NotEqual(t, sm.Want, sm.Got)
	require.Equal(t, []string{"b"}, sm.Nodes)
	_, err = other.GetState(ctx, graph.WithThread("1"))
	require.ErrorAs(t, err, &sm)
	_, err = other.UpdateState(ctx, invState{}, "a", graph.WithThread("1"))
	require.ErrorAs(t, err, &sm)
	require.Equal(t, id, dexState(t, a, "1").CheckpointID, "refusals write nothing")

	// The graph that wrote the thread still resumes it; a graph of the same
	// shape compiled separately does too.
	same, err := graph.New[invState]().
		AddNode("a", node("a")).AddNode("b", node("b")).
		AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	out, err := same.Resume(ctx, graph.Command[invState]{}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, out.L.Get())

	// Another state type is another shape; with nothing pending and every
	// stored value readable, it reads the thread (a new field is zero).
	type other2 struct {
		L state.Append[string]
		Y state.Value[int]
	}
	o2, err := graph.New[other2]().
		AddNode("a", func(ctx context.Context, s other2) (other2, error) { return s, nil }).
		AddNode("b", func(ctx context.Context, s other2) (other2, error) { return s, nil }).
		AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	snap, err := o2.GetState(ctx, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, snap.Values.L.Get())
	require.Zero(t, snap.Values.Y.Get())
}

// ---------------------------------------------------------------------------
// Task runtime.

func TestNodeRuntimeInfo(t *testing.T) {
	ctx := dexCtx(t)
	type seen struct {
		step, remaining int
		task, node      string
	}
	var mu sync.Mutex
	var log []seen
	record := func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, seen{graph.Step(ctx), graph.RemainingSteps(ctx), graph.TaskID(ctx), graph.NodeName(ctx)})
	}
	g, err := graph.New[invState]().
		AddNode("a", func(ctx context.Context, s invState) (invState, error) {
			record(ctx)
			return invState{L: state.Items("a")}, nil
		}).
		AddNode("b", func(ctx context.Context, s invState) (invState, error) {
			record(ctx)
			if _, err := graph.Interrupt(ctx, "wait"); err != nil {
				return s, err
			}
			return invState{L: state.Items("b")}, nil
		}).
		AddNode("c", func(ctx context.Context, s invState) (invState, error) {
			record(ctx)
			return invState{L: state.Items("c")}, nil
		}).
		AddEdge(graph.Start, "a").AddEdge(graph.Start, "c").AddEdge("a", "b").AddEdge("b", graph.End).AddEdge("c", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)

	// Outside a node.
	require.Equal(t, -1, graph.Step(ctx))
	require.Equal(t, -1, graph.RemainingSteps(ctx))
	require.Empty(t, graph.TaskID(ctx))
	require.Empty(t, graph.NodeName(ctx))

	const L = 10
	th := graph.WithThread("1")
	_, err = g.Invoke(ctx, invState{}, th, graph.WithRecursionLimit(L))
	dexInterrupted(t, err)
	_, err = g.Resume(ctx, graph.Command[invState]{Resume: "go"}, th, graph.WithRecursionLimit(L))
	require.NoError(t, err)

	byNode := map[string][]seen{}
	for _, s := range log {
		byNode[s.node] = append(byNode[s.node], s)
	}
	require.Len(t, byNode["a"], 1)
	require.Len(t, byNode["c"], 1)
	require.Len(t, byNode["b"], 2)
	a, c, b1, b2 := byNode["a"][0], byNode["c"][0], byNode["b"][0], byNode["b"][1]
	// Step 0 applies the input; a and c run in step 1, b in step 2. Python's
	// RemainingSteps = stop - step with stop = L for a fresh run.
	require.Equal(t, 1, a.step)
	require.Equal(t, 1, c.step)
	require.Equal(t, 2, b1.step)
	require.Equal(t, L-1, a.remaining)
	require.Equal(t, L-2, b1.remaining)
	require.NotEmpty(t, a.task)
	require.NotEqual(t, a.task, c.task, "parallel tasks have distinct ids")
	require.Equal(t, b1.task, b2.task, "a re-run of the same task (resume) keeps its id")
	require.Equal(t, 2, b2.step)
	// The resumed run loaded the checkpoint of step 1 (budget from there).
	require.Equal(t, L+1, b2.remaining)

	// A node that stops when RemainingSteps gets low finishes gracefully.
	var runs atomic.Int64
	loop, err := graph.New[invState]().
		AddNode("agent", func(ctx context.Context, s invState) (invState, error) {
			runs.Add(1)
			return invState{X: state.Set(graph.RemainingSteps(ctx))}, nil
		}).
		AddEdge(graph.Start, "agent").
		AddConditionalEdges("agent", func(ctx context.Context, s invState) (string, error) {
			if s.X.Get() <= 2 {
				return graph.End, nil
			}
			return "agent", nil
		}, graph.WithDestinations("agent", graph.End)).
		Compile()
	require.NoError(t, err)
	out, err := loop.Invoke(ctx, invState{}, graph.WithRecursionLimit(L))
	require.NoError(t, err)
	require.Equal(t, 2, out.X.Get())
	require.EqualValues(t, L-2, runs.Load())
}
