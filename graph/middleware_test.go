package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type mwState struct {
	Log    state.Append[string]
	Note   state.Value[string]
	Answer state.Value[string]
}

// tracing returns a middleware appending "name>" before and "<name" after
// the call it wraps to *calls.
func tracing(name string, calls *[]string) graph.Middleware[mwState] {
	return func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			*calls = append(*calls, name+">"+graph.NodeName(ctx))
			c, err := next(ctx, s)
			*calls = append(*calls, "<"+name)
			return c, err
		}
	}
}

func mwLog(name string) graph.NodeFunc[mwState] {
	return func(ctx context.Context, s mwState) (mwState, error) {
		var out mwState
		out.Log.Append(name)
		return out, nil
	}
}

func TestMiddlewareWrapsInTheOrderGiven(t *testing.T) {
	var calls []string
	b := graph.New[mwState]()
	b.Use(tracing("a", &calls), tracing("b", &calls))
	b.AddNode("n", func(ctx context.Context, s mwState) (mwState, error) {
		calls = append(calls, "node")
		return s, nil
	}, graph.WithMiddleware(tracing("d", &calls), tracing("e", &calls)))
	b.Use(tracing("c", &calls)) // after the node was added: wraps it too
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"a>n", "b>n", "c>n", "d>n", "e>n", "node", "<e", "<d", "<c", "<b", "<a"}, calls)
}

func TestMiddlewareWrapsNodesAddedAfterUse(t *testing.T) {
	var calls []string
	b := graph.New[mwState]()
	b.AddNode("first", mwLog("first"))
	b.Use(tracing("m", &calls))
	b.AddNode("second", mwLog("second"))
	b.AddEdge(graph.Start, "first").AddEdge("first", "second")
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"first", "second"}, out.Log.Get())
	require.Equal(t, []string{"m>first", "<m", "m>second", "<m"}, calls)
}

func TestMiddlewareCanWriteBeforeAndAfterTheNode(t *testing.T) {
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			s.Note.Set("written before the node")
			c, err := next(ctx, s)
			c.Update.Log.Append("after")
			return c, err
		}
	})
	b.AddNode("n", func(ctx context.Context, s mwState) (mwState, error) {
		s.Answer.Set("node ran")
		return s, nil // returns the writes it was given with its own
	})
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, "node ran", out.Answer.Get())
	require.Equal(t, "written before the node", out.Note.Get())
	require.Equal(t, []string{"after"}, out.Log.Get())
}

// catching turns a node's error into an answer, letting pauses through.
func catching(seen *[]error) graph.Middleware[mwState] {
	return func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			c, err := next(ctx, s)
			if err == nil || graph.IsInterrupt(err) {
				return c, err
			}
			*seen = append(*seen, err)
			var out mwState
			out.Answer.Set("sorry: " + err.Error())
			return graph.Command[mwState]{Update: out}, nil
		}
	}
}

func TestMiddlewareSeesTheErrorAfterTheNodesRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int
		wantCalls int32
		wantSeen  int
	}{
		{"a retry succeeds", 2, 3, 0},
		{"the retries run out", 5, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			var seen []error
			b := graph.New[mwState]()
			b.Use(catching(&seen))
			b.AddNode("flaky", func(ctx context.Context, s mwState) (mwState, error) {
				if int(calls.Add(1)) <= tc.failures {
					return s, errors.New("boom")
				}
				return mwLog("flaky")(ctx, s)
			}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3}))
			b.AddEdge(graph.Start, "flaky")
			g, err := b.Compile()
			require.NoError(t, err)
			out, err := g.Invoke(t.Context(), mwState{})
			require.NoError(t, err)
			require.Equal(t, tc.wantCalls, calls.Load())
			require.Len(t, seen, tc.wantSeen)
			if tc.wantSeen == 1 {
				var ne *graph.NodeError
				require.ErrorAs(t, seen[0], &ne)
				require.Equal(t, "flaky", ne.Node)
				require.Equal(t, 3, ne.Attempts)
				require.Equal(t, "sorry: "+seen[0].Error(), out.Answer.Get())
			}
		})
	}
}

func TestAnErrorAMiddlewareReturnsFailsTheTaskNamingTheNode(t *testing.T) {
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			return graph.Command[mwState]{}, errors.New("refused by policy")
		}
	})
	b.AddNode("n", mwLog("n"))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), mwState{})
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "n", ne.Node)
	require.ErrorContains(t, err, "refused by policy")
}

func TestAPanicInAMiddlewareFailsTheTask(t *testing.T) {
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			panic("middleware bug")
		}
	})
	b.AddNode("n", mwLog("n"))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), mwState{})
	var pe *graph.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "middleware bug", pe.Value)
}

func TestAnInterruptInsideAWrappedNodePausesAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mw   func(*[]error) graph.Middleware[mwState]
	}{
		{"a middleware that lets the pause through", catching},
		{"a middleware that swallows every error", func(seen *[]error) graph.Middleware[mwState] {
			return func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
				return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
					c, err := next(ctx, s)
					if err != nil {
						*seen = append(*seen, err)
					}
					return c, nil
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []error
			b := graph.New[mwState]()
			b.Use(tc.mw(&seen))
			b.AddNode("ask", func(ctx context.Context, s mwState) (mwState, error) {
				answer, err := graph.InterruptAs[string](ctx, "name?")
				if err != nil {
					return s, err
				}
				var out mwState
				out.Answer.Set("hello " + answer)
				return out, nil
			})
			b.AddEdge(graph.Start, "ask")
			g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), mwState{}, graph.WithThread("t"))
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			require.Equal(t, "name?", intr.Interrupts[0].Value)
			for _, e := range seen {
				require.True(t, graph.IsInterrupt(e), "the middleware saw the pause as an interrupt: %v", e)
			}
			out, err := g.Resume(t.Context(), graph.Command[mwState]{Resume: "ada"}, graph.WithThread("t"))
			require.NoError(t, err)
			require.Equal(t, "hello ada", out.Answer.Get())
		})
	}
}

func TestAMiddlewareCanRouteAPlainNodeElsewhere(t *testing.T) {
	b := graph.New[mwState]()
	b.AddNode("work", func(ctx context.Context, s mwState) (mwState, error) {
		return s, errors.New("broken")
	}, graph.WithDestinations("recover"), graph.WithMiddleware(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			c, err := next(ctx, s)
			if err != nil {
				var out mwState
				out.Note.Set(err.Error())
				return graph.Command[mwState]{Update: out, Goto: []string{"recover"}}, nil
			}
			return c, nil
		}
	}))
	b.AddNode("recover", mwLog("recover"))
	b.AddNode("next", mwLog("next"))
	b.AddEdge(graph.Start, "work").AddEdge("work", "next")
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"recover", "next"}, out.Log.Get(), "Goto adds to the node's edges, as a Command does")
	require.Contains(t, out.Note.Get(), "broken")
}

func TestACacheHitSkipsTheMiddleware(t *testing.T) {
	var calls []string
	b := graph.New[mwState]()
	b.Use(tracing("m", &calls))
	b.AddNode("n", mwLog("n"), graph.WithCachePolicy(graph.CachePolicy{}))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile(graph.WithCache(graph.NewMemoryCache()))
	require.NoError(t, err)
	for range 2 {
		out, err := g.Invoke(t.Context(), mwState{})
		require.NoError(t, err)
		require.Equal(t, []string{"n"}, out.Log.Get())
	}
	require.Equal(t, []string{"m>n", "<m"}, calls, "the second run's result came from the cache")
}

func TestCancellationInsideAMiddlewareSurfacesAsTheContextsError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			cancel()
			<-ctx.Done()
			return graph.Command[mwState]{}, fmt.Errorf("gave up: %w", ctx.Err())
		}
	})
	b.AddNode("n", mwLog("n"))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(ctx, mwState{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestMiddlewareThatCannotWrapANodeFailsCompileNamingIt(t *testing.T) {
	type other struct{ X state.Value[int] }
	otherMW := func(next graph.CommandFunc[other]) graph.CommandFunc[other] { return next }
	for _, tc := range []struct {
		name  string
		build func(b *graph.Builder[mwState])
		want  string
	}{
		{"another state type", func(b *graph.Builder[mwState]) {
			b.AddNode("n", mwLog("n"), graph.WithMiddleware[other](otherMW))
		}, `node "n": WithMiddleware is for state graph_test.other`},
		{"a nil middleware on a node", func(b *graph.Builder[mwState]) {
			b.AddNode("n", mwLog("n"), graph.WithMiddleware[mwState](nil))
		}, `node "n": WithMiddleware: nil middleware`},
		{"a nil middleware for the graph", func(b *graph.Builder[mwState]) {
			b.AddNode("n", mwLog("n"))
			b.Use(nil)
		}, "Use: nil middleware"},
		{"a node with its own input", func(b *graph.Builder[mwState]) {
			b.AddNode("n", mwLog("n"))
			graph.AddNodeWithInput(b, "item", func(ctx context.Context, in int) (mwState, error) { return mwState{}, nil },
				graph.WithMiddleware(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] { return next }))
		}, `node "item" takes its own input (int); WithMiddleware wraps only nodes that take the state`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := graph.New[mwState]()
			tc.build(b)
			b.AddEdge(graph.Start, "n")
			_, err := b.Compile()
			var ce *graph.CompileError
			require.ErrorAs(t, err, &ce)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestUseLeavesNodesWithTheirOwnInputUnwrapped(t *testing.T) {
	var calls []string
	b := graph.New[mwState]()
	b.Use(tracing("m", &calls))
	b.AddBranch(graph.Start, func(ctx context.Context, s mwState) (graph.Route[mwState], error) {
		return graph.Route[mwState]{Sends: []graph.Send[mwState]{graph.SendInput[mwState]("item", "x")}}, nil
	})
	graph.AddNodeWithInput(b, "item", func(ctx context.Context, in string) (mwState, error) {
		var out mwState
		out.Log.Append("item " + in)
		return out, nil
	})
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"item x"}, out.Log.Get())
	require.Empty(t, calls)
}

func TestEachCallOfNextGetsTheWholeRetryPolicy(t *testing.T) {
	var calls atomic.Int32
	var attempts []int
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			var c graph.Command[mwState]
			var err error
			for range 2 {
				c, err = next(ctx, s)
				var ne *graph.NodeError
				require.ErrorAs(t, err, &ne)
				attempts = append(attempts, ne.Attempts)
			}
			return c, err
		}
	})
	b.AddNode("n", func(ctx context.Context, s mwState) (mwState, error) {
		calls.Add(1)
		return s, errors.New("always")
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), mwState{})
	require.Error(t, err)
	require.Equal(t, int32(4), calls.Load())
	require.Equal(t, []int{2, 2}, attempts)
}

type mwKey struct{}

// A middleware may hand the node a context derived from its own: the
// node's events still reach the stream, and its runtime is still found.
func TestANodeGivenADerivedContextStillStreams(t *testing.T) {
	b := graph.New[mwState]()
	b.Use(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			return next(context.WithValue(ctx, mwKey{}, "derived"), s)
		}
	})
	b.AddNode("n", func(ctx context.Context, s mwState) (mwState, error) {
		graph.StreamWriter(ctx)(fmt.Sprintf("%v from %s", ctx.Value(mwKey{}), graph.NodeName(ctx)))
		return s, nil
	})
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile()
	require.NoError(t, err)
	var custom []any
	for ev, err := range g.Stream(t.Context(), mwState{}, graph.WithStreamModes(graph.ModeCustom)) {
		require.NoError(t, err)
		custom = append(custom, ev.Payload)
	}
	require.Equal(t, []any{"derived from n"}, custom)
}

// BenchmarkMiddleware runs a 10-step chain with no middleware, one and
// three pass-through middleware around every node: what the feature costs
// when used (unused, it is one length check per task).
func BenchmarkMiddleware(b *testing.B) {
	pass := func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) { return next(ctx, s) }
	}
	for _, n := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("middleware=%d", n), func(b *testing.B) {
			gb := graph.New[mwState]()
			for range n {
				gb.Use(pass)
			}
			prev := graph.Start
			for i := range 10 {
				name := fmt.Sprintf("n%d", i)
				gb.AddNode(name, func(ctx context.Context, s mwState) (mwState, error) {
					s.Note.Set("x")
					return s, nil
				})
				gb.AddEdge(prev, name)
				prev = name
			}
			g, err := gb.Compile()
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Invoke(ctx, mwState{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A middleware that stops waiting for next (a deadline of its own) does
// not corrupt the run: the task ends when that call returns, its result
// is dropped, a later call of next fails, and the next node's writes land.
func TestAMiddlewareThatAbandonsNextCorruptsNothing(t *testing.T) {
	release := make(chan struct{})
	late := make(chan error, 1)
	b := graph.New[mwState]()
	b.AddNode("slow", func(ctx context.Context, s mwState) (mwState, error) {
		<-release
		var out mwState
		out.Log.Append("slow finished")
		return out, nil
	}, graph.WithMiddleware(func(next graph.CommandFunc[mwState]) graph.CommandFunc[mwState] {
		return func(ctx context.Context, s mwState) (graph.Command[mwState], error) {
			go func() {
				_, _ = next(ctx, s)
				_, err := next(ctx, s) // after the middleware returned
				late <- err
			}()
			close(release) // the node may finish while the runtime moves on
			var out mwState
			out.Note.Set("gave up")
			return graph.Command[mwState]{Update: out}, nil
		}
	}))
	b.AddNode("after", mwLog("after"))
	b.AddEdge(graph.Start, "slow").AddEdge("slow", "after")
	g, err := b.Compile()
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"after"}, out.Log.Get(), "the abandoned call's result is dropped; the next node's write lands")
	require.Equal(t, "gave up", out.Note.Get())
	require.ErrorContains(t, <-late, "next was called after the middleware returned")
}

func TestAFallbackAfterTheNodeFailedIsNotCached(t *testing.T) {
	var calls atomic.Int32
	var seen []error
	b := graph.New[mwState]()
	b.Use(catching(&seen))
	b.AddNode("n", func(ctx context.Context, s mwState) (mwState, error) {
		if calls.Add(1) == 1 {
			return s, errors.New("transient")
		}
		return mwLog("n")(ctx, s)
	}, graph.WithCachePolicy(graph.CachePolicy{}))
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile(graph.WithCache(graph.NewMemoryCache()))
	require.NoError(t, err)
	first, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Contains(t, first.Answer.Get(), "sorry")
	second, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"n"}, second.Log.Get(), "the node ran again: the fallback was not cached")
	third, err := g.Invoke(t.Context(), mwState{})
	require.NoError(t, err)
	require.Equal(t, []string{"n"}, third.Log.Get())
	require.Equal(t, int32(2), calls.Load(), "the successful result was cached")
}
