package graph

import (
	"fmt"
	"slices"
	"strings"
)

// Mermaid renders the graph as a Mermaid flowchart. Conditional edges are
// dotted and labelled with their path-map keys (or "?" when a branch
// declared no destinations); command nodes' declared destinations are
// dotted too.
func (g *Graph[S]) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	id := func(n string) string {
		switch n {
		case Start:
			return "__start__"
		case End:
			return "__end__"
		}
		return strings.NewReplacer(" ", "_", "-", "_", ".", "_").Replace(n)
	}
	fmt.Fprintf(&b, "\t%s([start])\n", id(Start))
	for _, n := range g.names {
		shape := "[%s]"
		if g.nodes[n].deferred {
			shape = "[/%s/]"
		}
		fmt.Fprintf(&b, "\t%s"+shape+"\n", id(n), n)
	}
	fmt.Fprintf(&b, "\t%s([end])\n", id(End))
	for _, e := range g.edges() {
		if e.to == "?" {
			continue
		}
		switch {
		case e.label != "":
			fmt.Fprintf(&b, "\t%s -. %s .-> %s\n", id(e.from), e.label, id(e.to))
		case e.dotted:
			fmt.Fprintf(&b, "\t%s -.-> %s\n", id(e.from), id(e.to))
		default:
			fmt.Fprintf(&b, "\t%s --> %s\n", id(e.from), id(e.to))
		}
	}
	return b.String()
}

// String renders the graph as plain text, one edge a line:
//
//	a -> b
//	b -?-> c [key]
func (g *Graph[S]) String() string {
	var b strings.Builder
	for _, e := range g.edges() {
		arrow := "->"
		if e.dotted || e.label != "" {
			arrow = "-?->"
		}
		fmt.Fprintf(&b, "%s %s %s", e.from, arrow, e.to)
		if e.label != "" {
			fmt.Fprintf(&b, " [%s]", e.label)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Edge is an edge of a compiled graph, as its drawings show it.
type Edge struct {
	From, To string
	// Label is a conditional edge's path-map key, or "join" for an edge
	// from a join's source to its target; empty otherwise.
	Label string
	// Conditional is set for an edge taken when a router or a command
	// node decides so (drawn dotted).
	Conditional bool
}

// Nodes returns the names of the graph's nodes, without [Start] and
// [End], in the order its drawings list them.
func (g *Graph[S]) Nodes() []string { return slices.Clone(g.names) }

// Edges returns the graph's edges, in the order its drawings list them.
// A router that declared neither a path map nor destinations has none.
func (g *Graph[S]) Edges() []Edge {
	var out []Edge
	for _, e := range g.edges() {
		if e.to != "?" {
			out = append(out, Edge{From: e.from, To: e.to, Label: e.label, Conditional: e.dotted})
		}
	}
	return out
}

type edge struct {
	from, to, label string
	dotted          bool
}

func (g *Graph[S]) edges() []edge {
	var out []edge
	branchEdges := func(from string, brs []*branch[S]) {
		for _, br := range brs {
			if br.pathMap != nil {
				keys := make([]string, 0, len(br.pathMap))
				for k := range br.pathMap {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					out = append(out, edge{from: from, to: br.pathMap[k], label: k, dotted: true})
				}
				continue
			}
			if len(br.dests) == 0 {
				out = append(out, edge{from: from, to: "?", dotted: true})
				continue
			}
			for _, d := range br.dests {
				out = append(out, edge{from: from, to: d, dotted: true})
			}
		}
	}
	for _, to := range g.startEdges {
		out = append(out, edge{from: Start, to: to})
	}
	branchEdges(Start, g.startBr)
	for _, n := range g.names {
		nd := g.nodes[n]
		for _, to := range nd.edges {
			out = append(out, edge{from: n, to: to})
		}
		for _, d := range nd.dests {
			out = append(out, edge{from: n, to: d, dotted: true})
		}
		branchEdges(n, nd.branches)
	}
	for _, j := range g.joins {
		for _, s := range j.sources {
			out = append(out, edge{from: s, to: j.target, label: "join"})
		}
	}
	return out
}
