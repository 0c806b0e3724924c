package remotegraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/client"
	"github.com/agentgraph/agentgraph/state"
)

// Review is the state of the deployed graph.
type Review struct {
	Doc      state.Value[string]  `json:"doc"`
	Notes    state.Append[string] `json:"notes"`
	Decision state.Value[string]  `json:"decision"`
}

// deploy serves the graph "review" — read → approve (asks a human) — the
// way a deployment would, on a local port, and returns its URL. In
// production this is your LangGraph Platform deployment or a process
// running package server; the client side below does not change.
func deploy() (url string, stop func()) {
	saver := checkpoint.NewMemory()
	b := graph.New[Review]()
	b.AddNode("read", func(ctx context.Context, r Review) (Review, error) {
		graph.StreamWriter(ctx)("reading " + r.Doc.Get())
		r.Notes.Append("read " + r.Doc.Get())
		return r, nil
	})
	b.AddNode("approve", func(ctx context.Context, r Review) (Review, error) {
		answer, err := graph.Interrupt(ctx, "publish "+r.Doc.Get()+"?")
		if err != nil {
			return r, err
		}
		r.Decision.Set(fmt.Sprint(answer))
		return r, nil
	})
	b.AddEdge(graph.Start, "read")
	b.AddEdge("read", "approve")
	b.AddEdge("approve", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Graph("review", g), server.WithCheckpointer(saver), server.WithAuthToken("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	return hs.URL, func() { _ = srv.Shutdown(context.Background()); hs.Close() }
}

// Stream a run, see it pause, answer it.
func Example_streamAndResume() {
	url, stop := deploy()
	defer stop()
	ctx := context.Background()

	c, err := client.New(url, client.WithAPIKey("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	th, err := c.Threads.Create(ctx, client.ThreadCreate{})
	if err != nil {
		log.Fatal(err)
	}
	for p, err := range c.Runs.Stream(ctx, th.ThreadID, "review", client.RunRequest{
		Input:      map[string]any{"doc": "q3.pdf"},
		StreamMode: []client.StreamMode{client.ModeUpdates, client.ModeCustom},
	}) {
		if err != nil {
			log.Fatal(err)
		}
		switch {
		case p.Event == "metadata": // the run's id, first
		case client.Interrupts(p.Data) != nil:
			fmt.Println("paused:", string(client.Interrupts(p.Data)[0].Value))
		default:
			fmt.Println(p.Event, string(p.Data))
		}
	}

	st, err := c.Threads.State(ctx, th.ThreadID, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("waiting at", st.Next, "asking", string(st.Interrupts()[0].Value))

	values, err := c.Runs.Wait(ctx, th.ThreadID, "review", client.RunRequest{
		Command: &client.Command{Resume: "yes"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(values))
	// Output:
	// custom "reading q3.pdf"
	// updates {"read":{"notes":["read q3.pdf"]}}
	// paused: "publish q3.pdf?"
	// waiting at [approve] asking "publish q3.pdf?"
	// {"doc":"q3.pdf","notes":["read q3.pdf"],"decision":"yes"}
}

// Errors: a status from the server, or a run that failed.
func Example_errors() {
	url, stop := deploy()
	defer stop()
	c, err := client.New(url, client.WithAPIKey("wrong"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Assistants.Get(context.Background(), "review")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println("status", apiErr.Status)
	}
	// Output:
	// status 403
}

// Publication is the state of the local graph that calls the deployed one.
type Publication struct {
	Doc      state.Value[string]  `json:"doc"`
	Steps    state.Append[string] `json:"steps"`
	Decision state.Value[string]  `json:"decision"`
}

// The deployed graph as a node of a local graph: its interrupt pauses the
// local run, and resuming the local run answers it.
func Example_remoteGraphAsNode() {
	url, stop := deploy()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url, client.WithAPIKey("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	review := client.NewRemoteGraph(c, "review")

	b := graph.New[Publication]()
	b.AddNode("review", client.Node(review,
		// in: the remote graph's input, from the local state
		func(p Publication) any { return map[string]any{"doc": p.Doc.Get()} },
		// out: the remote's final values, written to the local state
		func(p Publication, values json.RawMessage) (Publication, error) {
			var r struct{ Decision string }
			if err := json.Unmarshal(values, &r); err != nil {
				return p, err
			}
			p.Decision.Set(r.Decision)
			p.Steps.Append("reviewed")
			return p, nil
		}))
	b.AddNode("publish", func(ctx context.Context, p Publication) (Publication, error) {
		p.Steps.Append("published: " + p.Decision.Get())
		return p, nil
	})
	b.AddEdge(graph.Start, "review")
	b.AddEdge("review", "publish")
	b.AddEdge("publish", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		log.Fatal(err)
	}

	// The remote run goes on the same thread id: LangGraph servers want a UUID.
	thread := graph.WithThread("5f0c6a1e-2b7d-4c1a-9e3f-8a4b2c1d0e9f")
	var in Publication
	in.Doc.Set("q3.pdf")
	_, err = g.Invoke(ctx, in, thread)
	var paused *graph.Interrupted
	if errors.As(err, &paused) {
		fmt.Printf("paused in %s: %s\n", paused.Interrupts[0].Node, paused.Interrupts[0].Value)
	}
	out, err := g.Resume(ctx, graph.Command[Publication]{Resume: "yes"}, thread)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Steps.Get())
	// Output:
	// paused in review: "publish q3.pdf?"
	// [reviewed published: yes]
}
