// Package workload defines the five graph-execution workloads W1–W5 of the
// peer benchmark (bench/peers/RESULTS.md §2) on agentgraph, so that the
// go test benchmarks and the side-by-side harness measure the same graphs.
package workload

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// Sizes fixed by the workload definitions.
const (
	W2Steps = 10000
	W3Width = 50
	W4Sends = 1000
	W5Steps = 1000
	W1Nodes = 10
	w2Limit = W2Steps + 100
)

// Chain is W1's state: items (append) and counter (last value).
type Chain struct {
	Items   state.Append[int]
	Counter state.Value[int]
}

// W1 is a linear chain of ten nodes; n_i appends i and increments counter.
func W1() (*graph.Graph[Chain], error) {
	b := graph.New[Chain]()
	prev := graph.Start
	for i := range W1Nodes {
		name := "n" + strconv.Itoa(i)
		b.AddNode(name, func(_ context.Context, s Chain) (Chain, error) {
			return Chain{Items: state.Items(i), Counter: state.Set(s.Counter.Get() + 1)}, nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.End)
	return b.Compile()
}

// RunW1 invokes W1 once and validates the result.
func RunW1(ctx context.Context, g *graph.Graph[Chain]) error {
	out, err := g.Invoke(ctx, Chain{Counter: state.Set(0)})
	if err != nil {
		return err
	}
	if out.Counter.Get() != W1Nodes || len(out.Items.Get()) != W1Nodes || out.Items.Get()[9] != 9 {
		return fmt.Errorf("W1: got counter %d items %v", out.Counter.Get(), out.Items.Get())
	}
	return nil
}

// Counter is W2's and W5's state.
type Counter struct {
	Counter state.Value[int]
}

func loop(steps int, opts ...graph.CompileOption) (*graph.Graph[Counter], error) {
	b := graph.New[Counter]()
	b.AddNode("inc", func(_ context.Context, s Counter) (Counter, error) {
		return Counter{Counter: state.Set(s.Counter.Get() + 1)}, nil
	})
	b.AddEdge(graph.Start, "inc")
	b.AddConditionalEdges("inc", func(_ context.Context, s Counter) (string, error) {
		if s.Counter.Get() < steps {
			return "inc", nil
		}
		return graph.End, nil
	}, graph.WithDestinations("inc", graph.End))
	return b.Compile(opts...)
}

// W2 loops one node 10 000 times through a conditional edge.
func W2() (*graph.Graph[Counter], error) { return loop(W2Steps) }

// RunW2 invokes W2 once and validates the result.
func RunW2(ctx context.Context, g *graph.Graph[Counter]) error {
	out, err := g.Invoke(ctx, Counter{Counter: state.Set(0)}, graph.WithRecursionLimit(w2Limit))
	if err != nil {
		return err
	}
	if out.Counter.Get() != W2Steps {
		return fmt.Errorf("W2: got counter %d", out.Counter.Get())
	}
	return nil
}

// FanOut is W3's state.
type FanOut struct {
	Items state.Append[int]
	Sum   state.Value[int]
}

// W3 fans out from Start to 50 nodes and joins them into one.
func W3() (*graph.Graph[FanOut], error) {
	b := graph.New[FanOut]()
	var names []string
	for i := range W3Width {
		name := "p" + strconv.Itoa(i)
		names = append(names, name)
		b.AddNode(name, func(_ context.Context, _ FanOut) (FanOut, error) {
			return FanOut{Items: state.Items(i)}, nil
		})
		b.AddEdge(graph.Start, name)
	}
	b.AddNode("join", func(_ context.Context, s FanOut) (FanOut, error) {
		sum := 0
		for _, x := range s.Items.Get() {
			sum += x
		}
		return FanOut{Sum: state.Set(sum)}, nil
	})
	b.AddJoin(names, "join")
	b.AddEdge("join", graph.End)
	return b.Compile()
}

// RunW3 invokes W3 once and validates the result.
func RunW3(ctx context.Context, g *graph.Graph[FanOut]) error {
	out, err := g.Invoke(ctx, FanOut{})
	if err != nil {
		return err
	}
	if len(out.Items.Get()) != W3Width || out.Sum.Get() != 1225 {
		return fmt.Errorf("W3: got %d items, sum %d", len(out.Items.Get()), out.Sum.Get())
	}
	return nil
}

// MapReduce is W4's state; I is the per-task input of a Send.
type MapReduce struct {
	Results state.Append[int]
	N       state.Value[int]
	I       state.Value[int]
}

// W4 emits 1 000 Sends to a worker that appends 2*i.
func W4() (*graph.Graph[MapReduce], error) {
	b := graph.New[MapReduce]()
	b.AddNode("emit", func(_ context.Context, s MapReduce) (MapReduce, error) {
		return MapReduce{N: state.Set(s.N.Get())}, nil
	})
	b.AddNode("worker", func(_ context.Context, s MapReduce) (MapReduce, error) {
		return MapReduce{Results: state.Items(2 * s.I.Get())}, nil
	})
	b.AddEdge(graph.Start, "emit")
	b.AddBranch("emit", func(_ context.Context, s MapReduce) (graph.Route[MapReduce], error) {
		sends := make([]graph.Send[MapReduce], s.N.Get())
		for i := range sends {
			sends[i] = graph.Send[MapReduce]{Node: "worker", Arg: MapReduce{I: state.Set(i)}}
		}
		return graph.Route[MapReduce]{Sends: sends}, nil
	}, graph.WithDestinations("worker"))
	b.AddEdge("worker", graph.End)
	return b.Compile()
}

// RunW4 invokes W4 once and validates the result.
func RunW4(ctx context.Context, g *graph.Graph[MapReduce]) error {
	out, err := g.Invoke(ctx, MapReduce{N: state.Set(W4Sends)})
	if err != nil {
		return err
	}
	sum := 0
	for _, x := range out.Results.Get() {
		sum += x
	}
	if len(out.Results.Get()) != W4Sends || sum != 999000 {
		return fmt.Errorf("W4: got %d results, sum %d", len(out.Results.Get()), sum)
	}
	return nil
}

// W5 is W2 with 1 000 steps and a checkpointer that counts the
// checkpoints it is asked to write; opts are further compile options.
func W5(saver checkpoint.Saver, opts ...graph.CompileOption) (*graph.Graph[Counter], error) {
	return W5N(saver, W5Steps, opts...)
}

var thread atomic.Int64

// LastThread returns the thread of the latest RunW5.
func LastThread() string { return "w5-" + strconv.FormatInt(thread.Load(), 10) }

// RunW5 invokes W5 once on a fresh thread and validates the result.
func RunW5(ctx context.Context, g *graph.Graph[Counter]) error {
	return RunW5N(ctx, g, "w5-"+strconv.FormatInt(thread.Add(1), 10), W5Steps)
}

// CountingSaver wraps a saver and counts Put calls.
type CountingSaver struct {
	checkpoint.Saver
	Puts atomic.Int64
}

// DeleteThread deletes a thread when the saver can.
func (c *CountingSaver) DeleteThread(ctx context.Context, id string) error {
	if d, ok := c.Saver.(checkpoint.ThreadDeleter); ok {
		return d.DeleteThread(ctx, id)
	}
	return fmt.Errorf("workload: %T cannot delete threads", c.Saver)
}

// Put counts and delegates.
func (c *CountingSaver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	c.Puts.Add(1)
	return c.Saver.Put(ctx, cp)
}
