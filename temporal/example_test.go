package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/temporal"
)

// A graph that asks a human runs as a workflow of the SDK's test
// environment: the run pauses at the interrupt, a signal answers it, and
// the final state is read back by reference from the saver.
func Example() {
	type State struct {
		Log state.Append[string]
	}
	b := graph.New[State]()
	b.AddNode("draft", func(ctx context.Context, s State) (State, error) {
		return State{Log: state.Items("drafted")}, nil
	})
	b.AddNode("review", func(ctx context.Context, s State) (State, error) {
		verdict, err := graph.InterruptAs[string](ctx, "publish the draft?")
		if err != nil {
			return s, err
		}
		return State{Log: state.Items("review: " + verdict)}, nil
	})
	b.AddEdge(graph.Start, "draft")
	b.AddEdge("draft", "review")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := temporal.New("publish", g)
	if err != nil {
		fmt.Println(err)
		return
	}

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	w.Register(env) // a worker.Worker in production
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(temporal.QueryState)
		var st temporal.Status
		_ = v.Get(&st)
		fmt.Printf("paused: %s asks %s\n", st.Interrupts[0].Node, st.Interrupts[0].Value)
		env.SignalWorkflow(temporal.SignalResume, temporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"yes"`)})
	}, time.Hour)
	in, _ := w.Input("thread-1", State{})
	env.ExecuteWorkflow(w.Name(), in)

	var st temporal.Status
	if err := env.GetWorkflowResult(&st); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := w.Values(context.Background(), st)
	fmt.Println(out.Log.Get(), "in", st.Steps, "supersteps,", st.Activities, "activities")
	// Output:
	// paused: review asks "publish the draft?"
	// [drafted review: yes] in 2 supersteps, 4 activities
}

// A worker process runs the graph's workflow and activity; a starter
// process starts a run, answers its interrupts and reads its final state.
// Both build the same graph on the same shared saver (checkpoint/postgres
// or checkpoint/sqlite); scripts/temporal-dev.sh starts a dev server.
func ExampleWorkflow_Register() {
	type State struct {
		Log state.Append[string]
	}
	ctx := context.Background()
	build := func() (*temporal.Workflow[State], error) {
		b := graph.New[State]()
		b.AddNode("work", func(ctx context.Context, s State) (State, error) {
			ok, err := graph.InterruptAs[bool](ctx, "go ahead?")
			if err != nil {
				return s, err
			}
			return State{Log: state.Items(fmt.Sprint("approved: ", ok))}, nil
		})
		b.AddEdge(graph.Start, "work")
		g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory())) // a shared saver in production
		if err != nil {
			return nil, err
		}
		return temporal.New("work", g)
	}
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The worker.
	w, err := build()
	if err != nil {
		fmt.Println(err)
		return
	}
	wk := worker.New(c, "agents", worker.Options{})
	w.Register(wk)
	if err := wk.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer wk.Stop()

	// The starter.
	run, err := w.Start(ctx, c, "thread-1", State{}, client.StartWorkflowOptions{TaskQueue: "agents"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		st, err := temporal.Query(ctx, c, "thread-1")
		if err != nil {
			fmt.Println(err)
			return
		}
		if st.Paused() {
			if err := temporal.AnswerChecked(ctx, c, "thread-1", st.Interrupts[0].ID, true); err != nil {
				fmt.Println(err)
				return
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var st temporal.Status
	if err := run.Get(ctx, &st); err != nil {
		fmt.Println(err)
		return
	}
	out, err := w.Values(ctx, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Log.Get())
}
