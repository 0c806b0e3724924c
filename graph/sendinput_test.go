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

// A map-reduce where the map node takes its own input type, as a LangGraph
// node with its own input schema ({city}, {item, idx}) does.
type cityInput struct {
	City  string `json:"city"`
	Index int    `json:"index"`
}

type weatherState struct {
	Cities  state.Value[[]string]
	Reports state.Append[string]
	Count   state.Sum[int]
}

func weatherGraph(t *testing.T, opts ...graph.CompileOption) *graph.Graph[weatherState] {
	t.Helper()
	b := graph.New[weatherState]()
	b.AddNode("plan", func(ctx context.Context, s weatherState) (weatherState, error) { return weatherState{}, nil })
	graph.AddNodeWithInput(b, "report", func(ctx context.Context, in cityInput) (weatherState, error) {
		var out weatherState
		out.Reports.Append(fmt.Sprintf("%d:%s", in.Index, in.City))
		out.Count.Add(1)
		return out, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddBranch("plan", func(ctx context.Context, s weatherState) (graph.Route[weatherState], error) {
		var r graph.Route[weatherState]
		for i, c := range s.Cities.Get() {
			r.Sends = append(r.Sends, graph.SendInput[weatherState]("report", cityInput{City: c, Index: i}))
		}
		return r, nil
	})
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

func TestSendInputCarriesTheNodesOwnInputType(t *testing.T) {
	g := weatherGraph(t)
	var starts []any
	var out weatherState
	for ev, err := range g.Stream(t.Context(), weatherState{Cities: state.Set([]string{"Oslo", "Lima"})},
		graph.WithStreamModes(graph.ModeTasks|graph.ModeValues)) {
		require.NoError(t, err)
		switch p := ev.Payload.(type) {
		case graph.TaskStart:
			if p.Name == "report" {
				starts = append(starts, p.Input)
			}
		case weatherState:
			out = p
		}
	}
	require.Equal(t, []string{"0:Oslo", "1:Lima"}, out.Reports.Get(), "reports merge in Send order")
	require.Equal(t, 2, out.Count.Get(), "the Send task's input carries no state field: counters start from the state, not from a default")
	require.Equal(t, []any{cityInput{City: "Oslo"}, cityInput{City: "Lima", Index: 1}}, starts, "a task's input is the value sent")
}

func TestSendInputSurvivesACheckpointRoundTrip(t *testing.T) {
	// The Send tasks are pending when the run pauses before them; the
	// resumed run (a new graph value, as in another process) decodes the
	// inputs from the checkpoint.
	saver := checkpoint.NewMemory()
	g := weatherGraph(t, graph.WithCheckpointer(saver), graph.WithInterruptBefore("report"))
	th := graph.WithThread("t")
	_, err := g.Invoke(t.Context(), weatherState{Cities: state.Set([]string{"Oslo", "Lima"})}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Equal(t, []string{"report"}, intr.Before)

	again := weatherGraph(t, graph.WithCheckpointer(saver))
	out, err := again.Resume(t.Context(), graph.Command[weatherState]{}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"0:Oslo", "1:Lima"}, out.Reports.Get())
}

func TestAnEdgeIntoANodeWithItsOwnInputFailsCompile(t *testing.T) {
	newBuilder := func() *graph.Builder[weatherState] {
		b := graph.New[weatherState]()
		b.AddNode("plan", func(ctx context.Context, s weatherState) (weatherState, error) { return s, nil })
		graph.AddNodeWithInput(b, "report", func(ctx context.Context, in cityInput) (weatherState, error) { return weatherState{}, nil })
		return b
	}
	tests := []struct {
		name  string
		build func(b *graph.Builder[weatherState])
		want  string
	}{
		{"edge", func(b *graph.Builder[weatherState]) {
			b.AddEdge(graph.Start, "plan").AddEdge("plan", "report")
		}, `edge plan -> report: node "report" takes its own input (graph_test.cityInput)`},
		{"start edge", func(b *graph.Builder[weatherState]) {
			b.AddEdge(graph.Start, "report")
		}, `edge __start__ -> report: node "report" takes its own input`},
		{"join", func(b *graph.Builder[weatherState]) {
			b.AddEdge(graph.Start, "plan").AddJoin([]string{"plan"}, "report")
		}, `join plan:report: node "report" takes its own input`},
		{"router destination", func(b *graph.Builder[weatherState]) {
			b.AddEdge(graph.Start, "plan").AddConditionalEdges("plan", func(context.Context, weatherState) (string, error) { return "report", nil },
				graph.WithDestinations("report", graph.End))
		}, `conditional edge plan -> report: node "report" takes its own input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder()
			tt.build(b)
			_, err := b.Compile()
			var ce *graph.CompileError
			require.ErrorAs(t, err, &ce)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestANodeWhoseOwnInputIsAnInterfaceFailsCompile(t *testing.T) {
	tests := []struct {
		name string
		add  func(b *graph.Builder[weatherState])
		want string
	}{
		{"any", func(b *graph.Builder[weatherState]) {
			graph.AddNodeWithInput(b, "report", func(ctx context.Context, in any) (weatherState, error) { return weatherState{}, nil })
		}, `node "report": its own input type interface {} is an interface`},
		{"fmt.Stringer", func(b *graph.Builder[weatherState]) {
			graph.AddNodeWithInput(b, "report", func(ctx context.Context, in fmt.Stringer) (weatherState, error) { return weatherState{}, nil })
		}, `node "report": its own input type fmt.Stringer is an interface`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := graph.New[weatherState]()
			b.AddNode("plan", func(ctx context.Context, s weatherState) (weatherState, error) { return s, nil })
			b.AddEdge(graph.Start, "plan").AddEdge("plan", graph.End)
			tt.add(b)
			_, err := b.Compile()
			var ce *graph.CompileError
			require.ErrorAs(t, err, &ce)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestAWrongSendToANodeWithItsOwnInputFailsTheRun(t *testing.T) {
	tests := []struct {
		name string
		send graph.Send[weatherState]
		want string
	}{
		{"state-carrying Send", graph.Send[weatherState]{Node: "report"}, `node "report" takes its own input (graph_test.cityInput)`},
		{"other input type", graph.SendInput[weatherState]("report", "Oslo"), `send to node "report" carries a string, but the node takes a graph_test.cityInput`},
		{"input to a state node", graph.SendInput[weatherState]("plan", cityInput{}), `send to node "plan" carries a graph_test.cityInput made with graph.SendInput, but the node takes the graph's state`},
		{"nil input", graph.SendInput[weatherState, any]("report", nil), `send to node "report" carries a <nil>, but the node takes a graph_test.cityInput`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := graph.New[weatherState]()
			b.AddNode("plan", func(ctx context.Context, s weatherState) (weatherState, error) { return weatherState{}, nil })
			graph.AddNodeWithInput(b, "report", func(ctx context.Context, in cityInput) (weatherState, error) { return weatherState{}, nil })
			b.AddEdge(graph.Start, "plan")
			once := false
			b.AddBranch("plan", func(ctx context.Context, s weatherState) (graph.Route[weatherState], error) {
				if once {
					return graph.Route[weatherState]{}, nil
				}
				once = true
				return graph.Route[weatherState]{Sends: []graph.Send[weatherState]{tt.send}}, nil
			})
			g, err := b.Compile()
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), weatherState{})
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, "plan", ne.Node, "the task whose branch sent it fails")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestARouterChoosingANodeWithItsOwnInputFailsTheRun(t *testing.T) {
	b := graph.New[weatherState]()
	b.AddNode("plan", func(ctx context.Context, s weatherState) (weatherState, error) { return weatherState{}, nil })
	graph.AddNodeWithInput(b, "report", func(ctx context.Context, in cityInput) (weatherState, error) { return weatherState{}, nil })
	b.AddEdge(graph.Start, "plan")
	b.AddConditionalEdges("plan", func(context.Context, weatherState) (string, error) { return "report", nil })
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), weatherState{})
	require.ErrorContains(t, err, `node "report" takes its own input`)
}

// A Send says whether SendInput made it, whatever its payload, a nil
// interface included; a Send carrying Arg has no input.
func TestASendReportsItsInputEvenANilOne(t *testing.T) {
	in, ok := graph.SendInput[weatherState, any]("report", nil).Input()
	require.True(t, ok, "a nil payload is still an input")
	require.Nil(t, in)
	in, ok = graph.SendInput[weatherState]("report", cityInput{City: "Oslo"}).Input()
	require.True(t, ok)
	require.Equal(t, cityInput{City: "Oslo"}, in)
	in, ok = graph.Send[weatherState]{Node: "plan"}.Input()
	require.False(t, ok, "a Send carrying Arg")
	require.Nil(t, in)
}
