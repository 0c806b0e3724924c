package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// Inner is the state of the subgraph.
type Inner struct {
	Note  state.Value[string]  `json:"note"`
	Steps state.Append[string] `json:"steps"`
}

func nestedGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	sb := graph.New[Inner]()
	sb.AddNode("write", func(ctx context.Context, c Inner) (Inner, error) {
		graph.MessageWriter(ctx)(graph.MessageChunk{MessageID: "m2", Text: "inside"})
		c.Note.Set("note:" + c.Note.Get())
		c.Steps.Append("w")
		return c, nil
	})
	sb.AddEdge(graph.Start, "write")
	sb.AddEdge("write", graph.End)
	sub, err := sb.Compile()
	require.NoError(t, err)

	b := graph.New[AgentState]()
	b.AddCommandNode("inner", graph.Subgraph(sub,
		func(p AgentState) Inner { var c Inner; c.Note.Set(p.Topic.Get()); return c },
		func(c Inner) AgentState { var p AgentState; p.Log.Append("inner:" + c.Note.Get()); return p }))
	b.AddEdge(graph.Start, "inner")
	b.AddEdge("inner", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func TestStreamSubgraphsNamesEventsByNamespace(t *testing.T) {
	saver := checkpoint.NewMemory()
	s, err := server.New(server.Graph("nested", nestedGraph(t, saver)), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e := &env{t: t, srv: hs}
	tid := e.newThread(nil)

	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "nested", "input": map[string]any{"topic": "t"},
		"stream_mode": []string{"updates", "messages-tuple"}, "stream_subgraphs": true,
	})
	require.Equal(t, 200, r.status, "%s", r.body)
	evs := parseSSE(t, r.body)
	var got []string
	for _, ev := range evs {
		name, ns, _ := strings.Cut(ev.Name, "|")
		if ns != "" {
			require.True(t, strings.HasPrefix(ns, "inner:"), "namespace %q", ns)
			name += "|inner"
		}
		got = append(got, name)
	}
	require.Equal(t, []string{"metadata", "messages|inner", "updates|inner", "updates", "end"}, got)
	var sub map[string]any
	require.NoError(t, json.Unmarshal(evs[2].Data, &sub))
	require.Equal(t, map[string]any{"write": map[string]any{"note": "note:t", "steps": []any{"w"}}}, sub, "a subgraph's update shows its own state's fields")
	require.JSONEq(t, `{"inner":{"log":["inner:note:t"]}}`, string(evs[3].Data))

	// Without stream_subgraphs, only the root's events.
	r = e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "nested", "input": map[string]any{"topic": "u"}, "stream_mode": []string{"updates", "messages-tuple"},
	})
	require.Equal(t, []string{"metadata", "updates", "end"}, names(parseSSE(t, r.body)))
}
