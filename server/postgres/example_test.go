package postgres_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
	"github.com/agentgraph/agentgraph/state"
)

// Greeting is the example graph's state.
type Greeting struct {
	Name  state.Value[string] `json:"name"`
	Reply state.Value[string] `json:"reply"`
}

// One server process of several behind a load balancer: every process
// runs this program on the same database, and any of them serves any
// thread and run. (Not run by go test: it serves until killed.)
func Example() {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	pool, err := pgxpool.New(ctx, url) // the program opens the pool, and closes it
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	backend, err := postgres.New(ctx, pool) // threads and runs
	if err != nil {
		log.Fatal(err)
	}
	saver, err := pgsaver.Open(ctx, url) // checkpoints, shared too
	if err != nil {
		log.Fatal(err)
	}
	defer saver.Close()

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
		server.WithAuthToken(os.Getenv("AGENTGRAPH_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(":2024", srv))
}
