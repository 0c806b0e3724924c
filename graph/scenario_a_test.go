package graph_test

// Ports of LangGraph behavioural scenarios, section A of
// the project's LangGraph behavioural specification (not shipped) §7 (supersteps, ordering,
// conflicts, recursion), and a test of §9 invariants (iv)–(vi) on one graph.
// Helpers shared with the other scenario files live in
// scenario_helpers_test.go.
//
// Python's root-list states (StateGraph(Annotated[list, add])) become a
// struct with one state.Append[string] field; Send arguments that are not
// the state become extra fields of the state struct, materialized as the
// Send task's input.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// abcfJoinComma is `lambda a, b: ", ".join(x for x in [a, b] if x)`.
type abcfJoinComma struct{}

func (abcfJoinComma) Reduce(old, update string) string {
	var parts []string
	for _, x := range []string{old, update} {
		if x != "" {
			parts = append(parts, x)
		}
	}
	return strings.Join(parts, ", ")
}

// abcfList is the Go port of a Python root list state
// (StateGraph(Annotated[list, add])): L is the list; Arg and Cmd carry Send
// arguments, which Python passes as a bare value.
type abcfList struct {
	L   state.Append[string]
	Arg state.Value[string]
	Cmd state.Value[string]
}

// ---------------------------------------------------------------------------
// S1 test_invoke_two_processes_in_out.

// Python uses the low-level Pregel API (channels input/inbox/output); here a
// StateGraph with the same fields. Python's raw Pregel has no __start__
// superstep, a StateGraph has one, so two nodes need three supersteps.
func TestS01InvokeTwoProcessesInOut(t *testing.T) {
	type S struct {
		Input, Inbox, Output state.Value[int]
	}
	var twoRan atomic.Int32
	var oneStep, oneRemaining atomic.Int32
	g, err := graph.New[S]().
		AddNode("one", func(ctx context.Context, s S) (S, error) {
			oneStep.Store(int32(graph.Step(ctx)))
			oneRemaining.Store(int32(graph.RemainingSteps(ctx)))
			s.Inbox.Set(s.Input.Get() + 1)
			return s, nil
		}).
		AddNode("two", func(_ context.Context, s S) (S, error) {
			twoRan.Add(1)
			s.Output.Set(s.Inbox.Get() + 1)
			return s, nil
		}).
		AddEdge(graph.Start, "one").AddEdge("one", "two").AddEdge("two", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)

	out, err := g.Invoke(ctx, S{Input: state.Set(2)})
	require.NoError(t, err)
	require.Equal(t, 4, out.Output.Get())

	twoRan.Store(0)
	_, err = g.Invoke(ctx, S{Input: state.Set(2)}, graph.WithRecursionLimit(1))
	var re *graph.RecursionError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 1, re.Limit)
	require.Contains(t, err.Error(), "recursion limit of 1 reached without hitting a stop condition")
	require.Equal(t, []string{"one"}, re.LastNodes, "superstep L (=1) still runs")
	require.Zero(t, twoRan.Load())

	// limit 2 is still one short (start + one + two = 3 supersteps).
	_, err = g.Invoke(ctx, S{Input: state.Set(2)}, graph.WithRecursionLimit(2))
	require.ErrorAs(t, err, &re)
	out, err = g.Invoke(ctx, S{Input: state.Set(2)}, graph.WithRecursionLimit(3))
	require.NoError(t, err)
	require.Equal(t, 4, out.Output.Get())
	// Managed value RemainingSteps = stop - step, stop = limit for a fresh
	// run (§1.12): node one runs in superstep 1.
	require.EqualValues(t, 1, oneStep.Load())
	require.EqualValues(t, 2, oneRemaining.Load())
}

// ---------------------------------------------------------------------------
// S2 test_invoke_many_processes_in_out.

// Python: 100 add_one Pregel nodes, recursion_limit=100, result 102. The
// StateGraph port counts the __start__ superstep, so the same 100 nodes
// need a limit of 101 and fail with 100.
func TestS02InvokeManyProcessesInOut(t *testing.T) {
	type S struct{ X state.Value[int] }
	names := []string{"-1"}
	for i := range 98 {
		names = append(names, strconv.Itoa(i))
	}
	names = append(names, "last")
	require.Len(t, names, 100)
	b := graph.New[S]()
	for _, n := range names {
		b.AddNode(n, func(_ context.Context, s S) (S, error) {
			s.X.Set(s.X.Get() + 1)
			return s, nil
		})
	}
	b.AddEdge(graph.Start, names[0])
	for i := 1; i < len(names); i++ {
		b.AddEdge(names[i-1], names[i])
	}
	b.AddEdge("last", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)

	for range 3 {
		out, err := g.Invoke(ctx, S{X: state.Set(2)}, graph.WithRecursionLimit(101))
		require.NoError(t, err)
		require.Equal(t, 102, out.X.Get())
	}
	_, err = g.Invoke(ctx, S{X: state.Set(2)}, graph.WithRecursionLimit(100))
	var re *graph.RecursionError
	require.ErrorAs(t, err, &re)
	require.Equal(t, []string{"last"}, re.LastNodes)

	// Concurrently, from 10 goroutines, on one compiled graph.
	var wg sync.WaitGroup
	results := make([]int, 10)
	errs := make([]error, 10)
	for i := range 10 {
		wg.Go(func() {
			out, err := g.Invoke(ctx, S{X: state.Set(2)}, graph.WithRecursionLimit(101))
			results[i], errs[i] = out.X.Get(), err
		})
	}
	wg.Wait()
	for i := range 10 {
		require.NoError(t, errs[i])
		require.Equal(t, 102, results[i])
	}
}

// ---------------------------------------------------------------------------
// S3 test_invoke_two_processes_two_in_two_out_invalid.

func TestS03TwoWritersLastValueInvalid(t *testing.T) {
	type S struct{ Hello state.Value[string] }
	world := func(_ context.Context, s S) (S, error) {
		s.Hello.Set("world")
		return s, nil
	}
	g, err := graph.New[S]().
		AddNode("one", world).AddNode("two", world).
		AddBranch(graph.Start, func(context.Context, S) (graph.Route[S], error) {
			return graph.To[S]("one", "two"), nil
		}, graph.WithDestinations("one", "two")).
		AddEdge("one", graph.End).AddEdge("two", graph.End).
		Compile()
	require.NoError(t, err)
	_, err = g.Invoke(dexCtx(t), S{Hello: state.Set("there")})
	var iu *graph.InvalidUpdateError
	require.ErrorAs(t, err, &iu)
	require.Equal(t, "Hello", iu.Field)
	require.Equal(t, []string{"one", "two"}, iu.Writers)
	require.ErrorIs(t, err, state.ErrConflict)
}

// ---------------------------------------------------------------------------
// S4 test_invoke_two_processes_two_in_two_out_valid.

// Python's Topic(int) output channel is an Append[int] field.
func TestS04TwoWritersTopicValid(t *testing.T) {
	type S struct {
		Input  state.Value[int]
		Output state.Append[int]
	}
	inc := func(_ context.Context, s S) (S, error) {
		s.Output.Append(s.Input.Get() + 1)
		return s, nil
	}
	g, err := graph.New[S]().
		AddNode("one", inc).AddNode("two", inc).
		AddEdge(graph.Start, "one").AddEdge(graph.Start, "two").
		AddEdge("one", graph.End).AddEdge("two", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), S{Input: state.Set(2)})
	require.NoError(t, err)
	require.Equal(t, []int{3, 3}, out.Output.Get())
}

// ---------------------------------------------------------------------------
// S5 test_graph_validation.

// Python's "1-arg reducer" check has no Go equivalent (a Reducer's
// signature is checked by the compiler); its nearest analogue, a state
// field with no merge rule, is checked instead.
func TestS05GraphValidation(t *testing.T) {
	type S struct{ Hello state.Value[string] }
	noop := func(_ context.Context, s S) (S, error) { return s, nil }

	t.Run("edge from unknown node", func(t *testing.T) {
		_, err := graph.New[S]().
			AddNode("a", noop).AddEdge(graph.Start, "a").AddEdge("a", graph.End).
			AddEdge("unknown", "a").
			Compile()
		var ce *graph.CompileError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, strings.Join(ce.Problems, "\n"), `unknown node "unknown"`)
	})
	t.Run("field without reducer", func(t *testing.T) {
		type Bad struct {
			Hello string
		}
		_, err := graph.New[Bad]().
			AddNode("a", func(_ context.Context, s Bad) (Bad, error) { return s, nil }).
			AddEdge(graph.Start, "a").AddEdge("a", graph.End).
			Compile()
		var ce *graph.CompileError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, strings.Join(ce.Problems, "\n"), "Hello")
	})
	t.Run("no entry point", func(t *testing.T) {
		_, err := graph.New[S]().AddNode("a", noop).AddEdge("a", graph.End).Compile()
		var ce *graph.CompileError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, strings.Join(ce.Problems, "\n"), "entrypoint")
	})
	// Runtime branch validation (P/graph/_branch.py, §9.1 error catalogue).
	for _, tc := range []struct {
		name  string
		route graph.Route[S]
		opt   graph.BranchOption
		want  string
	}{
		{"send to END", graph.Route[S]{Sends: []graph.Send[S]{{Node: graph.End}}}, graph.WithDestinations("b"), "END"},
		{"empty destination", graph.To[S](""), graph.WithDestinations("b"), "valid destination"},
		{"START destination", graph.To[S](graph.Start), graph.WithDestinations("b"), "valid destination"},
		{"path-map miss", graph.To[S]("nowhere"), graph.WithPathMap(map[string]string{"go": "b"}), "nowhere"},
	} {
		t.Run("branch "+tc.name, func(t *testing.T) {
			var ran atomic.Bool
			g, err := graph.New[S]().
				AddNode("a", noop).
				AddNode("b", func(_ context.Context, s S) (S, error) { ran.Store(true); return s, nil }).
				AddEdge(graph.Start, "a").
				AddBranch("a", func(context.Context, S) (graph.Route[S], error) { return tc.route, nil }, tc.opt).
				AddEdge("b", graph.End).
				Compile()
			require.NoError(t, err)
			_, err = g.Invoke(dexCtx(t), S{})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, "a", ne.Node)
			require.False(t, ran.Load())
		})
	}
	t.Run("parallel last-value writes", func(t *testing.T) {
		world := func(_ context.Context, s S) (S, error) {
			s.Hello.Set("world")
			return s, nil
		}
		g, err := graph.New[S]().
			AddNode("a", noop).AddNode("b", world).AddNode("c", world).
			AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
			AddEdge("b", graph.End).AddEdge("c", graph.End).
			Compile()
		require.NoError(t, err)
		_, err = g.Invoke(dexCtx(t), S{Hello: state.Set("there")})
		var iu *graph.InvalidUpdateError
		require.ErrorAs(t, err, &iu)
		require.Equal(t, "Hello", iu.Field)
		require.Equal(t, []string{"b", "c"}, iu.Writers)
	})
}

// ---------------------------------------------------------------------------
// S6 test_invoke_two_processes_one_in_two_out.

// Python's raw Pregel streams only output/between; the StateGraph port
// also has the input field and a __start__ superstep, whose values event
// comes first.
func TestS06OneInTwoOut(t *testing.T) {
	type S struct {
		Input, Between, Output state.Value[int]
	}
	g, err := graph.New[S]().
		AddNode("one", func(_ context.Context, s S) (S, error) {
			s.Between.Set(s.Input.Get() + 1)
			s.Output.Set(s.Input.Get() + 1)
			return s, nil
		}).
		AddNode("two", func(_ context.Context, s S) (S, error) {
			s.Output.Set(s.Between.Get() + 1)
			return s, nil
		}).
		AddEdge(graph.Start, "one").AddEdge("one", "two").AddEdge("two", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)

	evs, err := dexCollect(g.Stream(ctx, S{Input: state.Set(2)}))
	require.NoError(t, err)
	require.Equal(t, []abcfUpdate{
		{Node: "one", Writes: map[string]any{"Between": 3.0, "Output": 3.0}},
		{Node: "two", Writes: map[string]any{"Output": 4.0}},
	}, abcfUpdates(t, evs))

	evs, err = dexCollect(g.Stream(ctx, S{Input: state.Set(2)}, graph.WithStreamModes(graph.ModeValues)))
	require.NoError(t, err)
	var vals []map[string]any
	for _, ev := range evs {
		require.Equal(t, graph.ModeValues, ev.Mode)
		vals = append(vals, dexVals(t, ev.Payload))
	}
	require.Empty(t, cmp.Diff([]map[string]any{
		{"Input": 2.0},
		{"Input": 2.0, "Between": 3.0, "Output": 3.0},
		{"Input": 2.0, "Between": 3.0, "Output": 4.0},
	}, vals))
}

// ---------------------------------------------------------------------------
// S7 test_parallel_node_execution.

// Python proves parallelism with sleeps (fast: 2 s, slow: 1 s) and a total
// under 3 s. Here both nodes meet at a barrier (which only parallel tasks
// can pass), then "slow" finishes first: its update is streamed first, but
// the reducer order is by node name, so "fast" comes first in the list.
func TestS07ParallelNodeExecution(t *testing.T) {
	type S struct{ Results state.Append[string] }
	ctx := dexCtx(t)
	var arrived sync.WaitGroup
	arrived.Add(2)
	barrier := make(chan struct{})
	go func() { arrived.Wait(); close(barrier) }()
	seen := newAbcfSeen()
	meet := func(ctx context.Context) error {
		arrived.Done()
		select {
		case <-barrier:
			return nil
		case <-ctx.Done():
			return errors.New("the two nodes did not run concurrently")
		}
	}
	g, err := graph.New[S]().
		AddNode("slow", func(ctx context.Context, s S) (S, error) {
			if err := meet(ctx); err != nil {
				return s, err
			}
			s.Results.Append("slow")
			return s, nil
		}).
		AddNode("fast", func(ctx context.Context, s S) (S, error) {
			if err := meet(ctx); err != nil {
				return s, err
			}
			if err := seen.wait(ctx, "slow", 1); err != nil {
				return s, err
			}
			s.Results.Append("fast")
			return s, nil
		}).
		AddEdge(graph.Start, "slow").AddEdge(graph.Start, "fast").
		AddEdge("slow", graph.End).AddEdge("fast", graph.End).
		Compile()
	require.NoError(t, err)

	var order []string
	var final S
	for ev, err := range g.Stream(ctx, S{Results: state.Items[string]()}, graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues)) {
		require.NoError(t, err)
		switch ev.Mode {
		case graph.ModeUpdates:
			order = append(order, ev.Node)
			seen.mark(ev.Node)
		case graph.ModeValues:
			final = ev.Payload.(S)
		}
	}
	require.Equal(t, []string{"slow", "fast"}, order, "updates arrive in completion order")
	require.Equal(t, []string{"fast", "slow"}, final.Results.Get(), "writes are merged in node-name order")
}

// ---------------------------------------------------------------------------
// S8 test_concurrent_emit_sends.

// abcfListNode returns [name] for a state input and ["name|arg"] for a Send
// input (Python: a list vs a bare Send argument).
func abcfListNode(name string, calls *sync.Map) graph.NodeFunc[abcfList] {
	return func(_ context.Context, s abcfList) (abcfList, error) {
		if calls != nil {
			n, _ := calls.LoadOrStore(name, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
		if s.Arg.HasValue() {
			return abcfList{L: state.Items(name + "|" + s.Arg.Get())}, nil
		}
		return abcfList{L: state.Items(name)}, nil
	}
}

func abcfSend(node, arg string) graph.Send[abcfList] {
	return graph.Send[abcfList]{Node: node, Arg: abcfList{Arg: state.Set(arg)}}
}

func TestS08ConcurrentEmitSends(t *testing.T) {
	var calls sync.Map
	b := graph.New[abcfList]()
	for _, n := range []string{"1", "1.1", "2", "3", "3.1"} {
		b.AddNode(n, abcfListNode(n, &calls))
	}
	g, err := b.
		AddEdge(graph.Start, "1").AddEdge(graph.Start, "1.1").
		AddBranch("1", func(context.Context, abcfList) (graph.Route[abcfList], error) {
			return graph.Route[abcfList]{
				Sends: []graph.Send[abcfList]{abcfSend("2", "1"), abcfSend("2", "2")},
				Nodes: []string{"3.1"},
			}, nil
		}).
		AddBranch("1.1", func(context.Context, abcfList) (graph.Route[abcfList], error) {
			return graph.Route[abcfList]{Sends: []graph.Send[abcfList]{abcfSend("2", "3"), abcfSend("2", "4")}}, nil
		}).
		AddConditionalEdges("2", func(context.Context, abcfList) (string, error) { return "3", nil }, graph.WithDestinations("3")).
		AddEdge("3", graph.End).AddEdge("3.1", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), abcfList{L: state.Items("0")})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"}, out.L.Get())
	n, _ := calls.Load("3")
	require.EqualValues(t, 1, n.(*atomic.Int32).Load(), "node 3 runs once")
}

// ---------------------------------------------------------------------------
// S9 test_cond_edge_after_send.

func TestS09CondEdgeAfterSend(t *testing.T) {
	b := graph.New[abcfList]()
	for _, n := range []string{"1", "2", "3"} {
		n := n
		b.AddNode(n, func(_ context.Context, s abcfList) (abcfList, error) {
			return abcfList{L: state.Items(n)}, nil
		})
	}
	g, err := b.
		AddEdge(graph.Start, "1").
		AddBranch("1", func(_ context.Context, s abcfList) (graph.Route[abcfList], error) {
			// Send("2", state): the state carries no writes, so the Send
			// tasks' input is an empty state.
			return graph.Route[abcfList]{Sends: []graph.Send[abcfList]{{Node: "2", Arg: s}, {Node: "2", Arg: s}}}, nil
		}).
		AddConditionalEdges("2", func(context.Context, abcfList) (string, error) { return "3", nil }, graph.WithDestinations("3")).
		AddEdge("3", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), abcfList{L: state.Items("0")})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2", "2", "3"}, out.L.Get())
}

// ---------------------------------------------------------------------------
// S10 test_send_sequences.

// Python sends a Command as a Send argument; here the Cmd field of the Send
// argument asks node 2 to return Command{Sends: Send("2", arg)}.
func TestS10SendSequences(t *testing.T) {
	b := graph.New[abcfList]()
	for _, n := range []string{"1", "3", "3.1"} {
		b.AddNode(n, abcfListNode(n, nil))
	}
	b.AddCommandNode("2", func(_ context.Context, s abcfList) (graph.Command[abcfList], error) {
		switch {
		case s.Cmd.HasValue():
			c := s.Cmd.Get()
			return graph.Command[abcfList]{
				Update: abcfList{L: state.Items(fmt.Sprintf("2|Command(goto=Send(node='2', arg=%s))", c))},
				Sends:  []graph.Send[abcfList]{abcfSend("2", c)},
			}, nil
		case s.Arg.HasValue():
			return graph.Command[abcfList]{Update: abcfList{L: state.Items("2|" + s.Arg.Get())}}, nil
		}
		return graph.Command[abcfList]{Update: abcfList{L: state.Items("2")}}, nil
	})
	cmdSend := func(arg string) graph.Send[abcfList] {
		return graph.Send[abcfList]{Node: "2", Arg: abcfList{Cmd: state.Set(arg)}}
	}
	g, err := b.
		AddEdge(graph.Start, "1").
		AddBranch("1", func(context.Context, abcfList) (graph.Route[abcfList], error) {
			return graph.Route[abcfList]{Sends: []graph.Send[abcfList]{cmdSend("3"), cmdSend("4")}, Nodes: []string{"3.1"}}, nil
		}).
		AddConditionalEdges("2", func(context.Context, abcfList) (string, error) { return "3", nil }, graph.WithDestinations("3")).
		AddEdge("3", graph.End).AddEdge("3.1", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), abcfList{L: state.Items("0")})
	require.NoError(t, err)
	require.Equal(t, []string{
		"0", "1", "3.1",
		"2|Command(goto=Send(node='2', arg=3))",
		"2|Command(goto=Send(node='2', arg=4))",
		"3", "2|3", "2|4", "3",
	}, out.L.Get())
}

// ---------------------------------------------------------------------------
// S11 test_max_concurrency.

// Python measures concurrency with random sleeps; here the Send tasks
// meet at barriers, so the test fails (by its deadlock guard) unless the
// expected number of tasks really run at once, and a counter proves the
// bound is never exceeded.
func TestS11MaxConcurrency(t *testing.T) {
	type S struct {
		L   state.Append[string]
		Idx state.Value[int]
	}
	const n = 100
	build := func(wave int, inflight, maxSeen *atomic.Int32, opts ...graph.CompileOption) *graph.Graph[S] {
		var started atomic.Int32
		waveFull := make(chan struct{})
		var once sync.Once
		g, err := graph.New[S]().
			AddNode("1", func(context.Context, S) (S, error) { return S{L: state.Items("1")}, nil }).
			AddNode("2", func(ctx context.Context, s S) (S, error) {
				cur := inflight.Add(1)
				defer inflight.Add(-1)
				for {
					m := maxSeen.Load()
					if cur <= m || maxSeen.CompareAndSwap(m, cur) {
						break
					}
				}
				if cur >= int32(wave) {
					once.Do(func() { close(waveFull) })
				}
				if started.Add(1) <= int32(wave) {
					// The first wave waits until it is all running at once.
					select {
					case <-waveFull:
					case <-ctx.Done():
						return s, ctx.Err()
					}
				}
				return S{L: state.Items(strconv.Itoa(s.Idx.Get()))}, nil
			}).
			AddNode("3", func(context.Context, S) (S, error) { return S{L: state.Items("3")}, nil }).
			AddEdge(graph.Start, "1").
			AddBranch("1", func(context.Context, S) (graph.Route[S], error) {
				var r graph.Route[S]
				for i := range n {
					r.Sends = append(r.Sends, graph.Send[S]{Node: "2", Arg: S{Idx: state.Set(i)}})
				}
				return r, nil
			}).
			AddEdge("2", "3").AddEdge("3", graph.End).
			Compile(opts...)
		require.NoError(t, err)
		return g
	}
	want := []string{"0", "1"}
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	want = append(want, "3")

	t.Run("unbounded", func(t *testing.T) {
		var inflight, maxSeen atomic.Int32
		g := build(n, &inflight, &maxSeen)
		out, err := g.Invoke(dexCtx(t), S{L: state.Items("0")})
		require.NoError(t, err)
		require.Equal(t, want, out.L.Get())
		require.EqualValues(t, n, maxSeen.Load())
	})
	t.Run("max concurrency 10", func(t *testing.T) {
		var inflight, maxSeen atomic.Int32
		g := build(10, &inflight, &maxSeen)
		out, err := g.Invoke(dexCtx(t), S{L: state.Items("0")}, graph.WithMaxConcurrency(10))
		require.NoError(t, err)
		require.Equal(t, want, out.L.Get())
		require.EqualValues(t, 10, maxSeen.Load())
	})
	t.Run("interrupt before send target", func(t *testing.T) {
		var inflight, maxSeen atomic.Int32
		g := build(1, &inflight, &maxSeen, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("2"))
		ctx := dexCtx(t)
		out, err := g.Invoke(ctx, S{L: state.Items("0")}, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"2"}, intr.Before)
		require.Equal(t, []string{"0", "1"}, out.L.Get())
		out, err = g.Resume(ctx, graph.Command[S]{}, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, want, out.L.Get())
	})
}

// ---------------------------------------------------------------------------
// S12 test_multiple_writes_same_channel_from_same_node.

// Python's history task results are not exposed by Graph.History; the
// stream part and the final value are ported.
func TestS12MultipleWritesSameChannelFromSameNode(t *testing.T) {
	type S struct {
		Foo state.Reduced[string, abcfJoinComma]
	}
	g, err := graph.New[S]().
		AddCommandNode("one", func(context.Context, S) (graph.Command[S], error) {
			var u S
			u.Foo.Update("one.0")
			u.Foo.Update("one.1")
			return graph.Command[S]{Update: u}, nil
		}).
		AddNode("two", func(_ context.Context, s S) (S, error) {
			s.Foo.Update("two")
			return s, nil
		}).
		AddEdge(graph.Start, "one").AddEdge("one", "two").AddEdge("two", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	var in S
	in.Foo.Update("input")
	evs, err := dexCollect(g.Stream(dexCtx(t), in, graph.WithThread("1"), graph.WithStreamModes(graph.ModeUpdates|graph.ModeTasks)))
	require.NoError(t, err)

	type row struct {
		Mode  string
		Node  string
		Kind  string
		Input map[string]any
		Data  map[string]any
	}
	var got []row
	var hidden []string
	for _, ev := range evs {
		if ev.Node == graph.Start {
			hidden = append(hidden, ev.Mode.String())
			continue
		}
		switch p := ev.Payload.(type) {
		case graph.TaskStart:
			got = append(got, row{Mode: "tasks", Node: p.Name, Kind: "start", Input: dexVals(t, p.Input)})
		case graph.TaskResult:
			require.NoError(t, p.Err)
			got = append(got, row{Mode: "tasks", Node: p.Name, Kind: "result", Data: abcfWrites(t, p.Writes)})
		default:
			got = append(got, row{Mode: "updates", Node: ev.Node, Data: abcfWrites(t, ev.Writes)})
		}
	}
	require.Empty(t, cmp.Diff([]row{
		{Mode: "tasks", Node: "one", Kind: "start", Input: map[string]any{"Foo": "input"}},
		{Mode: "updates", Node: "one", Data: map[string]any{"Foo": []any{"one.0", "one.1"}}},
		{Mode: "tasks", Node: "one", Kind: "result", Data: map[string]any{"Foo": []any{"one.0", "one.1"}}},
		{Mode: "tasks", Node: "two", Kind: "start", Input: map[string]any{"Foo": "input, one.0, one.1"}},
		{Mode: "updates", Node: "two", Data: map[string]any{"Foo": []any{"two"}}},
		{Mode: "tasks", Node: "two", Kind: "result", Data: map[string]any{"Foo": []any{"two"}}},
	}, got))

	snap, err := g.GetState(dexCtx(t), graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, "input, one.0, one.1, two", snap.Values.Foo.Get())

	t.Run("hidden start task is not streamed", func(t *testing.T) {
		// Python's tasks/debug streams skip tasks tagged langsmith:hidden,
		// i.e. __start__ (P/pregel/debug.py map_debug_tasks).
		require.Empty(t, hidden, "ModeTasks streams no TaskStart/TaskResult for the hidden __start__ task")
	})
}

// ---------------------------------------------------------------------------
// S13 test_overwrite_sequential / _parallel / _parallel_error.

func TestS13Overwrite(t *testing.T) {
	type S struct{ Messages state.Append[string] }
	app := func(x string) graph.NodeFunc[S] {
		return func(context.Context, S) (S, error) { return S{Messages: state.Items(x)}, nil }
	}
	over := func(x string) graph.NodeFunc[S] {
		return func(context.Context, S) (S, error) {
			var s S
			s.Messages.Overwrite([]string{x})
			return s, nil
		}
	}
	tests := []struct {
		name    string
		build   func() *graph.Builder[S]
		want    []string
		wantErr error
	}{
		{
			name: "sequential",
			build: func() *graph.Builder[S] {
				return graph.New[S]().AddNode("a", app("a")).AddNode("b", over("b")).
					AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End)
			},
			want: []string{"b"},
		},
		{
			name: "parallel",
			build: func() *graph.Builder[S] {
				return graph.New[S]().AddNode("a", app("a")).AddNode("b", over("b")).AddNode("c", app("c")).AddNode("d", app("d")).
					AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
					AddEdge("b", "d").AddEdge("c", "d").AddEdge("d", graph.End)
			},
			want: []string{"b", "d"},
		},
		{
			name: "parallel error",
			build: func() *graph.Builder[S] {
				return graph.New[S]().AddNode("a", app("a")).AddNode("b", over("b")).AddNode("c", over("c")).AddNode("d", app("d")).
					AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
					AddEdge("b", "d").AddEdge("c", "d").AddEdge("d", graph.End)
			},
			wantErr: state.ErrOverwriteConflict,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.build().Compile()
			require.NoError(t, err)
			out, err := g.Invoke(dexCtx(t), S{Messages: state.Items("START")})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				var iu *graph.InvalidUpdateError
				require.ErrorAs(t, err, &iu)
				require.Equal(t, "Messages", iu.Field)
				require.Equal(t, []string{"b", "c"}, iu.Writers)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, out.Messages.Get())
		})
	}
}

// S13 with the overwrite stored and read back: as a pending write (a
// sibling interrupts, the run is resumed) and as a cached node result.
// Overwrite(nil) clears the list; the clearing must survive the encoding.
func TestS13OverwriteRoundTrip(t *testing.T) {
	type S struct{ Messages state.Append[string] }
	t.Run("pending write of a finished sibling", func(t *testing.T) {
		g, err := graph.New[S]().
			AddNode("a", func(context.Context, S) (S, error) { return S{Messages: state.Items("a")}, nil }).
			AddNode("b", func(context.Context, S) (S, error) {
				var u S
				u.Messages.Overwrite(nil)
				return u, nil
			}).
			AddNode("c", func(ctx context.Context, s S) (S, error) {
				if _, err := graph.Interrupt(ctx, "go on?"); err != nil {
					return s, err
				}
				return S{Messages: state.Items("c")}, nil
			}).
			AddNode("d", func(context.Context, S) (S, error) { return S{Messages: state.Items("d")}, nil }).
			AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
			AddEdge("b", "d").AddEdge("c", "d").AddEdge("d", graph.End).
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		ctx := dexCtx(t)
		_, err = g.Invoke(ctx, S{Messages: state.Items("START")}, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		out, err := g.Resume(ctx, graph.Command[S]{Resume: "yes"}, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []string{"d"}, out.Messages.Get())
	})
	t.Run("cached node result", func(t *testing.T) {
		var runs atomic.Int32
		g, err := graph.New[S]().
			AddNode("clear", func(context.Context, S) (S, error) {
				runs.Add(1)
				var u S
				u.Messages.Overwrite(nil)
				return u, nil
			}, graph.WithCachePolicy(graph.CachePolicy{})).
			AddEdge(graph.Start, "clear").AddEdge("clear", graph.End).
			Compile(graph.WithCache(graph.NewMemoryCache()))
		require.NoError(t, err)
		ctx := dexCtx(t)
		for i := range 2 {
			out, err := g.Invoke(ctx, S{Messages: state.Items("x", "y")})
			require.NoError(t, err)
			require.Empty(t, out.Messages.Get(), "run %d", i)
		}
		require.EqualValues(t, 1, runs.Load())
	})
}

// ---------------------------------------------------------------------------
// S14 test_multiple_updates / test_multiple_updates_root.

// Python returns a list of two Commands; a Go command node returns one
// Command whose Update carries both writes in order.
func TestS14MultipleUpdates(t *testing.T) {
	type S struct {
		Foo state.Reduced[string, dexConcat]
	}
	g, err := graph.New[S]().
		AddCommandNode("node_a", func(context.Context, S) (graph.Command[S], error) {
			var u S
			u.Foo.Update("a1")
			u.Foo.Update("a2")
			return graph.Command[S]{Update: u}, nil
		}).
		AddNode("node_b", func(_ context.Context, s S) (S, error) {
			s.Foo.Update("b")
			return s, nil
		}).
		AddEdge(graph.Start, "node_a").AddEdge("node_a", "node_b").AddEdge("node_b", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)
	out, err := g.Invoke(ctx, S{})
	require.NoError(t, err)
	require.Equal(t, "a1a2b", out.Foo.Get())

	evs, err := dexCollect(g.Stream(ctx, S{}))
	require.NoError(t, err)
	require.Equal(t, []abcfUpdate{
		{Node: "node_a", Writes: map[string]any{"Foo": []any{"a1", "a2"}}},
		{Node: "node_b", Writes: map[string]any{"Foo": []any{"b"}}},
	}, abcfUpdates(t, evs))
}

// ---------------------------------------------------------------------------
// §9 invariants.

// (iv) checkpoint IDs strictly increase and History lists newest first;
// (v) values is emitted once per superstep; (vi) a recursion error leaves
// the L-th superstep executed and checkpointed.
func TestABCFInvariantHistoryValuesRecursion(t *testing.T) {
	type S struct{ N state.Sum[int] }
	g, err := graph.New[S]().
		AddNode("inc", func(context.Context, S) (S, error) { return S{N: state.Delta(1)}, nil }).
		AddEdge(graph.Start, "inc").
		AddConditionalEdges("inc", func(_ context.Context, s S) (string, error) {
			if s.N.Get() >= 5 {
				return graph.End, nil
			}
			return "inc", nil
		}, graph.WithDestinations("inc", graph.End)).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)

	evs, err := dexCollect(g.Stream(ctx, S{}, graph.WithThread("a"), graph.WithStreamModes(graph.ModeValues)))
	require.NoError(t, err)
	steps := map[int]int{}
	for _, ev := range evs {
		steps[ev.Step]++
	}
	// The input writes nothing, so the __start__ step updates no field and
	// emits no values event (§1.3 after_tick step 2).
	require.Len(t, evs, 5, "one per inc step")
	for s, n := range steps {
		require.Equal(t, 1, n, "values emitted %d times for step %d", n, s)
	}

	var ids []string
	var stepsSeen []int
	for snap, err := range g.History(ctx, "a") {
		require.NoError(t, err)
		ids = append(ids, snap.CheckpointID)
		stepsSeen = append(stepsSeen, snap.Metadata.Step)
	}
	require.Equal(t, []int{5, 4, 3, 2, 1, 0, -1}, stepsSeen)
	for i := 1; i < len(ids); i++ {
		require.Less(t, ids[i], ids[i-1], "history is newest first with increasing ids")
	}

	// Limit 3: supersteps 0..3 run (start + 3 inc), the 4th inc does not.
	out, err := g.Invoke(ctx, S{}, graph.WithThread("b"), graph.WithRecursionLimit(3))
	var re *graph.RecursionError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 3, out.N.Get())
	snap, err := g.GetState(ctx, graph.WithThread("b"))
	require.NoError(t, err)
	require.Equal(t, 3, snap.Values.N.Get())
	require.Equal(t, 3, snap.Metadata.Step)
	require.Equal(t, []string{"inc"}, snap.Next)
}
