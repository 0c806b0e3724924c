package graph_test

// Tests of the three durability modes and of saver errors:
//
//   - DurabilitySync writes each step's checkpoint before the next step
//     starts;
//   - DurabilityAsync writes the same checkpoints, in the same order, while
//     the run goes on (a saver held back by a channel shows the overlap),
//     and returns only when they are written;
//   - DurabilityExit writes once, when the run ends, pauses or fails;
//   - a saver whose Get, Put or PutWrites fails makes the run fail with that
//     error, in every mode (LangGraph's test_checkpoint_errors, S49).

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

var durModes = []struct {
	name string
	d    graph.Durability
}{
	{"sync", graph.DurabilitySync},
	{"async", graph.DurabilityAsync},
	{"exit", graph.DurabilityExit},
}

// durState is the state of the test graphs: tick appends the step it runs
// in to Ticks, the parallel nodes append "node@step" to Fan.
type durState struct {
	Ticks state.Append[int]
	Fan   state.Append[string]
}

// durEvents is the ordered log of what the nodes and the saver did.
type durEvents struct {
	mu    sync.Mutex
	evs   []string
	watch map[string]chan struct{}
}

func (e *durEvents) add(format string, args ...any) {
	ev := fmt.Sprintf(format, args...)
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	if c := e.watch[ev]; c != nil {
		close(c)
		delete(e.watch, ev)
	}
	e.mu.Unlock()
}

// when returns a channel closed once ev is logged.
func (e *durEvents) when(ev string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := make(chan struct{})
	if slices.Contains(e.evs, ev) {
		close(c)
		return c
	}
	if e.watch == nil {
		e.watch = map[string]chan struct{}{}
	}
	e.watch[ev] = c
	return c
}

func (e *durEvents) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.evs)
}

// durLoop builds Start → tick → tick → [a b] → tick → tick → End: five
// steps after the input step, the third of them with two parallel nodes.
// Every node execution is logged as "run <step> <node>".
func durLoop(t *testing.T, saver checkpoint.Saver, ev *durEvents) *graph.Graph[durState] {
	t.Helper()
	b := graph.New[durState]()
	b.AddNode("tick", func(ctx context.Context, _ durState) (durState, error) {
		ev.add("run %d tick", graph.Step(ctx))
		return durState{Ticks: state.Items(graph.Step(ctx))}, nil
	})
	for _, n := range []string{"a", "b"} {
		b.AddNode(n, func(ctx context.Context, _ durState) (durState, error) {
			ev.add("run %d %s", graph.Step(ctx), n)
			return durState{Fan: state.Items(fmt.Sprintf("%s@%d", n, graph.Step(ctx)))}, nil
		})
		b.AddEdge(n, "tick")
	}
	b.AddEdge(graph.Start, "tick")
	b.AddBranch("tick", func(_ context.Context, s durState) (graph.Route[durState], error) {
		switch n := s.Ticks.Len(); {
		case n == 2:
			return graph.To[durState]("a", "b"), nil
		case n < 4:
			return graph.To[durState]("tick"), nil
		}
		return graph.To[durState](graph.End), nil
	}, graph.WithDestinations("tick", "a", "b", graph.End))
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// durFinal is the final state of durLoop.
var durFinal = durView{Ticks: []int{1, 2, 4, 5}, Fan: []string{"a@3", "b@3"}}

type durView struct {
	Ticks []int
	Fan   []string
}

func viewOf(s durState) durView { return durView{Ticks: s.Ticks.Get(), Fan: s.Fan.Get()} }

// savedCP is what a checkpoint says, without the IDs and versions that
// differ between runs.
type savedCP struct {
	Step     int
	Source   string
	Values   map[string]string
	Frontier string
}

func savedOf(cp *checkpoint.Checkpoint) savedCP {
	s := savedCP{Step: cp.Metadata.Step, Source: cp.Metadata.Source, Values: map[string]string{}, Frontier: string(cp.Frontier)}
	for _, ch := range cp.Channels {
		if ch.Value != nil {
			s.Values[ch.Name] = string(ch.Value)
		}
	}
	return s
}

// durValues maps a tuple's channels to their JSON values.
func durValues(t *checkpoint.Tuple) map[string]string {
	out := map[string]string{}
	for _, ch := range t.Channels {
		out[ch.Name] = string(ch.Value)
	}
	return out
}

// recSaver wraps a saver: it logs "put <step>" and "writes <step> <node>"
// (the step the task ran in) to ev when a call succeeds, keeps what was
// put, and makes every call wait on gate while gate is open.
type recSaver struct {
	checkpoint.Saver
	ev   *durEvents
	gate chan struct{} // nil: no waiting; closed: go on

	mu    sync.Mutex
	steps map[string]int // checkpoint ID → step
	puts  []savedCP
	ids   []string // IDs in Put order
	chain []string // ParentIDs in Put order
}

func newRecSaver(ev *durEvents) *recSaver {
	return &recSaver{Saver: checkpoint.NewMemory(), ev: ev, steps: map[string]int{}}
}

func (r *recSaver) wait(ctx context.Context) error {
	if r.gate == nil {
		return nil
	}
	select {
	case <-r.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *recSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if err := r.wait(ctx); err != nil {
		return err
	}
	// Put takes ownership of cp: record what is needed first (savedOf
	// copies).
	saved := savedOf(cp)
	id, parent := cp.ID, cp.ParentID
	if err := r.Saver.Put(ctx, cp); err != nil {
		return err
	}
	r.mu.Lock()
	r.steps[id] = saved.Step
	r.puts = append(r.puts, saved)
	r.ids = append(r.ids, id)
	r.chain = append(r.chain, parent)
	r.mu.Unlock()
	r.ev.add("put %d", saved.Step)
	return nil
}

func (r *recSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, ws []checkpoint.Write) error {
	if err := r.wait(ctx); err != nil {
		return err
	}
	if err := r.Saver.PutWrites(ctx, ref, ws); err != nil {
		return err
	}
	r.mu.Lock()
	step, ok := r.steps[ref.ID]
	r.mu.Unlock()
	node := "?"
	if len(ws) > 0 {
		node = ws[0].TaskPath
	}
	if !ok {
		r.ev.add("writes against unknown checkpoint %s %s", ref.ID, node)
		return nil
	}
	r.ev.add("writes %d %s", step+1, node)
	return nil
}

// requireChain checks that every checkpoint put names the one put before
// it as its parent.
func (r *recSaver) requireChain(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.ids {
		want := ""
		if i > 0 {
			want = r.ids[i-1]
		}
		require.Equal(t, want, r.chain[i], "parent of checkpoint %d (step %d)", i, r.puts[i].Step)
	}
}

// segments splits events at each "put": segment k holds what happened
// after the k-th put and before the next, sorted (parallel nodes finish in
// any order).
func segments(evs []string) [][]string {
	segs := [][]string{{}}
	for _, e := range evs {
		if strings.HasPrefix(e, "put ") {
			segs = append(segs, []string{})
			continue
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], e)
	}
	for _, s := range segs {
		slices.Sort(s)
	}
	return segs
}

func only(evs []string, prefix string) []string {
	var out []string
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// syncRun runs durLoop with DurabilitySync and returns its saver.
func syncRun(t *testing.T) *recSaver {
	t.Helper()
	ev := &durEvents{}
	rs := newRecSaver(ev)
	out, err := durLoop(t, rs, ev).Invoke(t.Context(), durState{}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(durFinal, viewOf(out)))
	return rs
}

func TestDurabilitySyncSavesEachStepBeforeTheNextStarts(t *testing.T) {
	ev := &durEvents{}
	rs := newRecSaver(ev)
	out, err := durLoop(t, rs, ev).Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilitySync))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(durFinal, viewOf(out)))

	evs := ev.list()
	require.Empty(t, cmp.Diff([]string{"put -1", "put 0", "put 1", "put 2", "put 3", "put 4", "put 5"}, only(evs, "put ")), "one checkpoint per step, in order")
	// Between the checkpoint of step k-1 and that of step k, exactly the
	// nodes of step k run (and their pending writes are saved): no node
	// starts before the previous step's checkpoint is written.
	want := [][]string{
		{},             // before the input checkpoint
		{},             // step 0 applies the input: no node
		{"run 1 tick"}, // …
		{"run 2 tick"},
		{"run 3 a", "run 3 b", "writes 3 a", "writes 3 b"},
		{"run 4 tick"},
		{"run 5 tick"},
		{}, // after the last checkpoint
	}
	require.Empty(t, cmp.Diff(want, segments(evs)))
	// A parallel task's writes are saved after it ran.
	require.Less(t, slices.Index(evs, "run 3 a"), slices.Index(evs, "writes 3 a"))
	require.Less(t, slices.Index(evs, "run 3 b"), slices.Index(evs, "writes 3 b"))
	rs.requireChain(t)
}

func TestDurabilityAsyncSavesTheSameCheckpointsInOrder(t *testing.T) {
	ref := syncRun(t)

	ev := &durEvents{}
	rs := newRecSaver(ev)
	rs.gate = make(chan struct{})
	g := durLoop(t, rs, ev)
	type result struct {
		out durState
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
		done <- result{out, err}
	}()
	// Every saver call waits on the gate, yet the run reaches its last
	// node: checkpoints are written in the background. The run does not
	// return while they are held back.
	select {
	case <-ev.when("run 5 tick"):
	case r := <-done:
		t.Fatalf("the run returned (err %v) before its last node ran", r.err)
	}
	select {
	case r := <-done:
		t.Fatalf("the run returned (err %v) while its checkpoints were held back", r.err)
	default:
	}
	require.Empty(t, only(ev.list(), "put "), "nothing was written while the gate was closed")
	require.Empty(t, only(ev.list(), "writes "))
	close(rs.gate)
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, cmp.Diff(durFinal, viewOf(r.out)))

	// Same checkpoints as the sync run, in the same order, and the
	// parallel step's pending writes between the checkpoint they follow
	// and the next.
	require.Empty(t, cmp.Diff(ref.puts, rs.puts))
	rs.requireChain(t)
	evs := ev.list()
	saverOps := slices.DeleteFunc(slices.Clone(evs), func(e string) bool { return strings.HasPrefix(e, "run ") })
	want := [][]string{{}, {}, {}, {}, {"writes 3 a", "writes 3 b"}, {}, {}, {}}
	require.Empty(t, cmp.Diff(want, segments(saverOps)))
	require.Len(t, only(evs, "put "), 7)
}

func TestDurabilityExitWritesOnlyAtTheEnd(t *testing.T) {
	ref := syncRun(t)
	refTuple, err := ref.Saver.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)

	ev := &durEvents{}
	rs := newRecSaver(ev)
	out, err := durLoop(t, rs, ev).Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityExit))
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(durFinal, viewOf(out)))

	evs := ev.list()
	require.Len(t, only(evs, "put "), 1, "one checkpoint")
	require.Empty(t, only(evs, "writes "), "no pending writes once the run ended")
	require.True(t, strings.HasPrefix(evs[len(evs)-1], "put "), "written after every node ran: %v", evs)
	got, err := rs.Saver.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.NoError(t, err)
	require.Empty(t, got.ParentID)
	// It holds the sync run's final state and frontier (Get returns every
	// value, not only the changed ones).
	require.Empty(t, cmp.Diff(durValues(refTuple), durValues(got)))
	require.Equal(t, string(refTuple.Frontier), string(got.Frontier))
	require.Equal(t, refTuple.Metadata.Source, got.Metadata.Source)
	require.Equal(t, refTuple.Metadata.Step, got.Metadata.Step)
}

// durFailing builds Start → s → [a b] → End where b fails while *fail is
// set, once event aDone is logged (a's result is kept), and a counts its
// executions.
func durFailing(t *testing.T, saver checkpoint.Saver, ev *durEvents, fail *atomic.Bool, aRuns *atomic.Int32, aDone string) *graph.Graph[durState] {
	t.Helper()
	b := graph.New[durState]()
	b.AddNode("s", func(ctx context.Context, _ durState) (durState, error) {
		ev.add("run %d s", graph.Step(ctx))
		return durState{Ticks: state.Items(graph.Step(ctx))}, nil
	})
	b.AddNode("a", func(ctx context.Context, _ durState) (durState, error) {
		ev.add("run %d a", graph.Step(ctx))
		aRuns.Add(1)
		return durState{Fan: state.Items(fmt.Sprintf("a@%d", graph.Step(ctx)))}, nil
	})
	b.AddNode("b", func(ctx context.Context, _ durState) (durState, error) {
		ev.add("run %d b", graph.Step(ctx))
		if fail.Load() {
			select {
			case <-ev.when(aDone):
			case <-ctx.Done():
				return durState{}, ctx.Err()
			}
			return durState{}, errDurNode
		}
		return durState{Fan: state.Items(fmt.Sprintf("b@%d", graph.Step(ctx)))}, nil
	})
	b.AddEdge(graph.Start, "s")
	b.AddEdge("s", "a")
	b.AddEdge("s", "b")
	b.AddEdge("a", graph.End)
	b.AddEdge("b", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

var errDurNode = errors.New("node b failed")

// TestDurabilityOnFailure fails a step after a parallel sibling finished:
// DurabilityExit then writes its one checkpoint (the state before the
// failed step) with the sibling's writes, like the other modes, and Resume
// does not run the sibling again.
func TestDurabilityOnFailure(t *testing.T) {
	want := durView{Ticks: []int{1}, Fan: []string{"a@2", "b@2"}}
	for _, m := range durModes {
		t.Run(m.name, func(t *testing.T) {
			ev := &durEvents{}
			rs := newRecSaver(ev)
			var fail atomic.Bool
			var aRuns atomic.Int32
			fail.Store(true)
			// b fails once a's result is kept: saved as pending writes
			// (sync, async), or returned (exit: kept in memory until the
			// run ends, whatever happens to its siblings).
			aDone := "writes 2 a"
			if m.d == graph.DurabilityExit {
				aDone = "run 2 a"
			}
			g := durFailing(t, rs, ev, &fail, &aRuns, aDone)
			_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(m.d))
			require.ErrorIs(t, err, errDurNode)
			evs := ev.list()
			if m.d == graph.DurabilityExit {
				// One checkpoint (the state before the failed step), the
				// finished sibling's writes and the failed task's error,
				// after every node ran.
				puts, writes := only(evs, "put "), only(evs, "writes ")
				require.Equal(t, []string{"put 1"}, puts, "events %v", evs)
				slices.Sort(writes)
				require.Equal(t, []string{"writes 2 a", "writes 2 b"}, writes, "events %v", evs)
				require.Greater(t, slices.Index(evs, puts[0]), slices.Index(evs, "run 2 b"))
			} else {
				require.Empty(t, cmp.Diff([]string{"put -1", "put 0", "put 1"}, only(evs, "put ")))
			}
			snap, err := g.GetState(t.Context(), graph.WithThread("t"))
			require.NoError(t, err)
			require.Equal(t, 1, snap.Metadata.Step)
			require.Equal(t, []string{"b"}, snap.Next, "a finished: only b is left")
			for _, task := range snap.Tasks {
				if task.Name == "b" {
					require.Contains(t, task.Error, errDurNode.Error())
				}
			}
			fail.Store(false)
			out, err := g.Resume(t.Context(), graph.Command[durState]{}, graph.WithThread("t"), graph.WithDurability(m.d))
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(want, viewOf(out)))
			require.EqualValues(t, 1, aRuns.Load(), "a's saved result is not re-executed")
		})
	}
}

// durPausing builds Start → s → [a b] → End where b asks for input; every
// node appends to Fan.
func durPausing(t *testing.T, saver checkpoint.Saver) *graph.Graph[durState] {
	t.Helper()
	b := graph.New[durState]()
	for _, n := range []string{"s", "a"} {
		b.AddNode(n, func(ctx context.Context, _ durState) (durState, error) {
			return durState{Fan: state.Items(fmt.Sprintf("%s@%d", n, graph.Step(ctx)))}, nil
		})
	}
	b.AddNode("b", func(ctx context.Context, _ durState) (durState, error) {
		v, err := graph.InterruptAs[string](ctx, "answer?")
		if err != nil {
			return durState{}, err
		}
		return durState{Fan: state.Items("b=" + v)}, nil
	})
	b.AddEdge(graph.Start, "s")
	b.AddEdge("s", "a")
	b.AddEdge("s", "b")
	b.AddEdge("a", graph.End)
	b.AddEdge("b", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// TestDurabilityOnPause pauses a step after a parallel sibling finished:
// every mode stores the state before the step with the sibling's result as
// pending writes (not merged into the values, or Resume would apply it
// twice), and Resume reaches the uninterrupted result.
func TestDurabilityOnPause(t *testing.T) {
	want := durView{Fan: []string{"s@1", "a@2", "b=yes"}}
	for _, m := range durModes {
		t.Run(m.name, func(t *testing.T) {
			ev := &durEvents{}
			rs := newRecSaver(ev)
			g := durPausing(t, rs)
			out, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(m.d))
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			// The caller sees the finished sibling's writes.
			require.Empty(t, cmp.Diff(durView{Fan: []string{"s@1", "a@2"}}, viewOf(out)))
			puts := only(ev.list(), "put ")
			if m.d == graph.DurabilityExit {
				require.Len(t, puts, 1)
				require.Len(t, only(ev.list(), "writes "), 2, "a's writes and b's interrupt")
			} else {
				require.Empty(t, cmp.Diff([]string{"put -1", "put 0", "put 1"}, puts))
			}
			// The checkpoint is the state before the paused step: a's
			// result is a pending write, not part of the values.
			tup, err := rs.Saver.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
			require.NoError(t, err)
			require.JSONEq(t, `["s@1"]`, string(tup.Value("Fan")))
			require.Equal(t, 1, tup.Metadata.Step)
			snap, err := g.GetState(t.Context(), graph.WithThread("t"))
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, snap.Next)
			require.Empty(t, cmp.Diff(durView{Fan: []string{"s@1", "a@2"}}, viewOf(snap.Values)))
			out, err = g.Resume(t.Context(), graph.Command[durState]{Resume: "yes"}, graph.WithThread("t"), graph.WithDurability(m.d))
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(want, viewOf(out)))
		})
	}
}

var errSaver = errors.New("saver unavailable")

// faultySaver fails the n-th call (counting from 1) of one method, and
// every later call of it.
type faultySaver struct {
	checkpoint.Saver
	method string // "Get", "Put" or "PutWrites"
	n      int64
	calls  atomic.Int64
}

func (f *faultySaver) fail(method string) error {
	if method == f.method && f.calls.Add(1) >= f.n {
		return fmt.Errorf("%s: %w", method, errSaver)
	}
	return nil
}

func (f *faultySaver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := f.fail("Get"); err != nil {
		return nil, err
	}
	return f.Saver.Get(ctx, ref)
}

func (f *faultySaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if err := f.fail("Put"); err != nil {
		return err
	}
	return f.Saver.Put(ctx, cp)
}

func (f *faultySaver) PutWrites(ctx context.Context, ref checkpoint.Ref, ws []checkpoint.Write) error {
	if err := f.fail("PutWrites"); err != nil {
		return err
	}
	return f.Saver.PutWrites(ctx, ref, ws)
}

// TestSaverErrorsSurface is LangGraph's test_checkpoint_errors (S49): a
// saver whose Get, Put or PutWrites fails makes the run fail with that
// error, whatever the durability, whether the first call fails or a later
// one.
func TestSaverErrorsSurface(t *testing.T) {
	cases := []struct {
		method string
		n      int64
		modes  []graph.Durability
	}{
		{"Get", 1, []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}},
		{"Put", 1, []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}},
		{"Put", 4, []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync}}, // a later step; exit puts once
		// PutWrites is called for the parallel step; under
		// DurabilityExit a run that ends writes no pending writes (see
		// TestSaverErrorsSurfaceWhenTheRunPauses).
		{"PutWrites", 1, []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync}},
		{"PutWrites", 2, []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync}},
	}
	for _, c := range cases {
		for _, d := range c.modes {
			t.Run(fmt.Sprintf("%s#%d/%s", c.method, c.n, durModes[d].name), func(t *testing.T) {
				fs := &faultySaver{Saver: checkpoint.NewMemory(), method: c.method, n: c.n}
				g := durLoop(t, fs, &durEvents{})
				_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(d))
				require.ErrorIs(t, err, errSaver)
				require.ErrorContains(t, err, c.method)
				se, ok := errors.AsType[*graph.SaverError](err)
				require.True(t, ok, "a saver's fault is a *graph.SaverError: %v", err)
				require.Equal(t, saverOps[c.method], se.Op)
				require.Equal(t, "t", se.Thread)
			})
		}
	}
}

// saverOps is what a run was doing when each saver method failed.
var saverOps = map[string]string{"Get": "loading checkpoint", "Put": "saving checkpoint", "PutWrites": "saving pending writes"}

// TestASaverFaultInASubgraphIsASaverErrorInTheNodeError: the saver the
// subgraph shares with its parent fails while the subgraph saves, and the
// parent's run fails with the subgraph's node error wrapping a
// *graph.SaverError, so that a caller (a server retrying database faults)
// tells it from an error of the node's own.
func TestASaverFaultInASubgraphIsASaverErrorInTheNodeError(t *testing.T) {
	type S struct{ N state.Value[int] }
	inc := func(_ context.Context, s S) (S, error) { return S{N: state.Set(s.N.Get() + 1)}, nil }
	child, err := graph.New[S]().AddNode("work", inc).
		AddEdge(graph.Start, "work").AddEdge("work", graph.End).Compile()
	require.NoError(t, err)
	fs := &faultySaver{Saver: checkpoint.NewMemory(), method: "Put", n: 4}
	g, err := graph.New[S]().AddNode("first", inc).
		AddCommandNode("inner", graph.Subgraph[S, S](child, nil, nil)).
		AddEdge(graph.Start, "first").AddEdge("first", "inner").AddEdge("inner", graph.End).
		Compile(graph.WithCheckpointer(fs))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), S{}, graph.WithThread("t"))
	require.ErrorIs(t, err, errSaver)
	ne, ok := errors.AsType[*graph.NodeError](err)
	require.True(t, ok, "the subgraph's fault fails its node: %v", err)
	require.Equal(t, "inner", ne.Node)
	se, ok := errors.AsType[*graph.SaverError](ne.Err)
	require.True(t, ok, "inside the node error, the subgraph's saver error: %v", err)
	require.Equal(t, "saving checkpoint", se.Op)
}

// TestSaverErrorsSurfaceWhenTheRunPauses checks that a paused run whose
// checkpoint could not be written does not report a mere pause: the caller
// would answer the interrupt and find nothing to resume.
func TestSaverErrorsSurfaceWhenTheRunPauses(t *testing.T) {
	for _, method := range []string{"Put", "PutWrites"} {
		for _, m := range durModes {
			t.Run(method+"/"+m.name, func(t *testing.T) {
				// Put fails at the checkpoint after step s (the last
				// one before the pause): the 3rd Put in sync and async
				// mode, the only one in exit mode.
				n := int64(3)
				if method == "PutWrites" || m.d == graph.DurabilityExit {
					n = 1
				}
				fs := &faultySaver{Saver: checkpoint.NewMemory(), method: method, n: n}
				g := durPausing(t, fs)
				_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(m.d))
				require.ErrorIs(t, err, errSaver)
				var intr *graph.Interrupted
				require.False(t, errors.As(err, &intr), "a pause that was not saved is reported as a pause: %v", err)
			})
		}
	}
}

// TestDurabilityAsyncSaverErrorSurfacesAtTheEnd documents that an async
// run goes on after its saver failed (its nodes keep running though nothing
// more is saved) and reports the error when it returns.
func TestDurabilityAsyncSaverErrorSurfacesAtTheEnd(t *testing.T) {
	fs := &faultySaver{Saver: checkpoint.NewMemory(), method: "Put", n: 1}
	ev := &durEvents{}
	g := durLoop(t, fs, ev)
	_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
	require.ErrorIs(t, err, errSaver)
	// Nothing after the failed Put was saved.
	_, err = fs.Saver.Get(t.Context(), checkpoint.Ref{ThreadID: "t"})
	require.ErrorIs(t, err, checkpoint.ErrNotFound)
	t.Logf("node executions after the first checkpoint failed: %d", len(only(ev.list(), "run ")))
}

// batchRecSaver is a recSaver that is a [checkpoint.Batcher]: it records
// the size of every batch and makes its ops one by one (failing a batch
// with err when set), and counts the Put and PutWrites calls made outside
// batches.
type batchRecSaver struct {
	*recSaver
	err    error
	sizes  []int // guarded by recSaver.mu
	single int   // guarded by recSaver.mu
}

func (b *batchRecSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	b.mu.Lock()
	b.single++
	b.mu.Unlock()
	return b.recSaver.Put(ctx, cp)
}

func (b *batchRecSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, ws []checkpoint.Write) error {
	b.mu.Lock()
	b.single++
	b.mu.Unlock()
	return b.recSaver.PutWrites(ctx, ref, ws)
}

func (b *batchRecSaver) PutBatch(ctx context.Context, ops []checkpoint.Op) error {
	if err := b.wait(ctx); err != nil {
		return err
	}
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ops))
	b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	for _, op := range ops {
		var err error
		if op.Checkpoint != nil {
			err = b.recSaver.Put(ctx, op.Checkpoint)
		} else {
			err = b.recSaver.PutWrites(ctx, op.Ref, op.Writes)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func TestDurabilityAsyncHandsABatcherWhatQueuedUpAsOneBatch(t *testing.T) {
	ref := syncRun(t)

	ev := &durEvents{}
	rs := &batchRecSaver{recSaver: newRecSaver(ev)}
	rs.gate = make(chan struct{})
	g := durLoop(t, rs, ev)
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
		done <- err
	}()
	// The first checkpoint's Put waits on the gate while the run makes
	// the others: they queue up behind it.
	<-ev.when("run 5 tick")
	close(rs.gate)
	require.NoError(t, <-done)

	// The same checkpoints as a sync run, in order, with the parallel
	// step's pending writes; all but the first came as batches.
	require.Empty(t, cmp.Diff(ref.puts, rs.puts))
	rs.requireChain(t)
	require.Len(t, only(ev.list(), "writes "), 2)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.NotEmpty(t, rs.sizes, "no batch was made")
	for _, n := range rs.sizes {
		require.Greater(t, n, 1, "a batch of one op: Put or PutWrites is for that")
	}
	// Nine ops (seven checkpoints, two pending writes) in at most three
	// calls: what the saving goroutine took before the gate (it waits
	// there), everything queued behind it while the run went on to its
	// last node, and the last checkpoint.
	ops := rs.single
	for _, n := range rs.sizes {
		ops += n
	}
	require.Equal(t, len(ref.puts)+2, ops)
	require.LessOrEqual(t, rs.single+len(rs.sizes), 3, "%d single calls, batches of %v", rs.single, rs.sizes)
}

func TestDurabilityAsyncBatchErrorSurfaces(t *testing.T) {
	rs := &batchRecSaver{recSaver: newRecSaver(&durEvents{}), err: errSaver}
	rs.gate = make(chan struct{})
	ev := rs.ev
	g := durLoop(t, rs, ev)
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(t.Context(), durState{}, graph.WithThread("t"), graph.WithDurability(graph.DurabilityAsync))
		done <- err
	}()
	<-ev.when("run 5 tick")
	close(rs.gate)
	require.ErrorIs(t, <-done, errSaver)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	require.NotEmpty(t, rs.sizes)
	require.LessOrEqual(t, len(rs.puts), 1, "nothing is saved from the failed batch on")
}
