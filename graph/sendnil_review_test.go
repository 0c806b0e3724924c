package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type pageInput struct {
	URL string `json:"url"`
}

type pagesState struct {
	Seen state.Append[string]
}

// pagesGraph sends "visit" a nil *pageInput, a zero one and a set one; the
// node says which it got.
func pagesGraph(t *testing.T, opts ...graph.CompileOption) *graph.Graph[pagesState] {
	t.Helper()
	b := graph.New[pagesState]()
	b.AddNode("plan", func(context.Context, pagesState) (pagesState, error) { return pagesState{}, nil })
	graph.AddNodeWithInput(b, "visit", func(_ context.Context, in *pageInput) (pagesState, error) {
		if in == nil {
			return pagesState{Seen: state.Items("nil")}, nil
		}
		return pagesState{Seen: state.Items(fmt.Sprintf("%q", in.URL))}, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddBranch("plan", func(context.Context, pagesState) (graph.Route[pagesState], error) {
		return graph.Route[pagesState]{Sends: []graph.Send[pagesState]{
			graph.SendInput[pagesState]("visit", (*pageInput)(nil)),
			graph.SendInput[pagesState]("visit", &pageInput{}),
			graph.SendInput[pagesState]("visit", &pageInput{URL: "u"}),
		}}, nil
	})
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// A typed nil payload is an input like any other (not a Send carrying Arg,
// nor a missing input), in the run and through a checkpoint.
func TestATypedNilSendInputReachesItsNode(t *testing.T) {
	want := []string{"nil", `""`, `"u"`}
	t.Run("in the run", func(t *testing.T) {
		out, err := pagesGraph(t).Invoke(t.Context(), pagesState{})
		require.NoError(t, err)
		require.Equal(t, want, out.Seen.Get())
	})
	t.Run("through a checkpoint", func(t *testing.T) {
		saver := checkpoint.NewMemory()
		_, err := pagesGraph(t, graph.WithCheckpointer(saver), graph.WithInterruptBefore("visit")).
			Invoke(t.Context(), pagesState{}, graph.WithThread("t"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		out, err := pagesGraph(t, graph.WithCheckpointer(saver)).Resume(t.Context(), graph.Command[pagesState]{}, graph.WithThread("t"))
		require.NoError(t, err)
		require.Equal(t, want, out.Seen.Get())
	})
}

// What Input reports for each way of making a Send.
func TestASendsInputByHowItWasMade(t *testing.T) {
	for _, tc := range []struct {
		name   string
		send   graph.Send[pagesState]
		want   any
		wantOK bool
	}{
		{"Arg", graph.Send[pagesState]{Node: "n", Arg: pagesState{Seen: state.Items("x")}}, nil, false},
		{"zero Send", graph.Send[pagesState]{}, nil, false},
		{"nil interface", graph.SendInput[pagesState, any]("n", nil), nil, true},
		{"nil error", graph.SendInput[pagesState, error]("n", nil), nil, true},
		{"typed nil pointer", graph.SendInput[pagesState]("n", (*pageInput)(nil)), (*pageInput)(nil), true},
		{"nil slice", graph.SendInput[pagesState]("n", []string(nil)), []string(nil), true},
		{"zero struct", graph.SendInput[pagesState]("n", pageInput{}), pageInput{}, true},
		{"zero int", graph.SendInput[pagesState]("n", 0), 0, true},
		{"an empty struct", graph.SendInput[pagesState]("n", struct{}{}), struct{}{}, true},
		{"an interface holding a value", graph.SendInput[pagesState, any]("n", "v"), "v", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, ok := tc.send.Input()
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.want, in)
			require.IsType(t, tc.want, in)
		})
	}
}
