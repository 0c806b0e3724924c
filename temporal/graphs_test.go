package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// St is the state of the test graphs.
type St struct {
	Log  state.Append[string] `json:"log"`
	N    state.Sum[int]       `json:"n"`
	Mode state.Value[string]  `json:"mode"`
	Blob state.Value[string]  `json:"blob"`
}

// appendNode returns a node that appends its name to Log and adds one to N.
func appendNode(name string) graph.NodeFunc[St] {
	return func(ctx context.Context, s St) (St, error) {
		var o St
		o.Log.Append(name)
		o.N.Add(1)
		return o, nil
	}
}

// graphCase is a graph run both in process and on Temporal.
type graphCase struct {
	name  string
	build func(saver checkpoint.Saver) (*graph.Graph[St], error)
	input St
	// answers answer the interrupts raised, keyed by the interrupting
	// node's name.
	answers map[string]string
	// fails marks a graph whose run fails with a node error.
	fails bool
}

func chain(n int) func(checkpoint.Saver) (*graph.Graph[St], error) {
	return func(saver checkpoint.Saver) (*graph.Graph[St], error) {
		b := graph.New[St]()
		prev := graph.Start
		for i := range n {
			name := fmt.Sprintf("n%02d", i)
			b.AddNode(name, appendNode(name))
			b.AddEdge(prev, name)
			prev = name
		}
		b.AddEdge(prev, graph.End)
		return b.Compile(graph.WithCheckpointer(saver))
	}
}

func cases() []graphCase {
	return []graphCase{
		{name: "linear", build: chain(3), input: St{Log: state.Items("in")}},
		{name: "branching", input: St{Mode: state.Set("left")}, build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddNode("check", appendNode("check"))
			b.AddNode("left", appendNode("left"))
			b.AddNode("right", appendNode("right"))
			b.AddEdge(graph.Start, "check")
			b.AddConditionalEdges("check", func(ctx context.Context, s St) (string, error) {
				return s.Mode.Get(), nil
			}, graph.WithPathMap(map[string]string{"left": "left", "right": "right"}))
			b.AddEdge("left", graph.End)
			b.AddEdge("right", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "send fan-out", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddNode("split", appendNode("split"))
			b.AddNode("work", func(ctx context.Context, s St) (St, error) {
				var o St
				o.Log.Append("work " + s.Mode.Get())
				o.N.Add(len(s.Mode.Get()))
				return o, nil
			})
			b.AddNode("collect", appendNode("collect"))
			b.AddEdge(graph.Start, "split")
			b.AddBranch("split", func(ctx context.Context, s St) (graph.Route[St], error) {
				var r graph.Route[St]
				for _, w := range []string{"e", "dd", "ccc", "bbbb", "a"} {
					r.Sends = append(r.Sends, graph.Send[St]{Node: "work", Arg: St{Mode: state.Set(w)}})
				}
				return r, nil
			}, graph.WithDestinations("work"))
			b.AddEdge("work", "collect")
			b.AddEdge("collect", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "join", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			for _, n := range []string{"a", "b", "c", "c2", "d"} {
				b.AddNode(n, appendNode(n))
			}
			b.AddEdge(graph.Start, "a")
			b.AddEdge("a", "b")
			b.AddEdge("a", "c")
			b.AddEdge("c", "c2")
			b.AddJoin([]string{"b", "c2"}, "d")
			b.AddEdge("d", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "interrupt and resume", answers: map[string]string{"ask": "yes"}, build: askGraph("ask")},
		{name: "two interrupts answered by ID", answers: map[string]string{"ask1": "one", "ask2": "two"}, build: askGraph("ask1", "ask2")},
		{name: "retry that succeeds", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			calls := 0
			b := graph.New[St]()
			b.AddNode("a", appendNode("a"))
			b.AddNode("flaky", func(ctx context.Context, s St) (St, error) {
				calls++
				if calls < 3 {
					return St{}, fmt.Errorf("transient failure %d", calls)
				}
				var o St
				o.Log.Append(fmt.Sprintf("flaky after %d calls", calls))
				return o, nil
			}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
			b.AddEdge(graph.Start, "a")
			b.AddEdge("a", "flaky")
			b.AddEdge("flaky", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "node that fails for good", fails: true, build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddNode("a", appendNode("a"))
			b.AddNode("boom", func(ctx context.Context, s St) (St, error) {
				return St{}, errors.New("boom: no luck")
			}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
			b.AddEdge(graph.Start, "a")
			b.AddEdge("a", "boom")
			b.AddEdge("boom", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "command node", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddCommandNode("route", func(ctx context.Context, s St) (graph.Command[St], error) {
				var o St
				o.Log.Append("route")
				o.Mode.Set("routed")
				return graph.Command[St]{Update: o, Goto: []string{"b"}}, nil
			}, graph.WithDestinations("b"))
			b.AddNode("b", appendNode("b"))
			b.AddEdge(graph.Start, "route")
			b.AddEdge("b", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "state of 150 KB", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddNode("big", func(ctx context.Context, s St) (St, error) {
				var o St
				o.Blob.Set(strings.Repeat("0123456789abcdef", 150<<10/16))
				return o, nil
			})
			b.AddNode("after", func(ctx context.Context, s St) (St, error) {
				var o St
				o.Log.Append(fmt.Sprintf("blob of %d bytes", len(s.Blob.Get())))
				return o, nil
			})
			b.AddEdge(graph.Start, "big")
			b.AddEdge("big", "after")
			b.AddEdge("after", graph.End)
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "loop of twelve steps", build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			b := graph.New[St]()
			b.AddNode("inc", appendNode("inc"))
			b.AddEdge(graph.Start, "inc")
			b.AddConditionalEdges("inc", func(ctx context.Context, s St) (string, error) {
				if s.N.Get() < 12 {
					return "inc", nil
				}
				return graph.End, nil
			}, graph.WithDestinations("inc", graph.End))
			return b.Compile(graph.WithCheckpointer(saver))
		}},
		{name: "subgraph with an interrupt", answers: map[string]string{"inner ask": "ok"}, build: func(saver checkpoint.Saver) (*graph.Graph[St], error) {
			sb := graph.New[St]()
			sb.AddNode("inner", appendNode("inner"))
			sb.AddNode("inner ask", func(ctx context.Context, s St) (St, error) {
				v, err := graph.InterruptAs[string](ctx, "inner?")
				if err != nil {
					return s, err
				}
				var o St
				o.Log.Append("inner ask got " + v)
				return o, nil
			})
			sb.AddEdge(graph.Start, "inner")
			sb.AddEdge("inner", "inner ask")
			sub, err := sb.Compile()
			if err != nil {
				return nil, err
			}
			b := graph.New[St]()
			b.AddNode("a", appendNode("a"))
			b.AddCommandNode("sub", graph.Subgraph[St, St](sub, nil, nil))
			b.AddNode("z", appendNode("z"))
			b.AddEdge(graph.Start, "a")
			b.AddEdge("a", "sub")
			b.AddEdge("sub", "z")
			return b.Compile(graph.WithCheckpointer(saver))
		}},
	}
}

// caseNamed returns the case of cases() called name.
func caseNamed(t *testing.T, name string) graphCase {
	t.Helper()
	for _, c := range cases() {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no case %q", name)
	return graphCase{}
}

// askGraph returns a graph whose nodes, run in parallel, each ask for an
// answer and log it.
func askGraph(nodes ...string) func(checkpoint.Saver) (*graph.Graph[St], error) {
	return func(saver checkpoint.Saver) (*graph.Graph[St], error) {
		b := graph.New[St]()
		b.AddNode("before", appendNode("before"))
		b.AddEdge(graph.Start, "before")
		for _, n := range nodes {
			b.AddNode(n, func(ctx context.Context, s St) (St, error) {
				v, err := graph.InterruptAs[string](ctx, "approve "+n+"?")
				if err != nil {
					return s, err
				}
				var o St
				o.Log.Append(n + " got " + v)
				return o, nil
			})
			b.AddEdge("before", n)
			b.AddEdge(n, "after")
		}
		b.AddNode("after", appendNode("after"))
		b.AddEdge("after", graph.End)
		return b.Compile(graph.WithCheckpointer(saver))
	}
}
