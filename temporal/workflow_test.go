package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// A chain's steps have one task each: each runs in the step activity
// that ends its step, after one that plans the first.
func TestEachTaskOfAChainIsOneActivity(t *testing.T) {
	_, st := runOnTemporal(t, graphCase{build: chain(10)})
	require.Equal(t, 10, st.Steps)
	require.Equal(t, 11, st.Activities)
	require.Equal(t, 10, st.Step)
}

func TestEachSuperstepIsOneActivity(t *testing.T) {
	_, st := runOnTemporal(t, graphCase{build: chain(10)}, agtemporal.WithStepsPerActivity(1))
	require.Equal(t, 10, st.Steps)
	require.Equal(t, 10, st.Activities)
	require.Equal(t, 10, st.Step)
}

func TestStepsPerActivityBatchesSupersteps(t *testing.T) {
	for _, tc := range []struct{ per, activities int }{{2, 4}, {3, 4}, {5, 2}, {10, 1}, {20, 1}} {
		t.Run(fmt.Sprint(tc.per), func(t *testing.T) {
			_, st := runOnTemporal(t, graphCase{build: chain(10)}, agtemporal.WithStepsPerActivity(tc.per))
			require.Equal(t, tc.activities, st.Activities)
			require.Equal(t, 10, st.Step)
		})
	}
}

// pausedStatus runs c until its first pause and returns what the state
// query answers then, and after the run.
func pausedStatus(t *testing.T, c graphCase) (paused, final agtemporal.Status) {
	t.Helper()
	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&paused))
		for _, in := range paused.Interrupts {
			b, _ := json.Marshal(c.answers[in.Node])
			env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: in.ID, Value: b})
		}
	}, time.Hour)
	in, err := w.Input("t", c.input)
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	v, err := env.QueryWorkflow(agtemporal.QueryState)
	require.NoError(t, err)
	require.NoError(t, v.Get(&final))
	return paused, final
}

func TestQueryReturnsStateAndPendingInterrupts(t *testing.T) {
	paused, final := pausedStatus(t, graphCase{build: askGraph("ask"), answers: map[string]string{"ask": "yes"}})
	require.True(t, paused.Paused())
	require.False(t, paused.Done)
	require.Len(t, paused.Interrupts, 1)
	require.Equal(t, "ask", paused.Interrupts[0].Node)
	require.NotEmpty(t, paused.Interrupts[0].ID)
	require.JSONEq(t, `"approve ask?"`, string(paused.Interrupts[0].Value))
	require.Equal(t, []string{"ask"}, paused.Next)
	var s St
	require.NoError(t, json.Unmarshal(paused.Values, &s))
	require.Equal(t, []string{"before"}, s.Log.Get())

	require.True(t, final.Done)
	require.Empty(t, final.Interrupts)
	require.NoError(t, json.Unmarshal(final.Values, &s))
	require.Equal(t, []string{"before", "ask got yes", "after"}, s.Log.Get())
}

func TestAnswerToAnUnknownInterruptIsDropped(t *testing.T) {
	g, err := askGraph("ask")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: "no-such-interrupt", Value: json.RawMessage(`"forged"`)})
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: "", Value: json.RawMessage(`"forged"`)})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.True(t, st.Paused(), "a forged answer resumed the run")
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"real"`)})
	}, 2*time.Hour)
	in, err := w.Input("t", St{})
	require.NoError(t, err)
	env.ExecuteWorkflow(w.Name(), in)
	require.NoError(t, env.GetWorkflowError())
	s := finalState(t, env, w)
	require.Equal(t, []string{"before", "ask got real", "after"}, s.Log.Get())
}

func TestLargeStateTravelsByReference(t *testing.T) {
	c := caseNamed(t, "state of 150 KB")
	_, st := runOnTemporal(t, c)
	require.Nil(t, st.Values, "a 150 KB state was inlined")
	require.Greater(t, st.Size, 150<<10)
	p, err := converter.GetDefaultDataConverter().ToPayload(st)
	require.NoError(t, err)
	t.Logf("by reference: state %d bytes, workflow result payload %d bytes", st.Size, len(p.GetData()))
	require.Less(t, len(p.GetData()), 1<<10)

	_, inline := runOnTemporal(t, c, agtemporal.WithInlineStateLimit(1<<20))
	require.Len(t, inline.Values, inline.Size)
	p, err = converter.GetDefaultDataConverter().ToPayload(inline)
	require.NoError(t, err)
	t.Logf("inline: state %d bytes, workflow result payload %d bytes", inline.Size, len(p.GetData()))
}

func TestNodeFailureIsANonRetryableTypedError(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[St]()
	b.AddNode("boom", func(ctx context.Context, s St) (St, error) {
		runs.Add(1)
		return St{}, errors.New("no luck")
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
	b.AddEdge(graph.Start, "boom")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, env := register(t, g)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	err = env.GetWorkflowError()
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, agtemporal.ErrTypeNode, app.Type())
	require.True(t, app.NonRetryable())
	nodeErr, ok := agtemporal.AsNodeError(err)
	require.True(t, ok)
	require.Equal(t, "boom", nodeErr.Node)
	require.Equal(t, 2, nodeErr.Attempts)
	require.EqualError(t, nodeErr.Err, "no luck")
	require.Equal(t, int32(2), runs.Load(), "the graph's retry policy ran, and Temporal did not retry on top of it")
}

func TestNodeTimeoutSurfacesAsErrNodeTimeout(t *testing.T) {
	b := graph.New[St]()
	b.AddNode("slow", func(ctx context.Context, s St) (St, error) {
		<-ctx.Done()
		return St{}, ctx.Err()
	}, graph.WithNodeTimeout(time.Millisecond))
	b.AddEdge(graph.Start, "slow")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, env := register(t, g)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	nodeErr, ok := agtemporal.AsNodeError(env.GetWorkflowError())
	require.True(t, ok)
	require.Equal(t, "slow", nodeErr.Node)
	require.ErrorIs(t, nodeErr, graph.ErrNodeTimeout)
}

func TestRecursionLimitFailsTheWorkflowLikeInvoke(t *testing.T) {
	g, err := chain(10)(checkpoint.NewMemory())
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), St{}, graph.WithThread("t"), graph.WithRecursionLimit(4))
	var rec *graph.RecursionError
	require.ErrorAs(t, err, &rec)
	snap, err := g.GetState(context.Background(), graph.WithThread("t"))
	require.NoError(t, err)

	for _, per := range []int{0, 1, 2, 3, 4} {
		t.Run(perName(per), func(t *testing.T) {
			g, err := chain(10)(checkpoint.NewMemory())
			require.NoError(t, err)
			w, env := register(t, g, agtemporal.WithRecursionLimit(4), perOption(per))
			env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
			var app *sdktemporal.ApplicationError
			require.ErrorAs(t, env.GetWorkflowError(), &app)
			require.Equal(t, agtemporal.ErrTypeRecursion, app.Type())
			remote, err := g.GetState(context.Background(), graph.WithThread("t"))
			require.NoError(t, err)
			require.Equal(t, snap.Next, remote.Next, "the run stopped after another step than in process")
		})
	}
}

func TestBadInputFailsWithoutRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   agtemporal.Input
	}{
		{"no thread", agtemporal.Input{}},
		{"unknown field", agtemporal.Input{Thread: "t", Writes: map[string]json.RawMessage{"Nope": json.RawMessage(`1`)}}},
		{"write of the wrong type", agtemporal.Input{Thread: "t", Writes: map[string]json.RawMessage{"N": json.RawMessage(`"ten"`)}}},
		{"continue of a thread with no checkpoint", agtemporal.Input{Thread: "t", Continue: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := chain(2)(checkpoint.NewMemory())
			require.NoError(t, err)
			w, env := register(t, g)
			env.ExecuteWorkflow(w.Name(), tc.in)
			var app *sdktemporal.ApplicationError
			require.ErrorAs(t, env.GetWorkflowError(), &app)
			require.Equal(t, agtemporal.ErrTypeGraph, app.Type())
			require.True(t, app.NonRetryable())
		})
	}
}

func TestInputWritesRoundTrip(t *testing.T) {
	g, err := chain(1)(checkpoint.NewMemory())
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)
	in, err := w.Input("t", St{Log: state.Items("a", "b"), N: state.Delta(3), Mode: state.Set("")})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"Log", "N", "Mode"}, keys(in.Writes), "a write of a zero value (Mode) is a write")
	_, err = w.Input("", St{})
	require.ErrorIs(t, err, graph.ErrNoThread)
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// flakySaver is a memory saver whose checkpoint saves fail on the given
// calls of Put (counted from 1).
type flakySaver struct {
	*checkpoint.Memory
	mu    sync.Mutex
	puts  int
	fails map[int]bool
}

func (s *flakySaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	s.mu.Lock()
	s.puts++
	fail := s.fails[s.puts]
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("disk unplugged at put %d", s.puts)
	}
	return s.Memory.Put(ctx, cp)
}

func TestRetriedActivityRerunsOnlyUnfinishedTasks(t *testing.T) {
	// Put 1 saves the input, put 2 the step that applies it, put 3 the
	// step of a, put 4 the step of b1, b2 and b3 running in parallel, put
	// 5 the step of c. (A failed put 3 or 5 re-runs a or c: the engine
	// saves the writes of a step's lone task with the step's checkpoint
	// only.)
	for _, failAt := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("put %d fails", failAt), func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string]int{}
			node := func(name string) graph.NodeFunc[St] {
				return func(ctx context.Context, s St) (St, error) {
					mu.Lock()
					ran[name]++
					mu.Unlock()
					var o St
					o.Log.Append(name)
					return o, nil
				}
			}
			saver := &flakySaver{Memory: checkpoint.NewMemory(), fails: map[int]bool{failAt: true}}
			b := graph.New[St]()
			b.AddNode("a", node("a"))
			b.AddEdge(graph.Start, "a")
			for _, n := range []string{"b1", "b2", "b3"} {
				b.AddNode(n, node(n))
				b.AddEdge("a", n)
				b.AddEdge(n, "c")
			}
			b.AddNode("c", node("c"))
			g, err := b.Compile(graph.WithCheckpointer(saver))
			require.NoError(t, err)
			w, err := agtemporal.New("graph", g, agtemporal.WithActivityOptions(workflow.ActivityOptions{
				StartToCloseTimeout: time.Minute,
				RetryPolicy:         &sdktemporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3},
			}))
			require.NoError(t, err)
			env := newEnv()
			w.Register(env)
			env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
			require.NoError(t, env.GetWorkflowError())
			var st agtemporal.Status
			require.NoError(t, env.GetWorkflowResult(&st))
			require.Empty(t, cmp.Diff(map[string]int{"a": 1, "b1": 1, "b2": 1, "b3": 1, "c": 1}, ran), "a task that finished ran again")
			s, err := w.Values(context.Background(), st)
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b1", "b2", "b3", "c"}, s.Log.Get())
		})
	}
}

func TestContinueResumesAFailedThread(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	var aRuns atomic.Int32
	b := graph.New[St]()
	b.AddNode("a", func(ctx context.Context, s St) (St, error) {
		aRuns.Add(1)
		return appendNode("a")(ctx, s)
	})
	b.AddNode("b", func(ctx context.Context, s St) (St, error) {
		if broken.Load() {
			return St{}, errors.New("service down")
		}
		return appendNode("b")(ctx, s)
	})
	b.AddEdge(graph.Start, "a")
	b.AddEdge("a", "b")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)

	env := newEnv()
	w.Register(env)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	_, ok := agtemporal.AsNodeError(env.GetWorkflowError())
	require.True(t, ok)

	broken.Store(false)
	env = newEnv()
	w.Register(env)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t", Continue: true})
	require.NoError(t, env.GetWorkflowError())
	s := finalState(t, env, w)
	require.Equal(t, []string{"a", "b"}, s.Log.Get())
	require.Equal(t, int32(1), aRuns.Load())
}

// perName names a test of a run with perOption(per).
func perName(per int) string {
	if per == 0 {
		return "tasks"
	}
	return fmt.Sprint(per, " steps")
}

// perOption runs tasks as activities for per = 0, per supersteps per
// activity otherwise.
func perOption(per int) agtemporal.Option {
	if per == 0 {
		return nil
	}
	return agtemporal.WithStepsPerActivity(per)
}

// Events reach the worker-side sink as Stream yields them. With tasks as
// activities, a step that pauses sends no values event at the pause and
// the step that ends it no updates of tasks that sent theirs (Stream
// repeats them, marked Cached, when it resumes).
func TestEventsReachTheWorkerSideSinkLikeStream(t *testing.T) {
	for _, per := range []int{0, 1} {
		for _, c := range []graphCase{caseNamed(t, "join"), caseNamed(t, "send fan-out"), caseNamed(t, "interrupt and resume")} {
			t.Run(perName(per)+"/"+c.name, func(t *testing.T) {
				eventsLikeStream(t, c, per)
			})
		}
	}
}

func eventsLikeStream(t *testing.T, c graphCase, per int) {
	modes := graph.ModeValues | graph.ModeUpdates
	describe := func(ev graph.Event) string {
		if per == 0 && (ev.Mode == graph.ModeValues && len(ev.Interrupts) > 0 || ev.Mode == graph.ModeUpdates && ev.Cached) {
			return ""
		}
		return fmt.Sprintf("%s %d %s %v", ev.Mode, ev.Step, ev.Node, ev.Writes.Fields())
	}
	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	var want []string
	seq := g.Stream(context.Background(), c.input, graph.WithThread("t"), graph.WithStreamModes(modes))
	for range 3 {
		var intr *graph.Interrupted
		for ev, err := range seq {
			if errors.As(err, &intr) {
				break
			}
			require.NoError(t, err)
			if d := describe(ev); d != "" {
				want = append(want, d)
			}
		}
		if intr == nil {
			break
		}
		answers := map[string]any{}
		for _, in := range intr.Interrupts {
			answers[in.ID] = c.answers[in.Node]
		}
		seq = g.StreamResume(context.Background(), graph.Command[St]{ResumeMap: answers}, graph.WithThread("t"), graph.WithStreamModes(modes))
	}

	var mu sync.Mutex
	var got []string
	_, _ = runOnTemporal(t, c, perOption(per), agtemporal.WithEvents(modes, func(ctx context.Context, thread string, ev graph.Event) {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, "t", thread)
		if d := describe(ev); d != "" {
			got = append(got, d)
		}
	}))
	require.Equal(t, inStepOrder(want), inStepOrder(got))
}

// inStepOrder sorts each run of consecutive update events: tasks of one
// step finish in any order, and both Stream and the workflow report their
// updates as they finish.
func inStepOrder(events []string) []string {
	out := slices.Clone(events)
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(out[j], "updates ") {
			j++
		}
		slices.Sort(out[i:j])
		i = max(j, i+1)
	}
	return out
}

func TestRetryPolicyMapsGraphPolicy(t *testing.T) {
	got := agtemporal.RetryPolicy(graph.DefaultRetryPolicy())
	require.Equal(t, &sdktemporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
		MaximumInterval: 128 * time.Second, MaximumAttempts: 3}, got)
	require.Equal(t, &sdktemporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1, MaximumAttempts: 1},
		agtemporal.RetryPolicy(graph.RetryPolicy{}), "the zero policy never retries")
}

func TestLongRunContinuesAsNew(t *testing.T) {
	c := caseNamed(t, "loop of twelve steps")
	want := runInProcess(t, c)

	g, err := c.build(checkpoint.NewMemory())
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g, agtemporal.WithContinueAsNewAfter(5))
	require.NoError(t, err)
	in := agtemporal.Input{Thread: "t"}
	runs := 0
	var st agtemporal.Status
	for {
		runs++
		require.Less(t, runs, 10)
		env := newEnv()
		w.Register(env)
		env.ExecuteWorkflow(w.Name(), in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			require.Equal(t, w.Name(), can.WorkflowType.Name)
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
			require.True(t, in.Continue)
			continue
		}
		require.NoError(t, err)
		require.NoError(t, env.GetWorkflowResult(&st))
		break
	}
	require.Equal(t, 3, runs)
	require.Equal(t, 12, st.Steps)
	vals, err := w.Values(context.Background(), st)
	require.NoError(t, err)
	b, err := json.Marshal(vals)
	require.NoError(t, err)
	require.JSONEq(t, want.values, string(b))
}

func TestUpdateRejectsAnswersTheRunDoesNotWaitOn(t *testing.T) {
	g, err := askGraph("ask1", "ask2")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	var outcomes []string
	update := func(id, name string, value string) {
		env.UpdateWorkflow(agtemporal.UpdateResume, name, &testsuite.TestUpdateCallback{
			OnAccept: func() { outcomes = append(outcomes, name+": accepted") },
			OnReject: func(err error) { outcomes = append(outcomes, name+": rejected: "+err.Error()) },
			OnComplete: func(_ any, err error) {
				if err != nil {
					outcomes = append(outcomes, name+": failed: "+err.Error())
				}
			},
		}, agtemporal.ResumeSignal{ID: id, Value: json.RawMessage(value)})
	}
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.Len(t, st.Interrupts, 2)
		ids := map[string]string{}
		for _, in := range st.Interrupts {
			ids[in.Node] = in.ID
		}
		update("nope", "unknown", `"x"`)
		update("", "empty", `"x"`)
		update(ids["ask1"], "ask1", `"one"`)
		update(ids["ask1"], "ask1 again", `"uno"`)
		update(ids["ask2"], "ask2", `"two"`)
	}, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, outcomes, 5, "%q", outcomes)
	require.Contains(t, outcomes[0], "unknown: rejected: graph: no pending interrupt to answer")
	require.Contains(t, outcomes[1], "empty: rejected: graph: no pending interrupt to answer")
	require.Equal(t, "ask1: accepted", outcomes[2])
	require.Contains(t, outcomes[3], "ask1 again: rejected: temporal: interrupt")
	require.Equal(t, "ask2: accepted", outcomes[4])
	s := finalState(t, env, w)
	require.Equal(t, []string{"before", "ask1 got one", "ask2 got two", "after"}, s.Log.Get())
}

func TestRunRefusesAThreadAnotherRunWrote(t *testing.T) {
	g, err := askGraph("ask")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.True(t, st.Paused())
		// Another process starts a run of the same thread meanwhile.
		_, err = g.Invoke(context.Background(), St{Log: state.Items("intruder")}, graph.WithThread("t"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"yes"`)})
	}, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	var app *sdktemporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, agtemporal.ErrTypeGraph, app.Type())
	require.Contains(t, app.Error(), "written by another run")
}

func TestRunThatUsesExactlyItsRecursionLimitFinishes(t *testing.T) {
	for _, per := range []int{0, 1, 3} {
		t.Run(perName(per), func(t *testing.T) {
			g, err := chain(3)(checkpoint.NewMemory())
			require.NoError(t, err)
			w, env := register(t, g, agtemporal.WithRecursionLimit(3), perOption(per))
			env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
			require.NoError(t, env.GetWorkflowError())
			var st agtemporal.Status
			require.NoError(t, env.GetWorkflowResult(&st))
			require.Equal(t, 3, st.Steps)
		})
	}
}

func TestContinueResumesAThreadPausedElsewhere(t *testing.T) {
	g, err := askGraph("ask")(checkpoint.NewMemory())
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), St{}, graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr, "the in-process run pauses at ask")

	w, env := register(t, g)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.Len(t, st.Interrupts, 1)
		require.Equal(t, intr.Interrupts[0].ID, st.Interrupts[0].ID, "the interrupt ID is stable across processes")
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"later"`)})
	}, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t", Continue: true})
	require.NoError(t, env.GetWorkflowError())
	s := finalState(t, env, w)
	require.Equal(t, []string{"before", "ask got later", "after"}, s.Log.Get())
}

func TestRunContinuesAsNewWhenItsHistoryGrowsLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*testsuite.TestWorkflowEnvironment)
	}{
		{"history of 9 MB", func(env *testsuite.TestWorkflowEnvironment) { env.SetCurrentHistorySize(9 << 20) }},
		{"suggested by Temporal", func(env *testsuite.TestWorkflowEnvironment) { env.SetContinueAsNewSuggested(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := chain(3)(checkpoint.NewMemory())
			require.NoError(t, err)
			w, env := register(t, g)
			tc.set(env)
			env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
			var can *workflow.ContinueAsNewError
			require.ErrorAs(t, env.GetWorkflowError(), &can)
			var in agtemporal.Input
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
			require.Equal(t, agtemporal.Input{Thread: "t", Continue: true, Steps: 1}, in)
		})
	}
}

func TestMalformedSignalsDoNotStopTheRun(t *testing.T) {
	g, err := askGraph("ask")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(agtemporal.SignalResume, map[string]any{"id": 5})
		env.SignalWorkflow(agtemporal.SignalResume, "garbage")
		env.SignalWorkflow(agtemporal.SignalResume, nil)
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		require.True(t, st.Paused())
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"real"`)})
	}, 2*time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	require.NoError(t, env.GetWorkflowError())
	s := finalState(t, env, w)
	require.Equal(t, []string{"before", "ask got real", "after"}, s.Log.Get())
}

func TestStepActivityRunsThreadsConcurrently(t *testing.T) {
	g, err := chain(5)(checkpoint.NewMemory())
	require.NoError(t, err)
	w, err := agtemporal.New("graph", g)
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			thread := fmt.Sprint("t", i)
			req := agtemporal.StepRequest{Thread: thread, RunID: "run-" + thread, Start: true, Limit: 1 + i%4}
			for n := 0; ; n++ {
				res, err := w.Step(ctx, req)
				if !assert.NoError(t, err) || !assert.Less(t, n, 10) {
					return
				}
				if res.Done {
					var s St
					assert.NoError(t, json.Unmarshal(res.Values, &s))
					assert.Equal(t, []string{"n00", "n01", "n02", "n03", "n04"}, s.Log.Get(), thread)
					return
				}
				req.Start = false
			}
		})
	}
	wg.Wait()
}

// The first answer to an interrupt counts, whether it came by signal or by
// update: an update answering it afterwards is refused, a second signal
// dropped.
func TestTheFirstAnswerCountsBySignalOrUpdate(t *testing.T) {
	g, err := askGraph("ask1", "ask2")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	var outcomes []string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		ids := map[string]string{}
		for _, in := range st.Interrupts {
			ids[in.Node] = in.ID
		}
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: ids["ask1"], Value: json.RawMessage(`"by-signal"`)})
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: ids["ask1"], Value: json.RawMessage(`"second signal"`)})
		env.UpdateWorkflow(agtemporal.UpdateResume, "late", &testsuite.TestUpdateCallback{
			OnAccept:   func() { outcomes = append(outcomes, "accepted") },
			OnReject:   func(err error) { outcomes = append(outcomes, "rejected: "+err.Error()) },
			OnComplete: func(any, error) {},
		}, agtemporal.ResumeSignal{ID: ids["ask1"], Value: json.RawMessage(`"by-update"`)})
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: ids["ask2"], Value: json.RawMessage(`"x"`)})
	}, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, outcomes, 1)
	require.Contains(t, outcomes[0], "rejected: temporal: interrupt")
	s := finalState(t, env, w)
	require.Equal(t, []string{"before", "ask1 got by-signal", "ask2 got x", "after"}, s.Log.Get())
}

// A run waiting for a human is cancelled at once when its workflow is.
func TestCancellingAPausedRunEndsItAtOnce(t *testing.T) {
	g, err := askGraph("ask")(checkpoint.NewMemory())
	require.NoError(t, err)
	w, env := register(t, g)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: "t"})
	err = env.GetWorkflowError()
	var canceled *sdktemporal.CanceledError
	require.ErrorAs(t, err, &canceled, "%v", err)
}
