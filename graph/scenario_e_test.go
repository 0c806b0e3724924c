package graph_test

// Ports of LangGraph behavioural scenarios, section E of
// the project's LangGraph behavioural specification (not shipped) §7 (checkpoints, failures,
// history, update_state, time travel; S46–S60). Helpers live in
// scenario_helpers_test.go; see scenario_d_test.go's header for the general
// differences with Python. Replaying from a checkpoint (Python's invoke(None, {checkpoint_id}))
// is Resume with an empty Command and graph.WithCheckpointID.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// ---------------------------------------------------------------------------
// S46 test_pending_writes_resume.

// one and two run in parallel; two fails (two attempts). To make the
// outcome independent of scheduling, two fails only once one's result is
// durable (its pending writes reached the saver; with durability exit,
// nothing is written during the run, so once one returned).
func TestS46PendingWritesResume(t *testing.T) {
	type S struct {
		Value state.Sum[int]
	}
	errConn := errors.New("I'm not good")
	for _, d := range dexDurabilities {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			exit := d.d == graph.DurabilityExit
			saver := newDexSaver()
			oneSafe := make(chan struct{})
			var once sync.Once
			if !exit {
				saver.afterPutWrites = func(_ checkpoint.Ref, ws []checkpoint.Write) {
					for _, w := range ws {
						if w.TaskPath == "one" {
							once.Do(func() { close(oneSafe) })
						}
					}
				}
			}
			var oneCalls, twoCalls atomic.Int64
			var fixed atomic.Bool
			g, err := graph.New[S]().
				AddNode("one", func(ctx context.Context, s S) (S, error) {
					oneCalls.Add(1)
					if exit {
						defer once.Do(func() { close(oneSafe) })
					}
					s.Value.Add(2)
					return s, nil
				}).
				AddNode("two", func(ctx context.Context, s S) (S, error) {
					twoCalls.Add(1)
					select {
					case <-oneSafe:
					case <-ctx.Done():
						return s, ctx.Err()
					}
					if !fixed.Load() {
						return s, errConn
					}
					s.Value.Add(3)
					return s, nil
				}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2})).
				AddEdge(graph.Start, "one").
				AddEdge(graph.Start, "two").
				AddEdge("one", graph.End).
				AddEdge("two", graph.End).
				Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			th := graph.WithThread("1")
			dur := graph.WithDurability(d.d)

			_, err = g.Invoke(ctx, S{Value: state.Delta(1)}, th, dur)
			require.ErrorIs(t, err, errConn)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, "two", ne.Node)
			require.Equal(t, 2, ne.Attempts)
			require.EqualValues(t, 1, oneCalls.Load())
			require.EqualValues(t, 2, twoCalls.Load())

			snap := dexState(t, g, "1")
			require.Equal(t, 3, snap.Values.Value.Get(), "the finished task's pending write is applied")
			require.Equal(t, []string{"two"}, snap.Next)
			require.Equal(t, []string{"one", "two"}, dexTaskNames(snap.Tasks))
			for _, tk := range snap.Tasks {
				if tk.Name == "one" {
					require.True(t, tk.Done)
					require.Empty(t, tk.Error)
				} else {
					require.False(t, tk.Done)
					require.Contains(t, tk.Error, "I'm not good")
				}
			}
			require.Equal(t, "loop", snap.Metadata.Source)
			require.Equal(t, 0, snap.Metadata.Step)
			require.Empty(t, snap.Metadata.Parents)

			byID := dexState(t, g, "1", graph.WithCheckpointID(snap.CheckpointID))
			require.Equal(t, 1, byID.Values.Value.Get(), "pending writes are not applied to an explicit checkpoint")
			require.Equal(t, []string{"one", "two"}, byID.Next)

			nHist := len(dexHistory(t, g, "1"))
			_, err = g.Resume(ctx, graph.Command[S]{}, th, dur)
			require.ErrorIs(t, err, errConn)
			require.EqualValues(t, 1, oneCalls.Load(), "one has a successful write: not re-run")
			require.EqualValues(t, 4, twoCalls.Load())
			require.Len(t, dexHistory(t, g, "1"), nHist, "a failed step writes no checkpoint")
			require.Equal(t, snap.CheckpointID, dexState(t, g, "1").CheckpointID)

			fixed.Store(true)
			out, err := g.Resume(ctx, graph.Command[S]{}, th, dur)
			require.NoError(t, err)
			require.Equal(t, 6, out.Value.Get())
			require.EqualValues(t, 1, oneCalls.Load())
			require.EqualValues(t, 5, twoCalls.Load())
			want := 3
			if exit {
				want = 2
			}
			hist := dexHistory(t, g, "1")
			require.Len(t, hist, want)
			require.Equal(t, 6, hist[0].Values.Value.Get())
			require.Equal(t, "loop", hist[0].Metadata.Source)
			require.Equal(t, 1, hist[0].Metadata.Step)
		})
	}
}

// ---------------------------------------------------------------------------
// S47 test_invoke_checkpoint_two.

// Python's low-level Pregel graph (channels input/output/total) becomes a
// one-node StateGraph with the same fields.
func TestS47InvokeCheckpointTwo(t *testing.T) {
	type S struct {
		Input  state.Value[int]
		Output state.Value[int]
		Total  state.Sum[int]
	}
	errConn := errors.New("connection error")
	errTooLarge := errors.New("Input is too large")
	var failOnce atomic.Bool
	var calls atomic.Int64
	saver := checkpoint.NewMemory()
	g, err := graph.New[S]().
		AddNode("one", func(ctx context.Context, s S) (S, error) {
			calls.Add(1)
			if failOnce.CompareAndSwap(true, false) {
				return s, errConn
			}
			x := s.Input.Get() + s.Total.Get()
			if x > 10 {
				return s, errTooLarge
			}
			s.Output.Set(x)
			s.Total.Add(x)
			return s, nil
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, RetryOn: func(err error) bool { return errors.Is(err, errConn) }})).
		AddEdge(graph.Start, "one").
		AddEdge("one", graph.End).
		Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th1 := graph.WithThread("1")

	out, err := g.Invoke(ctx, S{Input: state.Set(2)}, th1)
	require.NoError(t, err)
	require.Equal(t, 2, out.Output.Get())
	require.Equal(t, 2, dexState(t, g, "1").Values.Total.Get())

	failOnce.Store(true)
	out, err = g.Invoke(ctx, S{Input: state.Set(3)}, th1)
	require.NoError(t, err)
	require.Equal(t, 5, out.Output.Get())
	require.Equal(t, 7, dexState(t, g, "1").Values.Total.Get())
	require.EqualValues(t, 3, calls.Load(), "one retried connection error")

	_, err = g.Invoke(ctx, S{Input: state.Set(4)}, th1)
	require.ErrorIs(t, err, errTooLarge)
	require.EqualValues(t, 4, calls.Load(), "RetryOn refuses the error: no retry")
	snap := dexState(t, g, "1")
	require.Equal(t, 7, snap.Values.Total.Get())
	require.Equal(t, []string{"one"}, snap.Next)
	require.Len(t, snap.Tasks, 1)
	require.Contains(t, snap.Tasks[0].Error, "Input is too large")
	// The latest checkpoint carries exactly one pending write: the error.
	tup, err := saver.Get(ctx, checkpoint.Ref{ThreadID: "1"})
	require.NoError(t, err)
	require.Len(t, tup.PendingWrites, 1)
	require.Equal(t, checkpoint.ChannelError, tup.PendingWrites[0].Channel)
	require.Equal(t, snap.Tasks[0].ID, tup.PendingWrites[0].TaskID)

	// An independent thread.
	out, err = g.Invoke(ctx, S{Input: state.Set(5)}, graph.WithThread("2"))
	require.NoError(t, err)
	require.Equal(t, 5, out.Output.Get())
	require.Equal(t, 5, dexState(t, g, "2").Values.Total.Get())
	require.Equal(t, 7, dexState(t, g, "1").Values.Total.Get())
}

// ---------------------------------------------------------------------------
// S48 test_checkpoint_recovery.

func TestS48CheckpointRecovery(t *testing.T) {
	type S struct {
		Steps   state.Append[string]
		Attempt state.Value[int]
	}
	for _, d := range dexDurabilities {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			saver := checkpoint.NewMemory()
			g, err := graph.New[S]().
				AddNode("node1", func(ctx context.Context, s S) (S, error) {
					if s.Attempt.Get() == 1 {
						return s, errors.New("Simulated failure")
					}
					s.Steps.Append("node1")
					return s, nil
				}).
				AddNode("node2", func(ctx context.Context, s S) (S, error) {
					s.Steps.Append("node2")
					return s, nil
				}).
				AddEdge(graph.Start, "node1").
				AddEdge("node1", "node2").
				AddEdge("node2", graph.End).
				Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			th := graph.WithThread("1")
			dur := graph.WithDurability(d.d)

			_, err = g.Invoke(ctx, S{Steps: state.Items("start"), Attempt: state.Set(1)}, th, dur)
			require.ErrorContains(t, err, "Simulated failure")
			snap := dexState(t, g, "1")
			require.Equal(t, map[string]any{"Steps": []any{"start"}, "Attempt": 1.0}, dexVals(t, snap.Values))
			require.Equal(t, []string{"node1"}, snap.Next)
			require.Len(t, snap.Tasks, 1)
			require.Contains(t, snap.Tasks[0].Error, "Simulated failure")

			// New input on the thread discards the failed task.
			out, err := g.Invoke(ctx, S{Steps: state.Items[string](), Attempt: state.Set(2)}, th, dur)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"Steps": []any{"start", "node1", "node2"}, "Attempt": 2.0}, dexVals(t, out))
			want := 6
			if d.d == graph.DurabilityExit {
				want = 2
			}
			require.Len(t, dexHistory(t, g, "1"), want)

			require.NoError(t, saver.DeleteThread(ctx, "1"))
			_, err = saver.Get(ctx, checkpoint.Ref{ThreadID: "1"})
			require.ErrorIs(t, err, checkpoint.ErrNotFound)
			require.Empty(t, dexHistory(t, g, "1"))
			snap = dexState(t, g, "1")
			require.Empty(t, snap.CheckpointID)
			require.Empty(t, snap.Next)
		})
	}
}

// ---------------------------------------------------------------------------
// S49 test_checkpoint_errors.

// Python also injects a faulty get_next_version; versions are internal to
// this engine, so there is no such case.
func TestS49CheckpointErrors(t *testing.T) {
	type S struct {
		Value state.Append[string]
	}
	build := func(t *testing.T, saver checkpoint.Saver) *graph.Graph[S] {
		node := func(name string) graph.NodeFunc[S] {
			return func(ctx context.Context, s S) (S, error) {
				s.Value.Append(name)
				return s, nil
			}
		}
		g, err := graph.New[S]().
			AddNode("a", node("a")).
			AddNode("b", node("b")).
			AddEdge(graph.Start, "a").
			AddEdge(graph.Start, "b").
			AddEdge("a", graph.End).
			AddEdge("b", graph.End).
			Compile(graph.WithCheckpointer(saver))
		require.NoError(t, err)
		return g
	}
	cases := []struct {
		name   string
		inject func(*dexSaver, error)
		d      graph.Durability
	}{
		{"get", func(s *dexSaver, e error) { s.getErr = e }, graph.DurabilitySync},
		{"put", func(s *dexSaver, e error) { s.putErr = e }, graph.DurabilitySync},
		{"put async", func(s *dexSaver, e error) { s.putErr = e }, graph.DurabilityAsync},
		{"put exit", func(s *dexSaver, e error) { s.putErr = e }, graph.DurabilityExit},
		{"put_writes", func(s *dexSaver, e error) { s.putWritesErr = e }, graph.DurabilitySync},
		{"put_writes async", func(s *dexSaver, e error) { s.putWritesErr = e }, graph.DurabilityAsync},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saver := newDexSaver()
			faulty := fmt.Errorf("Faulty %s", c.name)
			c.inject(saver, faulty)
			g := build(t, saver)
			_, err := g.Invoke(dexCtx(t), S{Value: state.Items("x")}, graph.WithThread("1"), graph.WithDurability(c.d))
			require.ErrorIs(t, err, faulty)
		})
	}
}

// ---------------------------------------------------------------------------
// S50 test_run_from_checkpoint_id_retains_previous_writes.

type s50State struct {
	MyVal    state.Sum[int]
	OtherVal state.Value[bool]
}

func TestS50RunFromCheckpointIDRetainsPreviousWrites(t *testing.T) {
	ctx := dexCtx(t)
	// Both nodes share one toggling callable, as in Python.
	var sw atomic.Bool
	theNode := func(ctx context.Context, s s50State) (s50State, error) {
		on := !sw.Load()
		sw.Store(on)
		if on {
			s.MyVal.Add(2)
		} else {
			s.MyVal.Add(1)
		}
		s.OtherVal.Set(on)
		return s, nil
	}
	edge := func(swap string) graph.RouterFunc[s50State] {
		return func(ctx context.Context, s s50State) (string, error) {
			if s.MyVal.Get() > 3 {
				return graph.End, nil
			}
			return swap, nil
		}
	}
	g, err := graph.New[s50State]().
		AddNode("node_one", theNode).
		AddNode("node_two", theNode).
		AddEdge(graph.Start, "node_one").
		AddConditionalEdges("node_one", edge("node_two"), graph.WithDestinations("node_two", graph.End)).
		AddConditionalEdges("node_two", edge("node_one"), graph.WithDestinations("node_one", graph.End)).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")

	out, err := g.Invoke(ctx, s50State{MyVal: state.Delta(1)}, th)
	require.NoError(t, err)
	require.Equal(t, 4, out.MyVal.Get())
	hist := dexHistory(t, g, "1")
	require.Len(t, hist, 4)
	require.Equal(t, map[string]any{"MyVal": 0.0}, dexVals(t, hist[3].Values))
	require.Equal(t, map[string]any{"MyVal": 4.0, "OtherVal": false}, dexVals(t, hist[0].Values))

	out, err = g.Resume(ctx, graph.Command[s50State]{}, th, graph.WithCheckpointID(hist[1].CheckpointID))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"MyVal": 5.0, "OtherVal": true}, dexVals(t, out))

	newHist := dexHistory(t, g, "1")
	require.Len(t, newHist, len(hist)+2)
	require.Equal(t, "fork", newHist[1].Metadata.Source)
	require.Equal(t, hist[1].CheckpointID, newHist[1].ParentID)
	require.Equal(t, "loop", newHist[0].Metadata.Source)
	require.Empty(t, cmp.Diff(dexView(t, hist), dexView(t, newHist[2:])), "the old branch is unchanged")
}

// ---------------------------------------------------------------------------
// S51 test_replay_from_before_interrupt_then_resume, S54 copy forks.

type s51State struct {
	Value state.Append[string]
}

func s51Graph(t *testing.T, aCalls, humanCalls *atomic.Int64) *graph.Graph[s51State] {
	g, err := graph.New[s51State]().
		AddNode("node_a", func(ctx context.Context, s s51State) (s51State, error) {
			aCalls.Add(1)
			s.Value.Append("a")
			return s, nil
		}).
		AddNode("ask_human", func(ctx context.Context, s s51State) (s51State, error) {
			humanCalls.Add(1)
			v, err := graph.InterruptAs[string](ctx, "question")
			if err != nil {
				return s, err
			}
			s.Value.Append("human:" + v)
			return s, nil
		}).
		AddNode("node_b", func(ctx context.Context, s s51State) (s51State, error) {
			s.Value.Append("b")
			return s, nil
		}).
		AddEdge(graph.Start, "node_a").
		AddEdge("node_a", "ask_human").
		AddEdge("ask_human", "node_b").
		AddEdge("node_b", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	return g
}

type dexHistRow struct {
	Source string
	Next   []string
	Values []string
}

func s51Rows(hist []*graph.Snapshot[s51State]) []dexHistRow {
	out := make([]dexHistRow, len(hist))
	for i, s := range hist {
		v := s.Values.Value.Get()
		if v == nil {
			v = []string{}
		}
		out[i] = dexHistRow{Source: s.Metadata.Source, Next: dexNext(s.Next), Values: v}
	}
	return out
}

func TestS51ReplayFromBeforeInterruptThenResume(t *testing.T) {
	ctx := dexCtx(t)
	var aCalls, humanCalls atomic.Int64
	g := s51Graph(t, &aCalls, &humanCalls)
	th := graph.WithThread("1")

	_, err := g.Invoke(ctx, s51State{}, th)
	dexInterrupted(t, err)
	out, err := g.Resume(ctx, graph.Command[s51State]{Resume: "old_answer"}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "human:old_answer", "b"}, out.Value.Get())

	orig := dexHistory(t, g, "1")
	origRows := []dexHistRow{
		{"loop", []string{}, []string{"a", "human:old_answer", "b"}},
		{"loop", []string{"node_b"}, []string{"a", "human:old_answer"}},
		{"loop", []string{"ask_human"}, []string{"a"}},
		{"loop", []string{"node_a"}, []string{}},
		{"input", []string{graph.Start}, []string{}},
	}
	require.Empty(t, cmp.Diff(origRows, s51Rows(orig)))

	// Replay from before ask_human: the interrupt fires again; node_a is
	// not re-run.
	before := dexFind(t, orig, "ask_human")
	_, err = g.Resume(ctx, graph.Command[s51State]{}, th, graph.WithCheckpointID(before.CheckpointID))
	intr := dexInterrupted(t, err)
	require.Equal(t, []any{"question"}, dexInterruptValues(t, intr.Interrupts))
	require.EqualValues(t, 1, aCalls.Load())
	hist := dexHistory(t, g, "1")
	require.Len(t, hist, 6)
	require.Equal(t, dexHistRow{"fork", []string{"ask_human"}, []string{"a"}}, s51Rows(hist)[0])
	require.Equal(t, before.CheckpointID, hist[0].ParentID)

	out, err = g.Resume(ctx, graph.Command[s51State]{Resume: "new_answer"}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "human:new_answer", "b"}, out.Value.Get())
	require.EqualValues(t, 1, aCalls.Load())

	hist = dexHistory(t, g, "1")
	want := append([]dexHistRow{
		{"loop", []string{}, []string{"a", "human:new_answer", "b"}},
		{"loop", []string{"node_b"}, []string{"a", "human:new_answer"}},
		{"fork", []string{"ask_human"}, []string{"a"}},
	}, origRows...)
	require.Empty(t, cmp.Diff(want, s51Rows(hist)))
	require.Empty(t, cmp.Diff(dexView(t, orig), dexView(t, hist[3:])), "the original checkpoints are unchanged")
}

// ---------------------------------------------------------------------------
// S52 test_replay_creates_branch_preserving_old_checkpoints.

func TestS52ReplayCreatesBranchPreservingOldCheckpoints(t *testing.T) {
	type S struct {
		Value state.Append[string]
	}
	ctx := dexCtx(t)
	var bCalls atomic.Int64
	g, err := graph.New[S]().
		AddNode("node_a", func(ctx context.Context, s S) (S, error) {
			s.Value.Append("a")
			return s, nil
		}).
		AddNode("node_b", func(ctx context.Context, s S) (S, error) {
			s.Value.Append(fmt.Sprintf("b%d", bCalls.Add(1)))
			return s, nil
		}).
		AddNode("node_c", func(ctx context.Context, s S) (S, error) {
			s.Value.Append("c")
			return s, nil
		}).
		AddEdge(graph.Start, "node_a").
		AddEdge("node_a", "node_b").
		AddEdge("node_b", "node_c").
		AddEdge("node_c", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")

	out, err := g.Invoke(ctx, S{}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b1", "c"}, out.Value.Get())
	orig := dexHistory(t, g, "1")
	nexts := func(h []*graph.Snapshot[S]) [][]string {
		var out [][]string
		for _, s := range h {
			out = append(out, dexNext(s.Next))
		}
		return out
	}
	require.Equal(t, [][]string{{}, {"node_c"}, {"node_b"}, {"node_a"}, {graph.Start}}, nexts(orig))

	beforeB := dexFind(t, orig, "node_b")
	out, err = g.Resume(ctx, graph.Command[S]{}, th, graph.WithCheckpointID(beforeB.CheckpointID))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b2", "c"}, out.Value.Get())

	hist := dexHistory(t, g, "1")
	require.Len(t, hist, 8)
	require.Equal(t, [][]string{{}, {"node_c"}, {"node_b"}, {}, {"node_c"}, {"node_b"}, {"node_a"}, {graph.Start}}, nexts(hist))
	require.Equal(t, "fork", hist[2].Metadata.Source)
	require.Equal(t, beforeB.CheckpointID, hist[2].ParentID, "the oldest new checkpoint's parent is the replayed one")
	require.Equal(t, hist[2].CheckpointID, hist[1].ParentID)
	require.Equal(t, hist[1].CheckpointID, hist[0].ParentID)
	require.Empty(t, cmp.Diff(dexView(t, orig), dexView(t, hist[3:])), "original checkpoints preserved")
	require.Equal(t, hist[0].CheckpointID, dexState(t, g, "1").CheckpointID, "GetState is the new tip")
	require.Equal(t, []string{"a", "b2", "c"}, dexState(t, g, "1").Values.Value.Get())
}

// ---------------------------------------------------------------------------
// S53 test_fork_reruns_with_modified_state.

func TestS53ForkRerunsWithModifiedState(t *testing.T) {
	type S struct {
		Value state.Append[string]
	}
	ctx := dexCtx(t)
	var aCalls, bCalls atomic.Int64
	g, err := graph.New[S]().
		AddNode("node_a", func(ctx context.Context, s S) (S, error) {
			aCalls.Add(1)
			s.Value.Append("a")
			return s, nil
		}).
		AddNode("node_b", func(ctx context.Context, s S) (S, error) {
			bCalls.Add(1)
			s.Value.Append("b")
			return s, nil
		}).
		AddEdge(graph.Start, "node_a").
		AddEdge("node_a", "node_b").
		AddEdge("node_b", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")
	out, err := g.Invoke(ctx, S{}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, out.Value.Get())
	tip := dexState(t, g, "1")
	beforeB := dexFind(t, dexHistory(t, g, "1"), "node_b")

	fork := func(x string) []string {
		// asNode inferred: node_a ran last before that checkpoint.
		id, err := g.UpdateState(ctx, S{Value: state.Items(x)}, "", th, graph.WithCheckpointID(beforeB.CheckpointID))
		require.NoError(t, err)
		snap := dexState(t, g, "1", graph.WithCheckpointID(id))
		require.Equal(t, "update", snap.Metadata.Source)
		require.Equal(t, beforeB.CheckpointID, snap.ParentID)
		require.Equal(t, []string{"node_b"}, snap.Next)
		require.Equal(t, beforeB.Metadata.Step+1, snap.Metadata.Step)
		out, err := g.Resume(ctx, graph.Command[S]{}, th, graph.WithCheckpointID(id))
		require.NoError(t, err)
		return out.Value.Get()
	}
	require.Len(t, dexHistory(t, g, "1"), 4)
	require.Equal(t, []string{"a", "x", "b"}, fork("x"))
	// Running from an update checkpoint writes no extra "fork" checkpoint:
	// the update is the branch point.
	hist := dexHistory(t, g, "1")
	require.Len(t, hist, 6)
	require.Equal(t, []string{"loop", "update"}, []string{hist[0].Metadata.Source, hist[1].Metadata.Source})
	require.Equal(t, []string{"a", "y", "b"}, fork("y"), "two forks of one checkpoint are independent")
	require.EqualValues(t, 1, aCalls.Load())
	require.EqualValues(t, 3, bCalls.Load())
	require.Equal(t, []string{"a", "b"}, dexState(t, g, "1", graph.WithCheckpointID(tip.CheckpointID)).Values.Value.Get())
	require.Equal(t, []string{"a", "y", "b"}, dexState(t, g, "1").Values.Value.Get())
}

// ---------------------------------------------------------------------------
// S54 test_copy_fork_retriggers_interrupt / test_copy_fork_creates_sibling_checkpoint.

func TestS54CopyForkRetriggersInterrupt(t *testing.T) {
	ctx := dexCtx(t)
	var aCalls, humanCalls atomic.Int64
	g := s51Graph(t, &aCalls, &humanCalls)
	th := graph.WithThread("1")

	_, err := g.Invoke(ctx, s51State{}, th)
	dexInterrupted(t, err)
	paused := dexState(t, g, "1")
	require.Equal(t, []string{"ask_human"}, paused.Next)

	copyID, err := g.UpdateState(ctx, s51State{}, graph.AsCopy, th)
	require.NoError(t, err)
	cp := dexState(t, g, "1", graph.WithCheckpointID(copyID))
	require.Equal(t, "fork", cp.Metadata.Source)
	require.Equal(t, paused.ParentID, cp.ParentID, "a copy is a sibling of the copied checkpoint")
	require.Equal(t, paused.Metadata.Step+1, cp.Metadata.Step)
	require.Equal(t, []string{"ask_human"}, cp.Next)
	require.Equal(t, []string{"a"}, cp.Values.Value.Get())
	require.Equal(t, copyID, dexState(t, g, "1").CheckpointID)

	_, err = g.Resume(ctx, graph.Command[s51State]{}, th, graph.WithCheckpointID(copyID))
	intr := dexInterrupted(t, err)
	require.Equal(t, []any{"question"}, dexInterruptValues(t, intr.Interrupts), "the copy re-triggers the interrupt")
	out, err := g.Resume(ctx, graph.Command[s51State]{Resume: "new_answer"}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "human:new_answer", "b"}, out.Value.Get())
	require.EqualValues(t, 1, aCalls.Load())

	t.Run("a normal update has source update", func(t *testing.T) {
		id, err := g.UpdateState(ctx, s51State{Value: state.Items("z")}, "node_b", th)
		require.NoError(t, err)
		snap := dexState(t, g, "1")
		require.Equal(t, id, snap.CheckpointID)
		require.Equal(t, "update", snap.Metadata.Source)
		require.Equal(t, []string{"a", "human:new_answer", "b", "z"}, snap.Values.Value.Get())
	})
}

// ---------------------------------------------------------------------------
// S55 test_fork_does_not_apply_pending_writes.

// The Python checkpoint before node_a carries node_a's writes as pending
// writes. This engine stores pending writes only for steps of several tasks,
// so the second variant adds a parallel sibling whose finished writes are
// pending on that checkpoint and must not leak into the fork either.
func TestS55ForkDoesNotApplyPendingWrites(t *testing.T) {
	type S struct {
		Value state.Sum[int]
	}
	for _, withSibling := range []bool{false, true} {
		t.Run(fmt.Sprintf("sibling=%v", withSibling), func(t *testing.T) {
			ctx := dexCtx(t)
			b := graph.New[S]().
				AddNode("node_a", func(ctx context.Context, s S) (S, error) {
					s.Value.Add(10)
					return s, nil
				}).
				AddNode("node_b", func(ctx context.Context, s S) (S, error) {
					s.Value.Add(100)
					return s, nil
				}).
				AddEdge(graph.Start, "node_a").
				AddEdge("node_a", "node_b").
				AddEdge("node_b", graph.End)
			want := 111
			if withSibling {
				b.AddNode("side", func(ctx context.Context, s S) (S, error) {
					s.Value.Add(1000)
					return s, nil
				}).AddEdge(graph.Start, "side").AddEdge("side", graph.End)
				want = 1111
			}
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			th := graph.WithThread("1")
			out, err := g.Invoke(ctx, S{Value: state.Delta(1)}, th)
			require.NoError(t, err)
			require.Equal(t, want, out.Value.Get())

			var before *graph.Snapshot[S]
			for _, s := range dexHistory(t, g, "1") {
				if len(s.Next) > 0 && s.Next[0] == "node_a" {
					before = s
				}
			}
			require.NotNil(t, before)
			id, err := g.UpdateState(ctx, S{Value: state.Delta(20)}, "node_a", th, graph.WithCheckpointID(before.CheckpointID))
			require.NoError(t, err)
			fork := dexState(t, g, "1", graph.WithCheckpointID(id))
			require.Equal(t, 21, fork.Values.Value.Get())
			require.Equal(t, []string{"node_b"}, fork.Next)
			out, err = g.Resume(ctx, graph.Command[S]{}, th, graph.WithCheckpointID(id))
			require.NoError(t, err)
			require.Equal(t, 121, out.Value.Get())
		})
	}
}

// The converse of S55: an update of the latest checkpoint (no checkpoint
// ID) first applies the successful pending writes of the interrupted step
// (Python's bulk_update_state, "apply pending writes, if not on specific
// checkpoint"), so a sibling that finished is not lost.
func TestS55UpdateOfLatestCheckpointAppliesPendingWrites(t *testing.T) {
	type S struct {
		Value state.Sum[int]
	}
	ctx := dexCtx(t)
	var sideCalls atomic.Int64
	g, err := graph.New[S]().
		AddNode("node_a", func(ctx context.Context, s S) (S, error) {
			if _, err := graph.Interrupt(ctx, "stop"); err != nil {
				return s, err
			}
			s.Value.Add(10)
			return s, nil
		}).
		AddNode("side", func(ctx context.Context, s S) (S, error) {
			sideCalls.Add(1)
			s.Value.Add(1000)
			return s, nil
		}).
		AddNode("node_b", func(ctx context.Context, s S) (S, error) {
			s.Value.Add(100)
			return s, nil
		}).
		AddEdge(graph.Start, "node_a").
		AddEdge(graph.Start, "side").
		AddEdge("node_a", "node_b").
		AddEdge("side", graph.End).
		AddEdge("node_b", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")
	_, err = g.Invoke(ctx, S{Value: state.Delta(1)}, th)
	dexInterrupted(t, err)
	require.Equal(t, 1001, dexState(t, g, "1").Values.Value.Get())

	_, err = g.UpdateState(ctx, S{Value: state.Delta(20)}, "node_a", th)
	require.NoError(t, err)
	snap := dexState(t, g, "1")
	require.Equal(t, []string{"node_b"}, snap.Next)
	require.Equal(t, 1021, snap.Values.Value.Get())
	out, err := g.Resume(ctx, graph.Command[S]{}, th)
	require.NoError(t, err)
	require.Equal(t, 1121, out.Value.Get())
	require.EqualValues(t, 1, sideCalls.Load())
}

// ---------------------------------------------------------------------------
// S56 test_bulk_state_updates.

// This engine has no bulk_update_state: each UpdateState call is one
// superstep with one node, so the two-node superstep becomes two calls (and
// two checkpoints). Ported: the values, one checkpoint per update, and the
// as_node errors (ambiguous inference, unknown node). Not portable: the
// errors about empty superstep lists and mixing __end__ with __copy__.
func TestS56StateUpdates(t *testing.T) {
	type S struct {
		Foo state.Value[string]
		Baz state.Value[string]
	}
	build := func(t *testing.T, parallel bool) *graph.Graph[S] {
		b := graph.New[S]().
			AddNode("node_a", func(ctx context.Context, s S) (S, error) {
				s.Foo.Set("bar")
				return s, nil
			}).
			AddNode("node_b", func(ctx context.Context, s S) (S, error) {
				s.Baz.Set("qux")
				return s, nil
			}).
			AddEdge(graph.Start, "node_a").
			AddEdge("node_b", graph.End)
		if parallel {
			b.AddEdge(graph.Start, "node_b").AddEdge("node_a", graph.End)
		} else {
			b.AddEdge("node_a", "node_b")
		}
		g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		return g
	}
	ctx := dexCtx(t)

	t.Run("updates", func(t *testing.T) {
		g := build(t, false)
		th := graph.WithThread("1")
		_, err := g.UpdateState(ctx, S{Foo: state.Set("bar")}, "node_a", th)
		require.NoError(t, err)
		snap := dexState(t, g, "1")
		require.Equal(t, map[string]any{"Foo": "bar"}, dexVals(t, snap.Values))
		require.Equal(t, []string{"node_b"}, snap.Next)
		require.Len(t, dexHistory(t, g, "1"), 1)

		_, err = g.UpdateState(ctx, S{Foo: state.Set("updated")}, "node_a", th)
		require.NoError(t, err)
		_, err = g.UpdateState(ctx, S{Baz: state.Set("new")}, "node_b", th)
		require.NoError(t, err)
		snap = dexState(t, g, "1")
		require.Equal(t, map[string]any{"Foo": "updated", "Baz": "new"}, dexVals(t, snap.Values))
		require.Empty(t, snap.Next)
		hist := dexHistory(t, g, "1")
		require.Len(t, hist, 3)
		for i, h := range hist {
			require.Equal(t, "update", h.Metadata.Source)
			if i > 0 {
				require.Equal(t, h.CheckpointID, hist[i-1].ParentID)
				require.Equal(t, h.Metadata.Step+1, hist[i-1].Metadata.Step)
			}
		}
	})

	t.Run("ambiguous and unknown as-node", func(t *testing.T) {
		g := build(t, true)
		th := graph.WithThread("1")
		_, err := g.Invoke(ctx, S{}, th)
		require.NoError(t, err)
		n := len(dexHistory(t, g, "1"))
		_, err = g.UpdateState(ctx, S{Foo: state.Set("x")}, "", th)
		require.Error(t, err, "node_a and node_b both ran last")
		require.Contains(t, strings.ToLower(err.Error()), "ambiguous")
		_, err = g.UpdateState(ctx, S{Foo: state.Set("x")}, "nope", th)
		require.ErrorContains(t, err, "does not exist")
		require.Len(t, dexHistory(t, g, "1"), n, "refused updates write nothing")
	})
}

// ---------------------------------------------------------------------------
// S57 test_update_as_input / test_supersteps_populate_task_results.

// Replaying a run with UpdateState (as input, as START, then as each node)
// gives a history equal, in values, next and step, to the real run's. The
// task results part of the Python test is not portable: TaskInfo carries no
// result.
func TestS57UpdateAsInput(t *testing.T) {
	type S struct {
		Foo state.Value[string]
	}
	build := func(t *testing.T) *graph.Graph[S] {
		g, err := graph.New[S]().
			AddNode("agent", func(ctx context.Context, s S) (S, error) {
				s.Foo.Set("agent")
				return s, nil
			}).
			AddNode("tool", func(ctx context.Context, s S) (S, error) {
				s.Foo.Set("tool")
				return s, nil
			}).
			AddEdge(graph.Start, "agent").
			AddEdge("agent", "tool").
			AddEdge("tool", graph.End).
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		return g
	}
	ctx := dexCtx(t)
	real := build(t)
	for range 2 {
		_, err := real.Invoke(ctx, S{Foo: state.Set("input")}, graph.WithThread("1"))
		require.NoError(t, err)
	}
	replay := build(t)
	th := graph.WithThread("2")
	for range 2 {
		for _, u := range []struct {
			asNode, foo string
		}{{graph.AsInput, "input"}, {graph.Start, "input"}, {"agent", "agent"}, {"tool", "tool"}} {
			_, err := replay.UpdateState(ctx, S{Foo: state.Set(u.foo)}, u.asNode, th)
			require.NoError(t, err, "as %s", u.asNode)
		}
	}
	type row struct {
		Values string
		Next   []string
		Step   int
	}
	rows := func(h []*graph.Snapshot[S]) []row {
		var out []row
		for _, s := range h {
			out = append(out, row{dexJSON(t, s.Values), dexNext(s.Next), s.Metadata.Step})
		}
		return out
	}
	realHist, replayHist := dexHistory(t, real, "1"), dexHistory(t, replay, "2")
	require.Len(t, realHist, 8)
	require.Empty(t, cmp.Diff(rows(realHist), rows(replayHist)))
	require.Equal(t, "input", replayHist[3].Metadata.Source)
	require.Equal(t, "input", replayHist[7].Metadata.Source)
}

// ---------------------------------------------------------------------------
// S58 test_fork_and_update_task_results.

type dexArrow struct{}

func (dexArrow) Reduce(old, update string) string {
	if old == "" {
		return update
	}
	return old + " > " + update
}

// Python copies the input checkpoint and applies a START update in the same
// call (update_state(…, [StateUpdate(…, "__start__")], as_node="__copy__"));
// here AsCopy then an UpdateState as Start on the copy.
func TestS58ForkAndUpdateTaskResults(t *testing.T) {
	type S struct {
		Name state.Reduced[string, dexArrow]
	}
	named := func(name string) S {
		var s S
		s.Name.Update(name)
		return s
	}
	ctx := dexCtx(t)
	var twoCalls atomic.Int64
	g, err := graph.New[S]().
		AddCommandNode("one", func(ctx context.Context, s S) (graph.Command[S], error) {
			return graph.Command[S]{Update: named("one"), Sends: []graph.Send[S]{{Node: "two"}}}, nil
		}).
		AddNode("two", func(ctx context.Context, s S) (S, error) {
			twoCalls.Add(1)
			return named("two"), nil
		}).
		AddNode("three", func(ctx context.Context, s S) (S, error) {
			return named("three"), nil
		}).
		AddEdge(graph.Start, "one").
		AddEdge("one", "two").
		AddEdge("two", "three").
		AddEdge("three", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")

	out, err := g.Invoke(ctx, named("start"), th)
	require.NoError(t, err)
	require.Equal(t, "start > one > two > two > three", out.Name.Get())
	require.EqualValues(t, 2, twoCalls.Load(), "a PULL and a PUSH task of two in one step")
	hist := dexHistory(t, g, "1")
	var names []string
	for _, h := range hist {
		names = append(names, h.Values.Name.Get())
	}
	require.Equal(t, []string{"start > one > two > two > three", "start > one > two > two", "start > one", "start", ""}, names)
	require.Equal(t, []string{graph.Start}, hist[4].Next)

	copyID, err := g.UpdateState(ctx, S{}, graph.AsCopy, th, graph.WithCheckpointID(hist[4].CheckpointID))
	require.NoError(t, err)
	_, err = g.UpdateState(ctx, named("start*"), graph.Start, th, graph.WithCheckpointID(copyID))
	require.NoError(t, err)
	out, err = g.Resume(ctx, graph.Command[S]{}, th)
	require.NoError(t, err)
	require.Equal(t, "start* > one > two > two > three", out.Name.Get())

	after := dexHistory(t, g, "1")
	require.Len(t, after, len(hist)+5, "copy, update, and three loop checkpoints")
	require.Empty(t, cmp.Diff(dexView(t, hist), dexView(t, after[5:])), "the original branch is unchanged")
	cp := dexState(t, g, "1", graph.WithCheckpointID(copyID))
	require.Equal(t, "fork", cp.Metadata.Source)
	require.Equal(t, hist[4].ParentID, cp.ParentID)
}

// ---------------------------------------------------------------------------
// S59 test_send_dedupe_on_resume.

// Python's root list state and Command-valued Send arguments become fields:
// a Send to node 2 carries Target/Arg; node 2 then returns a Command whose
// Send goes to Target with Arg. flaky interrupts on its first call only (a
// NodeInterrupt: continuing without a resume value succeeds).
type s59State struct {
	L      state.Append[string]
	Target state.Value[string]
	Arg    state.Value[int]
}

func TestS59SendDedupeOnResume(t *testing.T) {
	for _, d := range dexDurabilities {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			var calls sync.Map
			count := func(n string) int64 {
				v, _ := calls.LoadOrStore(n, new(atomic.Int64))
				return v.(*atomic.Int64).Load()
			}
			inc := func(n string) {
				v, _ := calls.LoadOrStore(n, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			pull := func(name string) graph.NodeFunc[s59State] {
				return func(ctx context.Context, s s59State) (s59State, error) {
					inc(name)
					return s59State{L: state.Items(name)}, nil
				}
			}
			var flakyTicks atomic.Int64
			g, err := graph.New[s59State]().
				AddNode("1", pull("1")).
				AddCommandNode("2", func(ctx context.Context, s s59State) (graph.Command[s59State], error) {
					inc("2")
					if target := s.Target.Get(); target != "" {
						return graph.Command[s59State]{
							Update: s59State{L: state.Items(fmt.Sprintf("2|Command(goto=Send(node='%s', arg=%d))", target, s.Arg.Get()))},
							Sends:  []graph.Send[s59State]{{Node: target, Arg: s59State{Arg: state.Set(s.Arg.Get())}}},
						}, nil
					}
					return graph.Command[s59State]{Update: s59State{L: state.Items(fmt.Sprintf("2|%d", s.Arg.Get()))}}, nil
				}).
				AddNode("3", pull("3")).
				AddNode("3.1", pull("3.1")).
				AddNode("flaky", func(ctx context.Context, s s59State) (s59State, error) {
					inc("flaky")
					if flakyTicks.Add(1) == 1 {
						_, err := graph.Interrupt(ctx, "Bahh")
						return s, err
					}
					return s59State{L: state.Items(fmt.Sprintf("flaky|%d", s.Arg.Get()))}, nil
				}).
				AddEdge(graph.Start, "1").
				AddBranch("1", func(ctx context.Context, s s59State) (graph.Route[s59State], error) {
					return graph.Route[s59State]{Nodes: []string{"3.1"}, Sends: []graph.Send[s59State]{
						{Node: "2", Arg: s59State{Target: state.Set("2"), Arg: state.Set(3)}},
						{Node: "2", Arg: s59State{Target: state.Set("flaky"), Arg: state.Set(4)}},
					}}, nil
				}).
				AddConditionalEdges("2", func(ctx context.Context, s s59State) (string, error) { return "3", nil }, graph.WithDestinations("3")).
				AddEdge("3", graph.End).
				AddEdge("3.1", graph.End).
				AddEdge("flaky", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			th := graph.WithThread("1")
			dur := graph.WithDurability(d.d)
			exit := d.d == graph.DurabilityExit

			_, err = g.Invoke(ctx, s59State{L: state.Items("0")}, th, dur)
			intr := dexInterrupted(t, err)
			require.Equal(t, []any{"Bahh"}, dexInterruptValues(t, intr.Interrupts))
			require.EqualValues(t, 3, count("2"))
			snap := dexState(t, g, "1")
			require.Equal(t, []string{"flaky"}, snap.Next)
			wantHist := 4
			if exit {
				wantHist = 1
			}
			require.Len(t, dexHistory(t, g, "1"), wantHist)

			out, err := g.Resume(ctx, graph.Command[s59State]{}, th, dur)
			require.NoError(t, err)
			require.Equal(t, []string{
				"0", "1", "3.1",
				"2|Command(goto=Send(node='2', arg=3))",
				"2|Command(goto=Send(node='flaky', arg=4))",
				"3", "2|3", "flaky|4", "3",
			}, out.L.Get())
			require.EqualValues(t, 3, count("2"), "node 2 is not re-run")
			require.EqualValues(t, 2, count("flaky"))
			hist := dexHistory(t, g, "1")
			wantHist = 6
			if exit {
				wantHist = 2
			}
			require.Len(t, hist, wantHist)
			require.Equal(t, 4, hist[0].Metadata.Step)
		})
	}
}

// ---------------------------------------------------------------------------
// S60 test_checkpoint_metadata.

// Python copies scalar entries of the run's configurable into every
// checkpoint's metadata; here they are given with graph.WithMetadata.
func TestS60CheckpointMetadata(t *testing.T) {
	type S struct {
		Messages state.Append[string]
	}
	ctx := dexCtx(t)
	g, err := graph.New[S]().
		AddNode("agent", func(ctx context.Context, s S) (S, error) {
			s.Messages.Append("agent")
			return s, nil
		}).
		AddNode("tools", func(ctx context.Context, s S) (S, error) {
			s.Messages.Append("tools")
			return s, nil
		}).
		AddEdge(graph.Start, "agent").
		AddEdge("agent", "tools").
		AddEdge("tools", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("tools"))
	require.NoError(t, err)
	th := graph.WithThread("1")
	md := graph.WithMetadata(map[string]any{"test_config_1": "foo", "test_config_2": "bar"})

	_, err = g.Invoke(ctx, S{Messages: state.Items("hi")}, th, md)
	require.Equal(t, []string{"tools"}, dexInterrupted(t, err).Before)
	out, err := g.Resume(ctx, graph.Command[S]{}, th, md)
	require.NoError(t, err)
	require.Equal(t, []string{"hi", "agent", "tools"}, out.Messages.Get())

	hist := dexHistory(t, g, "1")
	require.Len(t, hist, 4)
	for _, h := range hist {
		require.Equal(t, "foo", h.Metadata.Extra["test_config_1"], "checkpoint %s (%s)", h.CheckpointID, h.Metadata.Source)
		require.Equal(t, "bar", h.Metadata.Extra["test_config_2"])
	}
	require.Len(t, dexHistory(t, g, "1", graph.WithFilter(map[string]any{"test_config_1": "foo"})), 4)
	require.Empty(t, dexHistory(t, g, "1", graph.WithFilter(map[string]any{"test_config_1": "bar"})))
	require.Len(t, dexHistory(t, g, "1", graph.WithFilter(map[string]any{"source": "loop", "test_config_2": "bar"})), 3)
}
