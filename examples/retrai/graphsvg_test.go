package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/graph"
)

func TestFlowchartOfTheAgentsGraph(t *testing.T) {
	nodes, edges, err := runs.Structure()
	require.NoError(t, err)
	f := newFlowchart(nodes, edges)
	require.Equal(t, []string{"__start__", "act", "evaluate", "human_check", "plan", "__end__"}, f.nodes)
	require.Contains(t, f.edges, flowEdge{from: "evaluate", to: "human_check", label: "HITL", dotted: true})
	require.Contains(t, f.edges, flowEdge{from: "__start__", to: "plan"})
	rank, _ := f.ranks()
	require.Equal(t, map[string]int{"__start__": 0, "plan": 1, "act": 2, "evaluate": 3, "human_check": 4, "__end__": 5}, rank,
		"one row per node down the loop, the end last")
}

func TestFlowchartSVGHasANodePerNameAndAnEdgePerArrow(t *testing.T) {
	f := newFlowchart([]string{"a<b>&", "b"}, []graph.Edge{
		{From: graph.Start, To: "a<b>&"},
		{From: "a<b>&", To: "b", Label: `go "on"`, Conditional: true},
		{From: "b", To: "a<b>&", Conditional: true},
		{From: "b", To: graph.End},
	})
	svg := f.svg()
	// Well-formed XML: a name with markup is escaped.
	dec := xml.NewDecoder(strings.NewReader(svg))
	nodes, edges := map[string]bool{}, map[string]bool{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "g" {
			a := map[string]string{}
			for _, at := range se.Attr {
				a[at.Name.Local] = at.Value
			}
			switch a["class"] {
			case "node":
				nodes[a["data-node"]] = true
			case "edge":
				edges[a["data-from"]+">"+a["data-to"]] = true
			}
		}
	}
	require.Equal(t, map[string]bool{"__start__": true, "a<b>&": true, "b": true, "__end__": true}, nodes)
	require.Equal(t, map[string]bool{"__start__>a<b>&": true, "a<b>&>b": true, "b>a<b>&": true, "b>__end__": true}, edges)
	require.Contains(t, svg, `go &#34;on&#34;`)
}

func TestDashboardPageHasTheGraphDrawnIn(t *testing.T) {
	page := string(dashboardPage())
	require.NotContains(t, page, graphPlaceholder)
	require.Contains(t, page, `<g class="node" data-node="human_check">`)
	require.NotContains(t, page, "cannot be drawn")
}
