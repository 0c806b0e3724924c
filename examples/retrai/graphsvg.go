package main

import (
	"bytes"
	"fmt"
	"html"
	"slices"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/graph"
)

// The dashboard draws the agent's graph as an inline SVG made here from
// the compiled graph's nodes and edges (no script from elsewhere is
// needed, nor allowed by the page's Content-Security-Policy): a box per
// node with data-node set to its name, an arrow per edge with data-from
// and data-to, which the page lights as the run's nodes start.

// flowEdge is an edge of the drawing.
type flowEdge struct {
	from, to, label string
	dotted          bool
}

// flowchart is the nodes, in order, and the edges of the drawing.
type flowchart struct {
	nodes  []string          // node names
	labels map[string]string // node name → its text in the drawing
	edges  []flowEdge
}

// newFlowchart returns the drawing of a graph with nodes (without
// graph.Start and graph.End, which it adds first and last, as start and
// end) and edges. An edge with a label (a path-map key, a join) or a
// conditional one is dotted, as in the graph's Mermaid rendering.
func newFlowchart(nodes []string, edges []graph.Edge) *flowchart {
	f := &flowchart{labels: map[string]string{graph.Start: "start", graph.End: "end"}}
	f.nodes = append(append([]string{graph.Start}, nodes...), graph.End)
	for _, n := range nodes {
		f.labels[n] = n
	}
	for _, e := range edges {
		f.edges = append(f.edges, flowEdge{from: e.From, to: e.To, label: e.Label, dotted: e.Conditional || e.Label != ""})
	}
	return f
}

// ranks places each node on a row: the longest path from graph.Start over
// the edges that do not go back (found by a depth-first walk from Start in
// edge order), with graph.End on the last row. It also returns which
// edges go back.
func (f *flowchart) ranks() (map[string]int, []bool) {
	out := map[string][]int{} // node → its edges' indexes
	for i, e := range f.edges {
		out[e.from] = append(out[e.from], i)
	}
	back := make([]bool, len(f.edges))
	state := map[string]int{} // 1 on the walk's stack, 2 done
	var order []string        // post-order
	var walk func(n string)
	walk = func(n string) {
		state[n] = 1
		for _, i := range out[n] {
			switch state[f.edges[i].to] {
			case 1:
				back[i] = true
			case 0:
				walk(f.edges[i].to)
			}
		}
		state[n] = 2
		order = append(order, n)
	}
	walk(graph.Start)
	for _, n := range f.nodes { // nodes Start does not reach
		if state[n] == 0 {
			walk(n)
		}
	}
	rank := make(map[string]int, len(f.nodes))
	for _, n := range f.nodes {
		rank[n] = 0
	}
	last := 0
	for _, n := range slices.Backward(order) { // a topological order
		for _, i := range out[n] {
			if e := f.edges[i]; !back[i] && rank[e.to] < rank[n]+1 {
				rank[e.to] = rank[n] + 1
			}
		}
	}
	for n, r := range rank {
		if n != graph.End {
			last = max(last, r)
		}
	}
	if _, ok := f.labels[graph.End]; ok {
		rank[graph.End] = last + 1
	}
	return rank, back
}

// Sizes of the drawing.
const (
	svgBoxW   = 116
	svgBoxH   = 30
	svgGapX   = 28
	svgRowH   = 68
	svgMargin = 110 // each side, for the arrows that go around
)

// svg draws the flowchart.
func (f *flowchart) svg() string {
	rank, back := f.ranks()
	rows := map[int][]string{}
	maxRank, widest := 0, 1
	for _, n := range f.nodes {
		r := rank[n]
		rows[r] = append(rows[r], n)
		maxRank = max(maxRank, r)
		widest = max(widest, len(rows[r]))
	}
	width := widest*(svgBoxW+svgGapX) - svgGapX + 2*svgMargin
	height := (maxRank+1)*svgRowH + 10
	type pt struct{ x, y float64 }
	center := map[string]pt{}
	for r, ns := range rows {
		for i, n := range ns {
			x := float64(width)/2 + (float64(i)-float64(len(ns)-1)/2)*(svgBoxW+svgGapX)
			center[n] = pt{x, float64(r*svgRowH) + 20 + svgBoxH/2}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="graph-svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="the agent's graph">`, width, height, width, height)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>`)
	left, right := 0, 0 // the arrows drawn around each side so far
	for i, e := range f.edges {
		a, z := center[e.from], center[e.to]
		ra, rz := rank[e.from], rank[e.to]
		const hw, hh = svgBoxW / 2, svgBoxH / 2
		var p0, p1, p2, p3 pt
		switch {
		case back[i] || rz < ra:
			// Around the right side, upwards.
			right++
			off := 40 + 18*float64(right)
			p0, p3 = pt{a.x + hw, a.y}, pt{z.x + hw, z.y}
			p1, p2 = pt{p0.x + off, p0.y}, pt{p3.x + off, p3.y}
		case rz == ra:
			p0, p3 = pt{a.x + hw, a.y}, pt{z.x - hw, z.y}
			if z.x < a.x {
				p0, p3 = pt{a.x - hw, a.y}, pt{z.x + hw, z.y}
			}
			p1, p2 = p0, p3
		case rz-ra > 1 && a.x == z.x:
			// Past the rows between: around the left side.
			left++
			off := 40 + 18*float64(left)
			p0, p3 = pt{a.x - hw, a.y}, pt{z.x - hw, z.y}
			p1, p2 = pt{p0.x - off, p0.y}, pt{p3.x - off, p3.y}
		default:
			p0, p3 = pt{a.x, a.y + hh}, pt{z.x, z.y - hh}
			p1, p2 = pt{p0.x, p0.y + svgRowH/3}, pt{p3.x, p3.y - svgRowH/3}
		}
		dash := ""
		if e.dotted {
			dash = ` stroke-dasharray="5 4"`
		}
		fmt.Fprintf(&b, `<g class="edge" data-from="%s" data-to="%s"><path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#8a8a96" stroke-width="1.4"%s marker-end="url(#arrow)"/>`,
			attr(e.from), attr(e.to), p0.x, p0.y, p1.x, p1.y, p2.x, p2.y, p3.x, p3.y, dash)
		if e.label != "" {
			mx := (p0.x + 3*p1.x + 3*p2.x + p3.x) / 8
			my := (p0.y + 3*p1.y + 3*p2.y + p3.y) / 8
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="#6b6b76" paint-order="stroke" stroke="#fff" stroke-width="3">%s</text>`,
				mx, my-3, html.EscapeString(clipLabel(e.label, 22)))
		}
		b.WriteString(`</g>`)
	}
	for _, n := range f.nodes {
		c := center[n]
		rx := 4
		if n == graph.Start || n == graph.End {
			rx = svgBoxH / 2
		}
		fmt.Fprintf(&b, `<g class="node" data-node="%s"><rect x="%.1f" y="%.1f" width="%d" height="%d" rx="%d" fill="#fff" stroke="#8a8a96" stroke-width="1.4"/><text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" dominant-baseline="middle" fill="#1d1d1f">%s</text></g>`,
			attr(n), c.x-svgBoxW/2, c.y-svgBoxH/2, svgBoxW, svgBoxH, rx, c.x, c.y+1, html.EscapeString(f.labels[n]))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// attr escapes s for an attribute value.
func attr(s string) string { return html.EscapeString(s) }

// clipLabel shortens an edge's label to n runes.
func clipLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// graphPlaceholder is where the dashboard's HTML takes the graph.
const graphPlaceholder = "<!--graph-->"

// dashboardPage returns the dashboard with the agent's graph drawn in, or
// with a note saying why it is not.
func dashboardPage() []byte {
	drawing := ""
	nodes, edges, err := runs.Structure()
	if err == nil {
		drawing = newFlowchart(nodes, edges).svg()
	}
	if err != nil {
		drawing = `<p class="muted">The graph cannot be drawn: ` + html.EscapeString(err.Error()) + `</p>`
	}
	return bytes.Replace(dashboardHTML, []byte(graphPlaceholder), []byte(drawing), 1)
}
