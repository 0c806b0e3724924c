package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type coderState struct {
	Messages state.Messages
	Memory   state.Reduced[middleware.WorkingMemory, middleware.MemoryReducer]
	Log      state.Append[string]
}

// handleErrors is HandleErrors for coderState, answering with an AI
// message.
func handleErrors(opts ...middleware.ErrorOption) graph.Middleware[coderState] {
	return middleware.HandleErrors(
		func(s coderState) middleware.WorkingMemory { return s.Memory.Get() },
		func(u *coderState, d middleware.WorkingMemory) { u.Memory.Update(d) },
		func(_ context.Context, _ coderState, f middleware.NodeFailure) coderState {
			return coderState{Messages: state.Msgs(state.AI(f.Message()))}
		}, opts...)
}

// failing is a node that fails its first failures runs, then logs name.
func failing(name string, failures int, runs *atomic.Int32) graph.NodeFunc[coderState] {
	return func(ctx context.Context, s coderState) (coderState, error) {
		n := int(runs.Add(1))
		if n <= failures {
			return coderState{}, fmt.Errorf("%s failed (run %d)", name, n)
		}
		var out coderState
		out.Log.Append(name)
		return out, nil
	}
}

func compile(t *testing.T, b *graph.Builder[coderState], opts ...graph.CompileOption) *graph.Graph[coderState] {
	t.Helper()
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

func TestHandleErrorsAnswersTheUserAfterTheLastAttempt(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", failing("edit", 100, &runs))
	b.AddNode("after", func(ctx context.Context, s coderState) (coderState, error) {
		var out coderState
		out.Log.Append("after")
		return out, nil
	})
	b.AddEdge(graph.Start, "edit")
	b.AddEdge("edit", "after")
	out, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err, "the run does not fail")
	require.Equal(t, int32(middleware.DefaultNodeAttempts), runs.Load())

	last, _ := out.Messages.Last()
	require.Contains(t, last.Text(), `could not complete the step "edit": it failed 3 times`)
	require.Contains(t, last.Text(), "edit failed (run 3)")
	require.Equal(t, []string{"after"}, out.Log.Get(), "the run goes on from the node")

	wm := out.Memory.Get()
	require.Equal(t, "edit", wm.CurrentNode)
	require.Equal(t, 1, wm.CurrentStep)
	require.Equal(t, "edit failed (run 3)", wm.LastError)
	require.Equal(t, map[string]int{"edit": 3}, wm.RetryCount)
	want := []middleware.Feedback{
		{Node: "edit", Step: 1, Kind: middleware.FeedbackError, Text: "edit failed (run 1)", Attempt: 1},
		{Node: "edit", Step: 1, Kind: middleware.FeedbackError, Text: "edit failed (run 2)", Attempt: 2},
		{Node: "edit", Step: 1, Kind: middleware.FeedbackError, Text: "edit failed (run 3)", Attempt: 3},
	}
	require.Empty(t, cmp.Diff(want, wm.Feedback))
}

func TestHandleErrorsRetriesWithTheErrorInWorkingMemory(t *testing.T) {
	var runs atomic.Int32
	var seen []middleware.WorkingMemory
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", func(ctx context.Context, s coderState) (coderState, error) {
		wm, ok := middleware.WorkingMemoryFrom(ctx)
		require.True(t, ok)
		seen = append(seen, wm)
		return failing("edit", 1, &runs)(ctx, s)
	})
	b.AddEdge(graph.Start, "edit")
	g := compile(t, b)
	out, err := g.Invoke(t.Context(), coderState{})
	require.NoError(t, err)
	require.Equal(t, []string{"edit"}, out.Log.Get(), "the successful attempt's writes are kept")
	require.Zero(t, out.Messages.Len(), "no answer: the node recovered")
	require.Len(t, seen, 2)
	require.Empty(t, seen[0].LastError)
	require.Equal(t, "edit", seen[0].CurrentNode)
	require.Equal(t, "edit failed (run 1)", seen[1].LastError)
	require.Equal(t, map[string]int{"edit": 1}, seen[1].RetryCount)
	require.Equal(t, map[string]int{"edit": 1}, out.Memory.Get().RetryCount)

	_, ok := middleware.WorkingMemoryFrom(t.Context())
	require.False(t, ok, "outside a wrapped node")
}

func TestHandleErrorsClearsTheRetryCountOnALaterSuccess(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", failing("edit", 1, &runs))
	b.AddEdge(graph.Start, "edit")
	g := compile(t, b, graph.WithCheckpointer(checkpoint.NewMemory()))
	out, err := g.Invoke(t.Context(), coderState{}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"edit": 1}, out.Memory.Get().RetryCount)
	out, err = g.Invoke(t.Context(), coderState{}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Empty(t, out.Memory.Get().RetryCount)
	require.Len(t, out.Memory.Get().Feedback, 1, "the history is kept")
}

func TestHandleErrorsKeepsTheLast20Feedbacks(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors(middleware.WithNodeAttempts(25)))
	b.AddNode("edit", failing("edit", 100, &runs))
	b.AddEdge(graph.Start, "edit")
	out, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err)
	require.Equal(t, int32(25), runs.Load())
	fb := out.Memory.Get().Feedback
	require.Len(t, fb, middleware.MaxFeedback)
	require.Equal(t, 6, fb[0].Attempt, "the oldest are dropped")
	require.Equal(t, 25, fb[19].Attempt)
}

func TestMemoryReducer(t *testing.T) {
	old := middleware.WorkingMemory{CurrentNode: "a", CurrentFile: "x.go", RetryCount: map[string]int{"a": 2, "b": 1}}
	for i := range 19 {
		old.Feedback = append(old.Feedback, middleware.Feedback{Attempt: i + 1})
	}
	got := middleware.MemoryReducer{}.Reduce(old, middleware.WorkingMemory{
		CurrentNode: "b", CurrentStep: 4, LastError: "e",
		RetryCount: map[string]int{"a": 0, "c": 1},
		Feedback:   []middleware.Feedback{{Attempt: 20}, {Attempt: 21}},
	})
	require.Equal(t, "b", got.CurrentNode)
	require.Equal(t, 4, got.CurrentStep)
	require.Equal(t, "x.go", got.CurrentFile, "empty fields of the delta leave the memory's")
	require.Equal(t, "e", got.LastError)
	require.Equal(t, map[string]int{"b": 1, "c": 1}, got.RetryCount)
	require.Len(t, got.Feedback, 20)
	require.Equal(t, 2, got.Feedback[0].Attempt)
	require.Equal(t, 21, got.Feedback[19].Attempt)
	// old is not modified.
	require.Equal(t, map[string]int{"a": 2, "b": 1}, old.RetryCount)
	require.Len(t, old.Feedback, 19)
}

func TestHandleErrorsInParallelNodesOfOneStep(t *testing.T) {
	var ra, rb atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors(middleware.WithNodeAttempts(2)))
	b.AddNode("a", failing("a", 100, &ra))
	b.AddNode("b", failing("b", 1, &rb))
	b.AddEdge(graph.Start, "a")
	b.AddEdge(graph.Start, "b")
	out, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err, "both write the memory in one step without conflict")
	require.Equal(t, map[string]int{"a": 2, "b": 1}, out.Memory.Get().RetryCount)
	require.Len(t, out.Memory.Get().Feedback, 3)
	require.Equal(t, []string{"b"}, out.Log.Get())
	require.Equal(t, 1, out.Messages.Len())
}

func TestHandleErrorsLetsAnInterruptPauseAndResume(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("ask", func(ctx context.Context, s coderState) (coderState, error) {
		runs.Add(1)
		answer, err := graph.InterruptAs[string](ctx, "apply the edit?")
		if err != nil {
			return coderState{}, err
		}
		var out coderState
		out.Log.Append("answer " + answer)
		return out, nil
	})
	b.AddEdge(graph.Start, "ask")
	g := compile(t, b, graph.WithCheckpointer(checkpoint.NewMemory()))
	_, err := g.Invoke(t.Context(), coderState{}, graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Equal(t, "apply the edit?", intr.Interrupts[0].Value)
	require.Equal(t, int32(1), runs.Load(), "a pause is not retried")

	out, err := g.Resume(t.Context(), graph.Command[coderState]{Resume: "yes"}, graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, []string{"answer yes"}, out.Log.Get())
	require.Empty(t, out.Memory.Get().Feedback, "a pause is not an error")
	require.Zero(t, out.Messages.Len())
}

func TestHandleErrorsDoesNotCatchAnInterruptWithoutCheckpointer(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("ask", func(ctx context.Context, s coderState) (coderState, error) {
		runs.Add(1)
		_, err := graph.Interrupt(ctx, "?")
		return coderState{}, err
	})
	b.AddEdge(graph.Start, "ask")
	_, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.ErrorIs(t, err, graph.ErrNoCheckpointer, "a graph used wrongly fails")
	require.Equal(t, int32(1), runs.Load())
}

func TestHandleErrorsLetsCancellationSurface(t *testing.T) {
	var runs atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", func(ctx context.Context, s coderState) (coderState, error) {
		runs.Add(1)
		cancel()
		return coderState{}, errors.New("model call cut")
	})
	b.AddEdge(graph.Start, "edit")
	_, err := compile(t, b).Invoke(ctx, coderState{})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int32(1), runs.Load())
}

func TestHandleErrorsRunsOutsideTheRetryPolicy(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", failing("edit", 100, &runs), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	b.AddEdge(graph.Start, "edit")
	out, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err)
	// Each attempt of HandleErrors runs the node under the whole policy
	// (two runs) and sees the error the policy gave up on.
	require.Equal(t, int32(2*middleware.DefaultNodeAttempts), runs.Load())
	fb := out.Memory.Get().Feedback
	require.Len(t, fb, middleware.DefaultNodeAttempts)
	require.Equal(t, "edit failed (run 2)", fb[0].Text, "the error the policy gave up on")
	require.Equal(t, "edit failed (run 6)", fb[2].Text)

	// A node that the policy brings through is never seen failing.
	runs.Store(0)
	b = graph.New[coderState]()
	b.Use(handleErrors())
	b.AddNode("edit", failing("edit", 1, &runs), graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	b.AddEdge(graph.Start, "edit")
	out, err = compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err)
	require.Equal(t, int32(2), runs.Load())
	require.Empty(t, out.Memory.Get().Feedback)
}

func TestHandleErrorsWithHandleIf(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors(middleware.WithHandleIf(func(error) bool { return false })))
	b.AddNode("edit", failing("edit", 100, &runs))
	b.AddEdge(graph.Start, "edit")
	_, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.ErrorContains(t, err, "edit failed (run 1)")
	require.Equal(t, int32(1), runs.Load())
}

func TestHandleErrorsAnswersAtOnceAfterAnErrorNotWorthRerunning(t *testing.T) {
	var runs atomic.Int32
	b := graph.New[coderState]()
	b.Use(handleErrors(middleware.WithRerunIf(func(err error) bool { return !strings.Contains(err.Error(), "run 1") })))
	b.AddNode("edit", failing("edit", 100, &runs))
	b.AddEdge(graph.Start, "edit")
	out, err := compile(t, b).Invoke(t.Context(), coderState{})
	require.NoError(t, err)
	require.Equal(t, int32(1), runs.Load(), "not run again")
	require.Len(t, out.Memory.Get().Feedback, 1)
}
