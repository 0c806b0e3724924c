package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
)

// benchServer serves a one-node graph over loopback HTTP.
func benchServer(b *testing.B) *httptest.Server {
	saver := checkpoint.NewMemory()
	gb := graph.New[Greeting]()
	gb.AddNode("greet", func(ctx context.Context, s Greeting) (Greeting, error) {
		s.Reply.Set("hello, " + s.Name.Get())
		return s, nil
	})
	gb.AddEdge(graph.Start, "greet")
	gb.AddEdge("greet", graph.End)
	g, err := gb.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Graph("greeter", g), server.WithCheckpointer(saver), server.WithAuthToken(token))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	return hs
}

func benchPost(b *testing.B, hs *httptest.Server, path, body string) {
	req, _ := http.NewRequest("POST", hs.URL+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hs.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		b.Fatalf("%s: %d", path, res.StatusCode)
	}
}

// BenchmarkStatelessWait measures one POST /runs/wait of a one-node graph
// (temporary thread, run, checkpoints, thread deleted).
func BenchmarkStatelessWait(b *testing.B) {
	hs := benchServer(b)
	for b.Loop() {
		benchPost(b, hs, "/runs/wait", `{"assistant_id":"greeter","input":{"name":"Ada"}}`)
	}
}

// BenchmarkStatelessStream measures one POST /runs/stream with values and
// updates, read to its end.
func BenchmarkStatelessStream(b *testing.B) {
	hs := benchServer(b)
	for b.Loop() {
		benchPost(b, hs, "/runs/stream", `{"assistant_id":"greeter","input":{"name":"Ada"},"stream_mode":["values","updates"]}`)
	}
}

// BenchmarkStatelessStreamManyEvents measures one POST /runs/stream of a
// node that writes 100 custom events, read to its end: the cost of each
// event from the node to the client.
func BenchmarkStatelessStreamManyEvents(b *testing.B) {
	saver := checkpoint.NewMemory()
	gb := graph.New[Greeting]()
	gb.AddNode("chat", func(ctx context.Context, s Greeting) (Greeting, error) {
		w := graph.StreamWriter(ctx)
		for i := range 100 {
			w(map[string]int{"i": i})
		}
		return s, nil
	})
	gb.AddEdge(graph.Start, "chat")
	gb.AddEdge("chat", graph.End)
	g, err := gb.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Graph("chatty", g), server.WithCheckpointer(saver), server.WithAuthToken(token))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	for b.Loop() {
		benchPost(b, hs, "/runs/stream", `{"assistant_id":"chatty","input":{"name":"Ada"},"stream_mode":["custom"]}`)
	}
}
