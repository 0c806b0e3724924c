package graph_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// wideJoinGraph joins width sources into "join". "route" runs every
// source but the last (some of them past the 64th) in one step; the last
// runs in the next step, after "hold". A source named in failing fails.
func wideJoinGraph(t *testing.T, width int, failing string, opts ...graph.CompileOption) *graph.Graph[joinState] {
	b := graph.New[joinState]()
	var names []string
	for i := range width {
		name := "s" + strconv.Itoa(i)
		names = append(names, name)
		b.AddNode(name, func(_ context.Context, s joinState) (joinState, error) {
			if name == failing && s.Route.Get() == "fail" {
				return joinState{}, errors.New("source failed")
			}
			return joinState{Ran: state.Items(name)}, nil
		})
	}
	last := names[width-1]
	b.AddNode("route", func(context.Context, joinState) (joinState, error) { return joinState{}, nil })
	b.AddNode("hold", func(context.Context, joinState) (joinState, error) { return joinState{}, nil })
	b.AddNode("join", func(_ context.Context, s joinState) (joinState, error) {
		return joinState{Joined: state.Set(s.Joined.Get() + 1)}, nil
	})
	b.AddEdge(graph.Start, "route")
	b.AddBranch("route", func(_ context.Context, s joinState) (graph.Route[joinState], error) {
		if s.Route.Get() == "last" {
			return graph.To[joinState](last), nil
		}
		return graph.To[joinState](append([]string{"hold"}, names[:width-1]...)...), nil
	}, graph.WithDestinations(append([]string{"hold"}, names...)...))
	b.AddEdge("hold", last)
	b.AddJoin(names, "join")
	b.AddEdge("join", graph.End)
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

// A join's progress past its 64th source is saved with the checkpoint of
// a paused run and restored by its resume, in a loop the graph may have
// used for other runs meanwhile: the join fires when its last source ran.
func TestAWideJoinsProgressSurvivesAPauseAndItsResume(t *testing.T) {
	for _, width := range []int{3, 64, 65, 70, 130, 200} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			g := wideJoinGraph(t, width, "", graph.WithCheckpointer(checkpoint.NewMemory()))
			last := "s" + strconv.Itoa(width-1)
			out, err := g.Invoke(t.Context(), joinState{}, graph.WithThread("paused"), graph.WithInterruptBefore(last))
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			require.Len(t, out.Ran.Get(), width-1)
			require.Zero(t, out.Joined.Get())
			// Other runs of the graph, on another thread, meanwhile.
			for range 3 {
				out, err = g.Invoke(t.Context(), joinState{Route: state.Set("last")}, graph.WithThread("other"))
				require.NoError(t, err)
				require.Zero(t, out.Joined.Get(), "another thread's progress")
			}
			out, err = g.Resume(t.Context(), graph.Command[joinState]{}, graph.WithThread("paused"), graph.WithInterruptBefore())
			require.NoError(t, err)
			require.Len(t, out.Ran.Get(), width)
			require.Equal(t, 1, out.Joined.Get(), "every source ran: the join fires")
		})
	}
}

// A run that fails after some of a join's sources ran leaves no progress
// to the next run of the graph (whose loop the engine may reuse): a run in
// which only the last source runs does not fire the join.
func TestAFailedRunLeavesNoJoinProgressToTheNext(t *testing.T) {
	for _, width := range []int{3, 65, 130} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			last := "s" + strconv.Itoa(width-1)
			g := wideJoinGraph(t, width, last)
			for range 5 {
				_, err := g.Invoke(t.Context(), joinState{Route: state.Set("fail")})
				require.ErrorContains(t, err, "source failed")
				out, err := g.Invoke(t.Context(), joinState{Route: state.Set("last")})
				require.NoError(t, err)
				require.Equal(t, []string{last}, out.Ran.Get())
				require.Zero(t, out.Joined.Get(), "one source ran in this run")
			}
		})
	}
}
