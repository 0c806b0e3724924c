package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type zeroState struct{ L state.Append[string] }

// zeroAppend is a node appending its name to L.
func zeroAppend(name string) graph.NodeFunc[zeroState] {
	return func(context.Context, zeroState) (zeroState, error) {
		return zeroState{L: state.Items(name)}, nil
	}
}

// TestBuilderZeroValueBuildsGraphs calls each method first on a zero
// Builder, then builds on until the graph runs: the zero value works as
// the builder New returns.
func TestBuilderZeroValueBuildsGraphs(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *graph.Builder[zeroState])
		want  []string
	}{
		{"AddNode", func(b *graph.Builder[zeroState]) {
			b.AddNode("a", zeroAppend("a")).AddEdge(graph.Start, "a")
		}, []string{"a"}},
		{"AddCommandNode", func(b *graph.Builder[zeroState]) {
			b.AddCommandNode("a", func(context.Context, zeroState) (graph.Command[zeroState], error) {
				return graph.Command[zeroState]{Update: zeroState{L: state.Items("a")}}, nil
			}).AddEdge(graph.Start, "a")
		}, []string{"a"}},
		{"AddNodeWithInput", func(b *graph.Builder[zeroState]) {
			graph.AddNodeWithInput(b, "m", func(_ context.Context, in string) (zeroState, error) {
				return zeroState{L: state.Items("m:" + in)}, nil
			})
			b.AddBranch(graph.Start, func(context.Context, zeroState) (graph.Route[zeroState], error) {
				return graph.Route[zeroState]{Sends: []graph.Send[zeroState]{graph.SendInput[zeroState]("m", "x")}}, nil
			})
		}, []string{"m:x"}},
		{"AddEdge", func(b *graph.Builder[zeroState]) {
			b.AddEdge(graph.Start, "a").AddNode("a", zeroAppend("a"))
		}, []string{"a"}},
		{"AddJoin", func(b *graph.Builder[zeroState]) {
			b.AddJoin([]string{"a", "b"}, "c").
				AddNode("a", zeroAppend("a")).AddNode("b", zeroAppend("b")).AddNode("c", zeroAppend("c")).
				AddEdge(graph.Start, "a").AddEdge(graph.Start, "b")
		}, []string{"a", "b", "c"}},
		{"AddConditionalEdges", func(b *graph.Builder[zeroState]) {
			b.AddConditionalEdges(graph.Start, func(context.Context, zeroState) (string, error) { return "a", nil }, graph.WithDestinations("a")).
				AddNode("a", zeroAppend("a"))
		}, []string{"a"}},
		{"AddMultiConditionalEdges", func(b *graph.Builder[zeroState]) {
			b.AddMultiConditionalEdges(graph.Start, func(context.Context, zeroState) ([]string, error) { return []string{"a", "b"}, nil }).
				AddNode("a", zeroAppend("a")).AddNode("b", zeroAppend("b"))
		}, []string{"a", "b"}},
		{"AddBranch", func(b *graph.Builder[zeroState]) {
			b.AddBranch(graph.Start, func(context.Context, zeroState) (graph.Route[zeroState], error) { return graph.To[zeroState]("a"), nil }).
				AddNode("a", zeroAppend("a"))
		}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b graph.Builder[zeroState]
			tt.build(&b)
			g, err := b.Compile()
			require.NoError(t, err)
			out, err := g.Invoke(t.Context(), zeroState{})
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tt.want, out.L.Get()))
		})
	}
}

func TestBuilderZeroValueCompileReportsMissingEntrypoint(t *testing.T) {
	var b graph.Builder[zeroState]
	_, err := b.Compile()
	var ce *graph.CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, []string{"graph must have an entrypoint: add at least one edge from graph.Start to another node"}, ce.Problems)
}

// TestMemoryCacheZeroValueIsEmptyCache calls each method first on a zero
// MemoryCache: none panics, and each answers as an empty cache does.
func TestMemoryCacheZeroValueIsEmptyCache(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T, c *graph.MemoryCache)
	}{
		{"Get finds nothing", func(t *testing.T, c *graph.MemoryCache) {
			_, ok, err := c.Get(t.Context(), "n|k")
			require.NoError(t, err)
			require.False(t, ok)
		}},
		{"Set stores the entry", func(t *testing.T, c *graph.MemoryCache) {
			require.NoError(t, c.Set(t.Context(), "n|k", []byte("v"), time.Hour))
			v, ok, err := c.Get(t.Context(), "n|k")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, []byte("v"), v)
		}},
		{"Clear of all nodes succeeds", func(t *testing.T, c *graph.MemoryCache) {
			require.NoError(t, c.Clear(t.Context()))
		}},
		{"Clear of some nodes succeeds", func(t *testing.T, c *graph.MemoryCache) {
			require.NoError(t, c.Clear(t.Context(), "n"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call(t, new(graph.MemoryCache))
		})
	}
}

func TestTheZeroGraphSaysItWasNotCompiled(t *testing.T) {
	var g graph.Graph[deadEndState]
	_, err := g.Invoke(t.Context(), deadEndState{})
	require.ErrorIs(t, err, graph.ErrNotCompiled)
	_, err = g.Resume(t.Context(), graph.Command[deadEndState]{})
	require.ErrorIs(t, err, graph.ErrNotCompiled)
	for _, err := range g.Stream(t.Context(), deadEndState{}) {
		require.ErrorIs(t, err, graph.ErrNotCompiled)
	}
	_, err = g.GetState(t.Context())
	require.ErrorIs(t, err, graph.ErrNotCompiled)
	_, err = g.UpdateState(t.Context(), deadEndState{}, "a")
	require.ErrorIs(t, err, graph.ErrNotCompiled)
	for _, err := range g.History(t.Context(), "t") {
		require.ErrorIs(t, err, graph.ErrNotCompiled)
	}
}
