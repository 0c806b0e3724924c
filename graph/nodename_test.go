package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type nameState struct {
	Ran state.Append[string]
}

// A node is found by any string equal to its name, whatever its bytes: one
// built at run time, a copy, or a prefix of another node's name sharing
// that name's bytes ("ab"[:1] names "a", not "ab"), whether a router, a
// command's goto or a Send names it; and two graphs compiled with the same
// literals each run their own nodes.
func TestANodeIsFoundByAnyStringEqualToItsName(t *testing.T) {
	ab := "ab"
	tests := []struct {
		name string
		to   func() string
	}{
		{"literal", func() string { return "a" }},
		{"prefix of another name's bytes", func() string { return ab[:1] }},
		{"the other name itself", func() string { return ab }},
		{"concatenated at run time", func() string { return strings.Repeat("a", 1) + strings.TrimPrefix(ab, "a") }},
		{"cloned", func() string { return strings.Clone(ab) }},
		{"from bytes", func() string { return string([]byte{'a'}) }},
	}
	for _, tt := range tests {
		for _, how := range []string{"router", "goto", "send"} {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				var gs []*graph.Graph[nameState]
				for _, tag := range []string{"1", "2"} { // two graphs, same literals
					b := graph.New[nameState]()
					for _, n := range []string{"a", "ab"} {
						b.AddNode(n, func(_ context.Context, s nameState) (nameState, error) {
							return nameState{Ran: state.Items(n + tag)}, nil
						})
						b.AddEdge(n, graph.End)
					}
					switch how {
					case "router":
						b.AddNode("from", func(_ context.Context, s nameState) (nameState, error) { return s, nil })
						b.AddConditionalEdges("from", func(_ context.Context, s nameState) (string, error) { return tt.to(), nil })
					case "goto":
						b.AddCommandNode("from", func(_ context.Context, s nameState) (graph.Command[nameState], error) {
							return graph.Command[nameState]{Goto: []string{tt.to()}}, nil
						})
					case "send":
						b.AddCommandNode("from", func(_ context.Context, s nameState) (graph.Command[nameState], error) {
							return graph.Command[nameState]{Sends: []graph.Send[nameState]{{Node: tt.to()}}}, nil
						})
					}
					b.AddEdge(graph.Start, "from")
					g, err := b.Compile()
					require.NoError(t, err)
					gs = append(gs, g)
				}
				for i, g := range gs {
					out, err := g.Invoke(context.Background(), nameState{})
					require.NoError(t, err)
					want := tt.to() + string(rune('1'+i))
					require.Equal(t, []string{want}, out.Ran.Get())
				}
			})
		}
	}
}
