package workload

import (
	"context"
	"fmt"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// W5N is W5 with steps loop steps instead of 1,000: for runs of many
// threads at once on one saver, where 1,000 threads of 1,000 steps would
// take minutes per run. opts are further compile options.
func W5N(saver checkpoint.Saver, steps int, opts ...graph.CompileOption) (*graph.Graph[Counter], error) {
	return loop(steps, append([]graph.CompileOption{graph.WithCheckpointer(saver)}, opts...)...)
}

// RunW5N invokes a graph of [W5N] with steps steps once on thread and
// validates the result.
func RunW5N(ctx context.Context, g *graph.Graph[Counter], thread string, steps int) error {
	out, err := g.Invoke(ctx, Counter{Counter: state.Set(0)}, graph.WithThread(thread), graph.WithRecursionLimit(steps+100))
	if err != nil {
		return err
	}
	if out.Counter.Get() != steps {
		return fmt.Errorf("W5N: got counter %d, want %d", out.Counter.Get(), steps)
	}
	return nil
}
