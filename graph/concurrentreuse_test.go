package graph_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// meeting is where the tasks of one step of one run meet: each waits for
// all of them, so a step completes only if its tasks all run at once (the
// scheduler's supervisor must give the blocked ones goroutines).
type meeting struct {
	mu    sync.Mutex
	steps map[int]*sync.WaitGroup
	width int
}

func (m *meeting) meet(step int) {
	m.mu.Lock()
	wg := m.steps[step]
	if wg == nil {
		wg = new(sync.WaitGroup)
		wg.Add(m.width)
		m.steps[step] = wg
	}
	m.mu.Unlock()
	wg.Done()
	wg.Wait()
}

type reuseState struct {
	Meet  state.Value[*meeting]
	Step  state.Value[int]
	Steps state.Value[int]
	Ran   state.Append[string]
}

// meetingGraph fans out to width nodes that meet, then loops back until
// Steps steps of them ran.
func meetingGraph(t *testing.T, width int) *graph.Graph[reuseState] {
	b := graph.New[reuseState]()
	var names []string
	for i := range width {
		name := "n" + strconv.Itoa(i)
		names = append(names, name)
		b.AddNode(name, func(_ context.Context, s reuseState) (reuseState, error) {
			s.Meet.Get().meet(s.Step.Get())
			return reuseState{Ran: state.Items(name + "@" + strconv.Itoa(s.Step.Get()))}, nil
		})
	}
	addStepLoop(b, names...)
	g, err := b.Compile()
	require.NoError(t, err)
	return g
}

// addStepLoop adds the node "next", which starts the run, counts the
// steps and sends the run to every one of names until Steps steps of them
// ran, and the edges from each of names back to it.
func addStepLoop(b *graph.Builder[reuseState], names ...string) {
	for _, name := range names {
		b.AddEdge(name, "next")
	}
	b.AddNode("next", func(_ context.Context, s reuseState) (reuseState, error) {
		return reuseState{Step: state.Set(s.Step.Get() + 1)}, nil
	})
	b.AddEdge(graph.Start, "next")
	b.AddBranch("next", func(_ context.Context, s reuseState) (graph.Route[reuseState], error) {
		if s.Step.Get() > s.Steps.Get() {
			return graph.To[reuseState](graph.End), nil
		}
		return graph.To[reuseState](names...), nil
	}, graph.WithDestinations(append([]string{graph.End}, names...)...))
}

// Runs of one compiled graph from many goroutines at once, each with
// several concurrent steps whose tasks can finish only together: every run
// runs every task of every step of its own, streaming or not, with a
// context that can be cancelled or not.
func TestManyRunsOfOneGraphEachRunEveryConcurrentStepOfTheirOwn(t *testing.T) {
	const width, steps, runners, runs = 3, 4, 6, 8
	g := meetingGraph(t, width)
	want := func() []string {
		var w []string
		for step := 1; step <= steps; step++ {
			for i := range width {
				w = append(w, "n"+strconv.Itoa(i)+"@"+strconv.Itoa(step))
			}
		}
		return w
	}()
	input := func() reuseState {
		return reuseState{Meet: state.Set(&meeting{steps: map[int]*sync.WaitGroup{}, width: width}), Steps: state.Set(steps)}
	}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) (reuseState, error)
	}{
		{"invoke", func(ctx context.Context) (reuseState, error) {
			return g.Invoke(context.WithoutCancel(ctx), input())
		}},
		{"invoke with a cancellable context", func(ctx context.Context) (reuseState, error) {
			return g.Invoke(ctx, input())
		}},
		{"stream", func(ctx context.Context) (reuseState, error) {
			var last reuseState
			for ev, err := range g.Stream(ctx, input(), graph.WithStreamModes(graph.ModeValues)) {
				if err != nil {
					return last, err
				}
				last = ev.Payload.(reuseState)
			}
			return last, nil
		}},
		{"invoke with a concurrency limit", func(ctx context.Context) (reuseState, error) {
			return g.Invoke(ctx, input(), graph.WithMaxConcurrency(width))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, runners*runs)
			for range runners {
				wg.Go(func() {
					for range runs {
						out, err := tc.run(t.Context())
						if err == nil && !assertSameElements(want, out.Ran.Get()) {
							err = errUnexpected(out.Ran.Get())
						}
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

type unexpectedRan []string

func (u unexpectedRan) Error() string { return "unexpected tasks ran: " + strconv.Quote(fmtList(u)) }

func errUnexpected(ran []string) error { return unexpectedRan(ran) }

func fmtList(l []string) string {
	s := ""
	for i, x := range l {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

func assertSameElements(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	seen := map[string]int{}
	for _, w := range want {
		seen[w]++
	}
	for _, g := range got {
		seen[g]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

type keptCtxState struct {
	Step state.Value[int]
}

// The tasks of each concurrent step get a context of their own: one a
// node kept from an earlier step (or an earlier run of the graph) is
// cancelled by the time a later step runs, and is not the later step's.
func TestAConcurrentStepsContextIsItsOwnAndEndsWithIt(t *testing.T) {
	var mu sync.Mutex
	kept := map[int]context.Context{} // by step
	var problems []string
	b := graph.New[keptCtxState]()
	for _, n := range []string{"a", "b"} {
		b.AddNode(n, func(ctx context.Context, s keptCtxState) (keptCtxState, error) {
			mu.Lock()
			defer mu.Unlock()
			step := s.Step.Get()
			if k := kept[step]; k == nil {
				kept[step] = ctx
			}
			for st, k := range kept {
				switch {
				case st < step && k.Err() == nil:
					problems = append(problems, "step "+strconv.Itoa(st)+"'s context still live in step "+strconv.Itoa(step))
				case st < step && k.Done() == ctx.Done():
					problems = append(problems, "step "+strconv.Itoa(step)+" shares step "+strconv.Itoa(st)+"'s context")
				}
			}
			if ctx.Err() != nil {
				problems = append(problems, "step "+strconv.Itoa(step)+" runs with a cancelled context")
			}
			return keptCtxState{}, nil
		})
		b.AddEdge(n, "next")
	}
	b.AddNode("next", func(_ context.Context, s keptCtxState) (keptCtxState, error) {
		return keptCtxState{Step: state.Set(s.Step.Get() + 1)}, nil
	})
	b.AddEdge(graph.Start, "next")
	b.AddBranch("next", func(_ context.Context, s keptCtxState) (graph.Route[keptCtxState], error) {
		if s.Step.Get() >= 6 {
			return graph.To[keptCtxState](graph.End), nil
		}
		return graph.To[keptCtxState]("a", "b"), nil
	}, graph.WithDestinations(graph.End, "a", "b"))
	g, err := b.Compile()
	require.NoError(t, err)
	for run := range 3 {
		_, err := g.Invoke(context.Background(), keptCtxState{Step: state.Set(run * 10)})
		require.NoError(t, err)
	}
	require.Empty(t, problems)
	for st, k := range kept {
		require.Error(t, k.Err(), "step %d's context after its run", st)
	}
}

type exitState struct {
	Exit state.Value[bool]
	Ran  state.Append[string]
}

// A run whose concurrent step ends with runtime.Goexit (on whichever
// goroutine the scheduler ran the node) leaves the graph as it was: the
// runs after it, of the same compiled graph and from many goroutines, run
// every task of their concurrent steps.
func TestRunsAfterOneWhoseNodeCalledGoexitRunEveryTask(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() context.Context
		opts []graph.RunOption
	}{
		{"on the run's goroutines", context.Background, nil},
		{"apart from the run's goroutines", func() context.Context { return t.Context() }, nil},
		{"one at a time", context.Background, []graph.RunOption{graph.WithMaxConcurrency(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := graph.New[exitState]()
			names := []string{"a", "b", "c", "d"}
			for _, n := range names {
				b.AddNode(n, func(_ context.Context, s exitState) (exitState, error) {
					if s.Exit.Get() && n == "b" {
						runtime.Goexit()
					}
					return exitState{Ran: state.Items(n)}, nil
				})
				b.AddEdge(graph.Start, n)
			}
			g, err := b.Compile()
			require.NoError(t, err)
			for range 5 {
				done := make(chan struct{})
				go func() {
					defer close(done)
					// Unwound if the node ran on this goroutine; otherwise
					// the run fails.
					_, err := g.Invoke(tc.ctx(), exitState{Exit: state.Set(true)}, tc.opts...)
					if !errors.Is(err, graph.ErrGoexit) {
						t.Errorf("the run whose node called Goexit: %v", err)
					}
				}()
				<-done
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						out, err := g.Invoke(tc.ctx(), exitState{}, tc.opts...)
						if !(err == nil && assertSameElements(names, out.Ran.Get())) {
							t.Errorf("a run after the Goexit: %v, ran %v", err, out.Ran.Get())
						}
					})
				}
				wg.Wait()
			}
		})
	}
}

// A node of a concurrent step abandoned at its timeout, still running and
// reading its context while the next steps and the next runs of the graph
// run, sees that context cancelled, and holds nothing up: every later run
// completes, and WithAbandonedNodes counts it until it returns.
func TestAnAbandonedNodeOfAConcurrentStepOutlivesItsStepHarmlessly(t *testing.T) {
	release := make(chan struct{})
	abandonedSaw := make(chan error, 16)
	b := graph.New[reuseState]()
	// The timeout abandons the first run's stubborn node; every later
	// run's must return within it on a machine however loaded (5 ms
	// failed there once), hence a second.
	b.AddNode("stubborn", func(ctx context.Context, s reuseState) (reuseState, error) {
		if s.Step.Get() == 1 && s.Steps.Get() == 3 {
			<-release // ignores ctx
			abandonedSaw <- ctx.Err()
		}
		return reuseState{Ran: state.Items("stubborn")}, nil
	}, graph.WithNodeTimeout(time.Second), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 1}))
	b.AddNode("quick", func(context.Context, reuseState) (reuseState, error) {
		return reuseState{Ran: state.Items("quick")}, nil
	})
	addStepLoop(b, "stubborn", "quick")
	g, err := b.Compile()
	require.NoError(t, err)

	var abandoned sync.WaitGroup
	_, err = g.Invoke(t.Context(), reuseState{Steps: state.Set(3)}, graph.WithAbandonedNodes(&abandoned))
	var te *graph.NodeTimeoutError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "stubborn", te.Node)
	for range 10 {
		out, err := g.Invoke(t.Context(), reuseState{Steps: state.Set(4)})
		require.NoError(t, err)
		require.Len(t, out.Ran.Get(), 8)
	}
	close(release)
	abandoned.Wait()
	require.Error(t, <-abandonedSaw, "the abandoned node's context")
}
