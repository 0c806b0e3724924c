package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
	"github.com/agentgraph/agentgraph/state"
)

// Greeting is the example graph's state.
type Greeting struct {
	Name  state.Value[string] `json:"name"`
	Reply state.Value[string] `json:"reply"`
}

// serve starts a graph server on the SQLite file path and returns its URL
// and the function that stops it.
func serve(ctx context.Context, path string) (string, func()) {
	saver, err := ckptsqlite.Open(ctx, path) // the checkpoints
	if err != nil {
		log.Fatal(err)
	}
	backend, err := sqlite.Open(ctx, path) // the threads and runs, in the same file
	if err != nil {
		log.Fatal(err)
	}
	b := graph.New[Greeting]()
	b.AddNode("greet", func(ctx context.Context, g Greeting) (Greeting, error) {
		var out Greeting
		out.Reply.Set("hello, " + g.Name.Get())
		return out, nil
	})
	b.AddEdge(graph.Start, "greet")
	g, err := b.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Graph("greeter", g), server.WithCheckpointer(saver), server.WithBackend(backend),
		server.WithoutAuthLoopbackOnly())
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	return hs.URL, func() {
		hs.Close()
		_ = srv.Shutdown(ctx)
		_ = backend.Close()
		_ = saver.Close()
	}
}

func post(url, body string, out any) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		log.Fatal(err)
	}
}

// A thread and its runs outlive the server that made them: a second
// server on the same file serves them.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")

	url, stop := serve(ctx, path)
	var th struct {
		ID string `json:"thread_id"`
	}
	post(url+"/threads", `{}`, &th)
	var out map[string]any
	post(url+"/threads/"+th.ID+"/runs/wait", `{"assistant_id": "greeter", "input": {"name": "Ada"}}`, &out)
	stop() // a restart

	url, stop = serve(ctx, path)
	defer stop()
	resp, err := http.Get(url + "/threads/" + th.ID + "/runs")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var runs []struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&runs); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out["reply"], len(runs), runs[0].Status)
	// Output: hello, Ada 1 success
}
