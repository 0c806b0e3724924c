package client_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/client"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/store"
)

const token = "s3cret"

// AgentState is the state of the served test graphs.
type AgentState struct {
	Topic  state.Value[string]  `json:"topic"`
	Log    state.Append[string] `json:"log"`
	Answer state.Value[string]  `json:"answer"`
	Count  state.Sum[int]       `json:"count"`
}

// agentGraph: plan (a custom event, a model's message) → ask (interrupt)
// → finish: the graph "agent" of server/testdata/ref/graphs.mjs, which
// LangGraph's JS server serves in the comparison.
func agentGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("plan", func(ctx context.Context, s AgentState) (AgentState, error) {
		graph.StreamWriter(ctx)(map[string]any{"progress": "planning " + s.Topic.Get()})
		graph.MessageWriter(ctx)(graph.MessageChunk{MessageID: "m1", Text: "thinking"})
		s.Log.Append("plan:" + s.Topic.Get())
		s.Count.Add(1)
		return s, nil
	})
	b.AddNode("ask", func(ctx context.Context, s AgentState) (AgentState, error) {
		ans, err := graph.Interrupt(ctx, map[string]any{"question": "approve " + s.Topic.Get() + "?"})
		if err != nil {
			return s, err
		}
		s.Answer.Set(fmt.Sprint(ans))
		s.Log.Append("ask")
		return s, nil
	})
	b.AddNode("finish", func(ctx context.Context, s AgentState) (AgentState, error) {
		s.Log.Append("finish")
		return s, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddEdge("plan", "ask")
	b.AddEdge("ask", "finish")
	b.AddEdge("finish", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// slowGraph: one node "step" held until the test releases it.
func slowGraph(t *testing.T, saver checkpoint.Saver, started chan<- string, release <-chan struct{}) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("step", func(ctx context.Context, s AgentState) (AgentState, error) {
		select {
		case started <- s.Topic.Get():
		case <-ctx.Done():
			return s, ctx.Err()
		}
		select {
		case <-release:
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Log.Append("step:" + s.Topic.Get())
		return s, nil
	})
	b.AddEdge(graph.Start, "step")
	b.AddEdge("step", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func boomGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("boom", func(ctx context.Context, s AgentState) (AgentState, error) {
		return s, errors.New("kaboom")
	})
	b.AddEdge(graph.Start, "boom")
	b.AddEdge("boom", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// Inner is the state of the nested graph's subgraph.
type Inner struct {
	Note state.Value[string] `json:"note"`
}

// nestedGraph: a node "inner" that runs a subgraph of one node "write".
func nestedGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	sb := graph.New[Inner]()
	sb.AddNode("write", func(ctx context.Context, c Inner) (Inner, error) {
		c.Note.Set("note:" + c.Note.Get())
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

// twiceGraph asks two questions in two nodes: first → second.
func twiceGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	for _, name := range []string{"first", "second"} {
		b.AddNode(name, func(ctx context.Context, s AgentState) (AgentState, error) {
			ans, err := graph.Interrupt(ctx, map[string]any{"question": name + " about " + s.Topic.Get() + "?"})
			if err != nil {
				return s, err
			}
			s.Log.Append(name + ":" + fmt.Sprint(ans))
			return s, nil
		})
	}
	b.AddEdge(graph.Start, "first")
	b.AddEdge("first", "second")
	b.AddEdge("second", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// pairGraph asks two questions at once, in two parallel nodes.
func pairGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	for _, name := range []string{"left", "right"} {
		b.AddNode(name, func(ctx context.Context, s AgentState) (AgentState, error) {
			ans, err := graph.Interrupt(ctx, name+"?")
			if err != nil {
				return s, err
			}
			s.Log.Append(name + ":" + fmt.Sprint(ans))
			return s, nil
		})
		b.AddEdge(graph.Start, name)
		b.AddEdge(name, graph.End)
	}
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// env is package server serving the test graphs over real HTTP.
type env struct {
	srv     *httptest.Server
	c       *client.Client
	started chan string
	release chan struct{}
}

func newEnv(t *testing.T, opts ...client.Option) *env {
	t.Helper()
	saver := checkpoint.NewMemory()
	e := &env{started: make(chan string), release: make(chan struct{})}
	s, err := server.New(
		server.Graph("agent", agentGraph(t, saver)),
		server.Graph("slow", slowGraph(t, saver, e.started, e.release)),
		server.Graph("boom", boomGraph(t, saver)),
		server.Graph("nested", nestedGraph(t, saver)),
		server.Graph("twice", twiceGraph(t, saver)),
		server.Graph("pair", pairGraph(t, saver)),
		server.WithCheckpointer(saver),
		server.WithStore(store.NewMemory()),
		server.WithAuthToken(token),
	)
	require.NoError(t, err)
	e.srv = httptest.NewServer(s)
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(context.Background()))
		e.srv.CloseClientConnections()
		e.srv.Close()
	})
	e.c, err = client.New(e.srv.URL, append([]client.Option{client.WithAPIKey(token), client.WithHTTPClient(e.srv.Client())}, opts...)...)
	require.NoError(t, err)
	return e
}

// collect drains a stream.
func collect(t *testing.T, seq func(func(client.Part, error) bool)) ([]client.Part, error) {
	t.Helper()
	var parts []client.Part
	for p, err := range seq {
		if err != nil {
			return parts, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func events(parts []client.Part) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Event
	}
	return out
}

// newUUID returns a random (version 4) UUID: LangGraph servers want one
// as a thread id.
func newUUID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
