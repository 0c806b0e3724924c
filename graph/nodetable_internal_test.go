package graph

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestNodeFindsEveryNodeByAnyCopyOfItsName checks that the lookup by
// address agrees with the map for the nodes' own names, for copies of
// them (other bytes, found through the map), and for names of no node.
func TestNodeFindsEveryNodeByAnyCopyOfItsName(t *testing.T) {
	type S struct{}
	b := New[S]()
	prev := Start
	for i := range 40 {
		name := "n" + strconv.Itoa(i)
		b.AddNode(name, func(_ context.Context, s S) (S, error) { return s, nil })
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, End)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range g.nodes {
		if got := g.node(name); got != n {
			t.Errorf("node(%q) = %v, want %v", name, got, n)
		}
		if got := g.node(strings.Clone(name)); got != n {
			t.Errorf("node(copy of %q) = %v, want %v", name, got, n)
		}
		if got := g.node(n.name[:1]); got != g.nodes[n.name[:1]] {
			t.Errorf("node(%q) = %v, want nil", n.name[:1], got)
		}
		for _, next := range n.next {
			if g.nodes[next] == nil || g.node(next) != g.nodes[next] {
				t.Errorf("edge %s -> %s: node not found", name, next)
			}
		}
	}
	for _, name := range []string{"", "x", Start, End} {
		if got := g.node(name); got != nil {
			t.Errorf("node(%q) = %v, want nil", name, got)
		}
	}
}
