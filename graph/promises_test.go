package graph_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// The promises of issue "Durable across processes", part 5: node timeouts
// and cancellation do not wait for a node that ignores its context,
// runtime.Goexit in a node is an error of that node, a branch keeps to its
// declared destinations, and a pause that could never be resumed is
// refused.

type promState struct {
	X state.Value[int]
	L state.Append[string]
}

// promWait fails the test instead of hanging when ch stays open: the
// bound is a guard against a hang, not a timing assertion.
func promWait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("hung waiting for %s", what)
		panic("unreachable")
	}
}

// promBlocked asserts that the node signalling on returned has not
// returned yet.
func promBlocked(t *testing.T, returned <-chan struct{}) {
	t.Helper()
	select {
	case <-returned:
		t.Fatal("the run waited for the node to return")
	default:
	}
}

// promResult is what an Invoke run on another goroutine returned.
type promResult struct {
	out promState
	err error
}

func promInvoke(ctx context.Context, g *graph.Graph[promState], in promState, opts ...graph.RunOption) <-chan promResult {
	ch := make(chan promResult, 1)
	go func() {
		out, err := g.Invoke(ctx, in, opts...)
		ch <- promResult{out, err}
	}()
	return ch
}

// A node that ignores its context fails at its timeout while it is still
// blocked; the abandoned node's late calls into the runtime and its result
// reach no run, not even the ones that reuse the graph's pooled loop
// meanwhile (the race detector watches).
func TestPromiseNodeTimeoutAbandonsNodeIgnoringContext(t *testing.T) {
	release, returned, late := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	started := make(chan struct{})
	first := true
	g, err := graph.New[promState]().
		AddNode("slow", func(ctx context.Context, s promState) (promState, error) {
			if !first {
				return promState{X: state.Set(s.X.Get() + 1)}, nil
			}
			first = false
			close(started)
			<-release // ignores ctx
			// Abandoned: every call into the runtime is harmless now.
			_ = graph.TaskID(ctx)
			_ = graph.NodeName(ctx)
			graph.StreamWriter(ctx)("late")
			_, ierr := graph.Interrupt(ctx, "late")
			late <- ierr
			close(returned)
			return promState{X: state.Set(99), L: state.Items("late")}, nil
		}, graph.WithNodeTimeout(20*time.Millisecond)).
		AddEdge(graph.Start, "slow").AddEdge("slow", graph.End).
		Compile()
	require.NoError(t, err)

	// Streamed, so that the abandoned node's late event has a stream to
	// (not) reach.
	streamed := make(chan error, 1)
	go func() {
		var last error
		for _, err := range g.Stream(context.Background(), promState{X: state.Set(1)}, graph.WithStreamModes(graph.ModeCustom)) {
			last = err
		}
		streamed <- last
	}()
	err = promWait(t, streamed, "the stream")
	<-started
	promBlocked(t, returned)
	require.ErrorIs(t, err, graph.ErrNodeTimeout)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "slow", ne.Node)
	require.Equal(t, 1, ne.Attempts)
	var te *graph.NodeTimeoutError
	require.ErrorAs(t, err, &te)
	require.Equal(t, 20*time.Millisecond, te.Timeout)
	require.NoError(t, te.Err, "the node was abandoned: it returned nothing")

	// Runs that reuse the pooled loop and task records while the
	// abandoned node still runs.
	for range 3 {
		out, err := g.Invoke(context.Background(), promState{X: state.Set(1)})
		require.NoError(t, err)
		require.Equal(t, 2, out.X.Get())
	}
	var events int
	for _, err := range g.Stream(context.Background(), promState{X: state.Set(1)}, graph.WithStreamModes(graph.ModeCustom|graph.ModeUpdates)) {
		require.NoError(t, err)
		events++
	}
	require.Equal(t, 1, events, "the update of the stream's own node only")

	close(release)
	require.Error(t, promWait(t, late, "the abandoned node"), "an abandoned node cannot interrupt")
	<-returned
	out, err := g.Invoke(context.Background(), promState{X: state.Set(1)})
	require.NoError(t, err)
	require.Equal(t, 2, out.X.Get())
	require.Empty(t, out.L.Get())
}

// A timeout is retried per the node's RetryPolicy, like before; RetryOn
// can refuse it.
func TestPromiseNodeTimeoutRetries(t *testing.T) {
	build := func(p graph.RetryPolicy, release chan struct{}) (*graph.Graph[promState], *atomic.Int64) {
		calls := new(atomic.Int64)
		g, err := graph.New[promState]().
			AddNode("n", func(ctx context.Context, s promState) (promState, error) {
				n := calls.Add(1)
				if n == 1 {
					<-release // ignores ctx
				}
				return promState{X: state.Set(int(n))}, nil
			}, graph.WithNodeTimeout(20*time.Millisecond), graph.WithRetry(p)).
			AddEdge(graph.Start, "n").AddEdge("n", graph.End).
			Compile()
		require.NoError(t, err)
		return g, calls
	}

	release := make(chan struct{})
	defer close(release)
	g, _ := build(graph.RetryPolicy{MaxAttempts: 2}, release)
	res := promWait(t, promInvoke(context.Background(), g, promState{}), "Invoke")
	require.NoError(t, res.err)
	require.Equal(t, 2, res.out.X.Get(), "the second attempt's result")

	release2 := make(chan struct{})
	defer close(release2)
	var seen error
	g, _ = build(graph.RetryPolicy{MaxAttempts: 3, RetryOn: func(err error) bool {
		seen = err
		return !errors.Is(err, graph.ErrNodeTimeout)
	}}, release2)
	err := promWait(t, promInvoke(context.Background(), g, promState{}), "Invoke").err
	require.ErrorIs(t, err, graph.ErrNodeTimeout)
	require.ErrorIs(t, seen, graph.ErrNodeTimeout)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, 1, ne.Attempts)
}

// Among parallel tasks, a timeout fails the step while the node is
// blocked, and its siblings are cancelled.
func TestPromiseNodeTimeoutInParallelStep(t *testing.T) {
	release, returned := make(chan struct{}), make(chan struct{})
	defer close(release)
	g, err := graph.New[promState]().
		AddNode("slow", func(ctx context.Context, s promState) (promState, error) {
			defer close(returned)
			<-release
			return s, nil
		}, graph.WithNodeTimeout(20*time.Millisecond)).
		AddNode("patient", func(ctx context.Context, s promState) (promState, error) {
			<-ctx.Done()
			return s, ctx.Err()
		}).
		AddEdge(graph.Start, "slow").AddEdge(graph.Start, "patient").
		AddEdge("slow", graph.End).AddEdge("patient", graph.End).
		Compile()
	require.NoError(t, err)
	res := promWait(t, promInvoke(context.Background(), g, promState{}), "Invoke")
	promBlocked(t, returned)
	require.ErrorIs(t, res.err, graph.ErrNodeTimeout)
	var ne *graph.NodeError
	require.ErrorAs(t, res.err, &ne)
	require.Equal(t, "slow", ne.Node)
}

// Cancelling the caller's context ends Invoke and Stream with the
// context's error while a node that ignores its context is still blocked,
// on the inline path and in a parallel step.
func TestPromiseCancelDoesNotWaitForNode(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			name := map[bool]string{false: "inline", true: "parallel"}[parallel] + "/" + map[bool]string{false: "invoke", true: "stream"}[stream]
			t.Run(name, func(t *testing.T) {
				release, started, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
				defer close(release)
				b := graph.New[promState]().
					AddNode("stuck", func(ctx context.Context, s promState) (promState, error) {
						defer close(returned)
						close(started)
						<-release // ignores ctx
						return promState{X: state.Set(7)}, nil
					}).
					AddEdge(graph.Start, "stuck").AddEdge("stuck", graph.End)
				if parallel {
					b.AddNode("quick", func(context.Context, promState) (promState, error) {
						return promState{L: state.Items("quick")}, nil
					}).AddEdge(graph.Start, "quick").AddEdge("quick", graph.End)
				}
				g, err := b.Compile()
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					<-started
					cancel()
				}()
				done := make(chan error, 1)
				go func() {
					if !stream {
						_, err := g.Invoke(ctx, promState{})
						done <- err
						return
					}
					var last error
					for _, err := range g.Stream(ctx, promState{}) {
						last = err
					}
					done <- last
				}()
				err = promWait(t, done, "the run")
				promBlocked(t, returned)
				require.ErrorIs(t, err, context.Canceled)
			})
		}
	}
}

// A node calling runtime.Goexit on a goroutine of its own (a cancellable
// context, or a timeout) fails with ErrGoexit instead of succeeding or
// hanging the run.
func TestPromiseGoexitOnNodeGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		opts []graph.NodeOption
	}{
		{"cancellable context", func(t *testing.T) context.Context { return t.Context() }, nil},
		{"timeout", func(*testing.T) context.Context { return context.Background() }, []graph.NodeOption{graph.WithNodeTimeout(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			g, err := graph.New[promState]().
				AddNode("quitter", func(context.Context, promState) (promState, error) {
					runtime.Goexit()
					return promState{}, nil
				}, append(tc.opts, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))...).
				AddNode("after", func(context.Context, promState) (promState, error) {
					ran = true
					return promState{}, nil
				}).
				AddEdge(graph.Start, "quitter").AddEdge("quitter", "after").AddEdge("after", graph.End).
				Compile()
			require.NoError(t, err)
			res := promWait(t, promInvoke(tc.ctx(t), g, promState{}), "Invoke")
			require.ErrorIs(t, res.err, graph.ErrGoexit)
			var ne *graph.NodeError
			require.ErrorAs(t, res.err, &ne)
			require.Equal(t, "quitter", ne.Node)
			require.Equal(t, 1, ne.Attempts, "Goexit is not retried")
			require.Contains(t, res.err.Error(), "node quitter: called runtime.Goexit")
			require.False(t, ran)
		})
	}
}

// A node calling runtime.Goexit on a worker goroutine of a parallel step
// fails its task and cancels its siblings: before, the task counted as a
// success and the run waited for the sibling forever.
func TestPromiseGoexitOnWorkerGoroutine(t *testing.T) {
	g, err := graph.New[promState]().
		AddNode("a", func(ctx context.Context, s promState) (promState, error) {
			// Claimed first, by the calling goroutine: it blocks until
			// cancelled, so b runs on a worker goroutine.
			<-ctx.Done()
			return s, ctx.Err()
		}).
		AddNode("b", func(context.Context, promState) (promState, error) {
			runtime.Goexit()
			return promState{}, nil
		}).
		AddEdge(graph.Start, "a").AddEdge(graph.Start, "b").
		AddEdge("a", graph.End).AddEdge("b", graph.End).
		Compile()
	require.NoError(t, err)
	res := promWait(t, promInvoke(context.Background(), g, promState{}), "Invoke")
	require.ErrorIs(t, res.err, graph.ErrGoexit)
	var ne *graph.NodeError
	require.ErrorAs(t, res.err, &ne)
	require.Equal(t, "b", ne.Node)
}

// On the caller's own goroutine (a context that cannot be cancelled, no
// timeout), Goexit ends that goroutine as it promises — nothing can stop
// it — but nothing hangs: the caller's deferred calls run, and the task is
// reported failed with ErrGoexit to the hooks.
func TestPromiseGoexitOnCallerGoroutine(t *testing.T) {
	taskEnd := make(chan error, 1)
	g, err := graph.New[promState]().
		AddNode("quitter", func(context.Context, promState) (promState, error) {
			runtime.Goexit()
			return promState{}, nil
		}).
		AddEdge(graph.Start, "quitter").AddEdge("quitter", graph.End).
		Compile(graph.WithHooks(graph.Hooks{
			TaskStart: func(ctx context.Context, _ graph.TaskRun) context.Context { return ctx },
			TaskEnd:   func(_ context.Context, _ graph.TaskRun, err error) { taskEnd <- err },
		}))
	require.NoError(t, err)
	returned, unwound := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(unwound)
		_, _ = g.Invoke(context.Background(), promState{})
		close(returned)
	}()
	promWait(t, unwound, "the caller's goroutine")
	promBlocked(t, returned)
	require.ErrorIs(t, promWait(t, taskEnd, "TaskEnd"), graph.ErrGoexit)
}

// A router or branch that declared its destinations cannot choose (or
// send to) another node: the run fails naming the source, the choice and
// the declared set, and the undeclared node does not run.
func TestPromiseUndeclaredDestination(t *testing.T) {
	var ran []string
	node := func(name string) graph.NodeFunc[promState] {
		return func(context.Context, promState) (promState, error) {
			ran = append(ran, name)
			return promState{L: state.Items(name)}, nil
		}
	}
	router := func(to string) graph.RouterFunc[promState] {
		return func(context.Context, promState) (string, error) { return to, nil }
	}
	for _, tc := range []struct {
		name     string
		build    func(b *graph.Builder[promState])
		source   string
		dest     string
		declared []string
	}{
		{"destinations", func(b *graph.Builder[promState]) {
			b.AddEdge(graph.Start, "r").AddConditionalEdges("r", router("b"), graph.WithDestinations("a", graph.End))
		}, "r", "b", []string{"__end__", "a"}},
		{"path map", func(b *graph.Builder[promState]) {
			b.AddEdge(graph.Start, "r").AddConditionalEdges("r", router("go"),
				graph.WithPathMap(map[string]string{"go": "b", "stay": "a"}), graph.WithDestinations("a"))
		}, "r", "b", []string{"a"}},
		{"end not declared", func(b *graph.Builder[promState]) {
			b.AddEdge(graph.Start, "r").AddConditionalEdges("r", router(graph.End), graph.WithDestinations("a"))
		}, "r", graph.End, []string{"a"}},
		{"entry point", func(b *graph.Builder[promState]) {
			b.AddConditionalEdges(graph.Start, router("b"), graph.WithDestinations("r"))
			b.AddEdge("r", "a")
		}, graph.Start, "b", []string{"r"}},
		{"branch", func(b *graph.Builder[promState]) {
			b.AddEdge(graph.Start, "r").AddBranch("r", func(context.Context, promState) (graph.Route[promState], error) {
				return graph.To[promState]("a", "b"), nil
			}, graph.WithDestinations("a"))
		}, "r", "b", []string{"a"}},
		{"send", func(b *graph.Builder[promState]) {
			b.AddEdge(graph.Start, "r").AddBranch("r", func(context.Context, promState) (graph.Route[promState], error) {
				return graph.Route[promState]{Sends: []graph.Send[promState]{{Node: "a"}, {Node: "b"}}}, nil
			}, graph.WithDestinations("a"))
		}, "r", "b", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			b := graph.New[promState]().
				AddNode("r", node("r")).AddNode("a", node("a")).AddNode("b", node("b")).
				AddEdge("a", "b").AddEdge("b", graph.End)
			tc.build(b)
			g, err := b.Compile()
			require.NoError(t, err, "Compile checks only that declared destinations exist")
			_, err = g.Invoke(context.Background(), promState{})
			var ud *graph.UndeclaredDestinationError
			require.ErrorAs(t, err, &ud)
			require.Equal(t, tc.source, ud.Source)
			require.Equal(t, tc.dest, ud.Destination)
			require.Equal(t, tc.declared, ud.Declared)
			require.Contains(t, err.Error(), "branch from "+tc.source)
			if tc.source != graph.Start {
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				require.Equal(t, tc.source, ne.Node)
			}
			require.NotContains(t, ran, "b")
		})
	}

	t.Run("declared", func(t *testing.T) {
		ran = nil
		g, err := graph.New[promState]().
			AddNode("r", node("r")).AddNode("a", node("a")).
			AddEdge(graph.Start, "r").AddEdge("a", graph.End).
			AddConditionalEdges("r", router("a"), graph.WithDestinations("a", graph.End)).
			Compile()
		require.NoError(t, err)
		out, err := g.Invoke(context.Background(), promState{})
		require.NoError(t, err)
		require.Equal(t, []string{"r", "a"}, out.L.Get())
	})
}

// Interrupt in a run without a checkpointer fails at once, naming the
// node, whether the node returns the error or drops it; with a
// checkpointer it pauses as before.
func TestPromiseInterruptWithoutCheckpointer(t *testing.T) {
	build := func(drop bool, opts ...graph.CompileOption) (*graph.Graph[promState], *error) {
		var fromInterrupt error
		g, err := graph.New[promState]().
			AddNode("ask", func(ctx context.Context, s promState) (promState, error) {
				_, err := graph.Interrupt(ctx, "approve?")
				fromInterrupt = err
				if err != nil && !drop {
					return s, err
				}
				return promState{L: state.Items("asked")}, nil
			}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3})).
			AddEdge(graph.Start, "ask").AddEdge("ask", graph.End).
			Compile(opts...)
		require.NoError(t, err)
		return g, &fromInterrupt
	}
	for _, drop := range []bool{false, true} {
		for _, ctx := range []context.Context{context.Background(), t.Context()} {
			g, fromInterrupt := build(drop)
			out, err := g.Invoke(ctx, promState{})
			require.ErrorIs(t, *fromInterrupt, graph.ErrNoCheckpointer)
			require.Contains(t, (*fromInterrupt).Error(), "node ask")
			var intr *graph.Interrupted
			require.False(t, errors.As(err, &intr), "an *Interrupted no run could resume")
			require.ErrorIs(t, err, graph.ErrNoCheckpointer)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, "ask", ne.Node)
			require.Equal(t, 1, ne.Attempts, "not retried")
			require.Empty(t, out.L.Get())
		}
	}

	g, _ := build(false, graph.WithCheckpointer(checkpoint.NewMemory()))
	_, err := g.Invoke(context.Background(), promState{}, graph.WithThread("1"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	out, err := g.Resume(context.Background(), graph.Command[promState]{Resume: "yes"}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Equal(t, []string{"asked"}, out.L.Get())
}

// A graph with static breakpoints refuses to run without a checkpointer,
// naming the breakpoints, before any node runs. (Compile cannot refuse
// them: compiled without a checkpointer, the graph may run as the
// subgraph of a graph with one.)
func TestPromiseBreakpointsWithoutCheckpointer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  graph.CompileOption
		want string
	}{
		{"before", graph.WithInterruptBefore("b"), "before b"},
		{"after", graph.WithInterruptAfter("a", "b"), "after a, b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := 0
			n := func(context.Context, promState) (promState, error) { ran++; return promState{}, nil }
			g, err := graph.New[promState]().
				AddNode("a", n).AddNode("b", n).
				AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", graph.End).
				Compile(tc.opt)
			require.NoError(t, err)
			_, err = g.Invoke(context.Background(), promState{})
			require.ErrorIs(t, err, graph.ErrNoCheckpointer)
			require.Contains(t, err.Error(), tc.want)
			require.Zero(t, ran)
		})
	}
}
