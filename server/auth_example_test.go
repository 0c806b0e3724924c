package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	srvsqlite "github.com/agentgraph/agentgraph/server/sqlite"
)

// Give each user a token, and keep each user's threads to that user.
func ExampleOwnerPolicy() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	saver, err := ckptsqlite.Open(ctx, filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	defer saver.Close()
	backend, err := srvsqlite.Open(ctx, filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	b := graph.New[Greeting]()
	b.AddNode("greet", func(ctx context.Context, s Greeting) (Greeting, error) { return s, nil })
	b.AddEdge(graph.Start, "greet")
	g, err := b.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		panic(err)
	}

	auth, err := server.TokenAuthenticator(map[string]server.Identity{
		"alice-t0ken": {ID: "alice"},
		"bob-t0ken":   {ID: "bob"},
	})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Graph("greeter", g), server.WithCheckpointer(saver), server.WithBackend(backend),
		server.WithAuth(auth), server.WithAuthorizer(server.OwnerPolicy()))
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	status := func(token, method, path, body string) int {
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	tid := "9f1c2a57-8a4b-4c1e-9d0a-3b2e1f0c4d5e"
	fmt.Println("alice creates:", status("alice-t0ken", "POST", "/threads", `{"thread_id": "`+tid+`"}`))
	fmt.Println("alice reads:", status("alice-t0ken", "GET", "/threads/"+tid, ""))
	fmt.Println("bob reads:", status("bob-t0ken", "GET", "/threads/"+tid, ""))
	fmt.Println("bob deletes:", status("bob-t0ken", "DELETE", "/threads/"+tid, ""))
	fmt.Println("no token:", status("", "GET", "/threads/"+tid, ""))
	// Output:
	// alice creates: 200
	// alice reads: 200
	// bob reads: 404
	// bob deletes: 404
	// no token: 401
}
