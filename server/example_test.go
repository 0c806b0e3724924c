package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// Greeting is the state of the example graph.
type Greeting struct {
	Name  state.Value[string] `json:"name"`
	Reply state.Value[string] `json:"reply"`
}

// Serve a graph and run it with POST /threads/{id}/runs/wait, as a
// LangGraph client would.
func Example() {
	saver := checkpoint.NewMemory()
	b := graph.New[Greeting]()
	b.AddNode("greet", func(ctx context.Context, s Greeting) (Greeting, error) {
		s.Reply.Set("hello, " + s.Name.Get())
		return s, nil
	})
	b.AddEdge(graph.Start, "greet")
	b.AddEdge("greet", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Graph("greeter", g), server.WithCheckpointer(saver), server.WithAuthToken("t0ken"))
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	post := func(path, body string) string {
		req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t0ken")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	tid := "9f1c2a57-8a4b-4c1e-9d0a-3b2e1f0c4d5e"
	post("/threads", `{"thread_id": "`+tid+`"}`)
	fmt.Println(post("/threads/"+tid+"/runs/wait", `{"assistant_id": "greeter", "input": {"name": "Ada"}}`))
	// Output: {"name":"Ada","reply":"hello, Ada"}
}
