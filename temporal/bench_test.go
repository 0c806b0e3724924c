package temporal_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// BenchmarkChain runs chains of 1 and 10 steps in process and as workflows
// of the SDK's test environment (per-activity=0: tasks as activities;
// 1: one superstep per activity; 10: all in one). The per-step overhead is the difference between the two lengths
// divided by 9, which cancels what a run costs once (a test environment,
// the input checkpoint).
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("inprocess/steps=%d", n), func(b *testing.B) {
			g, err := chain(n)(checkpoint.NewMemory())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if _, err := g.Invoke(ctx, St{}, graph.WithThread(fmt.Sprint(i))); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, per := range []int{0, 1, 10} {
			b.Run(fmt.Sprintf("testsuite/per-activity=%d/steps=%d", per, n), func(b *testing.B) {
				g, err := chain(n)(checkpoint.NewMemory())
				if err != nil {
					b.Fatal(err)
				}
				w, err := agtemporal.New("graph", g, perOption(per))
				if err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					i++
					env := newEnv()
					w.Register(env)
					env.ExecuteWorkflow(w.Name(), agtemporal.Input{Thread: fmt.Sprint(i)})
					if err := env.GetWorkflowError(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStepActivityDirect calls the step activity function directly,
// as the test environment would, without Temporal: what our side of a
// one-step activity costs (two state reads, a resume, the state's JSON).
func BenchmarkStepActivityDirect(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			g, err := chain(n)(checkpoint.NewMemory())
			if err != nil {
				b.Fatal(err)
			}
			w, err := agtemporal.New("graph", g)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				req := agtemporal.StepRequest{Thread: fmt.Sprint(i), RunID: "r", Start: true, Limit: 1}
				for {
					res, err := w.Step(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					if res.Done {
						break
					}
					req.Start = false
				}
			}
		})
	}
}

// BenchmarkChainDevServer runs the chains on the Temporal server at
// $AGENTGRAPH_TEMPORAL_ADDR with an in-process worker (skipped without a
// server): the per-step cost of Temporal's own round trips.
func BenchmarkChainDevServer(b *testing.B) {
	addr := os.Getenv(envAddr)
	if addr == "" {
		b.Skipf("no Temporal server (%s)", envAddr)
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	queue := fmt.Sprintf("agentgraph-bench-%d", time.Now().UnixNano())
	wk := worker.New(c, queue, worker.Options{})
	ws := map[string]*agtemporal.Workflow[St]{}
	for _, n := range []int{1, 10} {
		for _, per := range []int{0, 1, 10} {
			g, err := chain(n)(checkpoint.NewMemory())
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("per-activity=%d/steps=%d", per, n)
			w, err := agtemporal.New("bench-"+name, g, perOption(per))
			if err != nil {
				b.Fatal(err)
			}
			w.Register(wk)
			ws[name] = w
		}
	}
	if err := wk.Start(); err != nil {
		b.Fatal(err)
	}
	defer wk.Stop()
	ctx := context.Background()
	for _, n := range []int{1, 10} {
		for _, per := range []int{0, 1, 10} {
			name := fmt.Sprintf("per-activity=%d/steps=%d", per, n)
			w := ws[name]
			b.Run(name, func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					run, err := w.Start(ctx, c, fmt.Sprintf("%s-%s-%d", queue, name, i), St{}, client.StartWorkflowOptions{TaskQueue: queue})
					if err != nil {
						b.Fatal(err)
					}
					if err := run.Get(ctx, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
