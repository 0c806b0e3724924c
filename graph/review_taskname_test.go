package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// reviewReading is what a node read of its own identity through its
// context.
type reviewReading struct {
	name, id string
	step     int
}

func readIdentity(ctx context.Context) reviewReading {
	return reviewReading{name: graph.NodeName(ctx), id: graph.TaskID(ctx), step: graph.Step(ctx)}
}

// A graph of more nodes than a task header's packed name index holds
// (2^14) names every node, on either side of the limit, reached by a
// static name or by one built at run time, pulled or sent; its task IDs
// are the stored format's, and the pending writes stored under them are
// applied on resume (the task that finished is not run again).
func TestTasksOfAGraphOfMoreThan2To14NodesNameTheirNodesAndKeepTheirIDs(t *testing.T) {
	type S struct {
		L state.Append[string]
	}
	const nodes = 1<<14 + 20
	name := func(i int) string { return fmt.Sprintf("n%05d", i) }
	// "hub" sorts before every "n…": n%05d i is at index i+2 of the
	// graph's table of names (Start's is 0); the last packed index is
	// 2^14-1.
	pulled := []int{0, 1<<14 - 4, 1<<14 - 3, 1<<14 - 2, 1<<14 - 1, nodes - 1}
	sent := []int{0, 1<<14 - 2, nodes - 1}
	finishes := name(1<<14 - 2) // does not interrupt: its write is pending

	var (
		mu    sync.Mutex
		seen  = map[string][]reviewReading{} // by the name the node was added as
		calls = map[string]int{}
	)
	b := graph.New[S]()
	b.AddNode("hub", func(context.Context, S) (S, error) { return S{}, nil })
	b.AddEdge(graph.Start, "hub")
	b.AddBranch("hub", func(context.Context, S) (graph.Route[S], error) {
		var r graph.Route[S]
		for _, i := range pulled {
			r.Nodes = append(r.Nodes, strings.Clone(name(i))) // not the node's bytes
		}
		for _, i := range sent {
			r.Sends = append(r.Sends, graph.Send[S]{Node: strings.Clone(name(i))})
		}
		return r, nil
	})
	for i := range nodes {
		n := name(i)
		b.AddNode(n, func(ctx context.Context, _ S) (S, error) {
			mu.Lock()
			seen[n] = append(seen[n], readIdentity(ctx))
			calls[n]++
			mu.Unlock()
			if n == finishes {
				return S{L: state.Items(n)}, nil
			}
			v, err := graph.Interrupt(ctx, n)
			if err != nil {
				return S{}, err
			}
			return S{L: state.Items(fmt.Sprint(n, ":", v))}, nil
		})
	}
	saver := checkpoint.NewMemory()
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	th := graph.WithThread("big")
	_, err = g.Invoke(t.Context(), S{}, th)
	var in *graph.Interrupted
	require.ErrorAs(t, err, &in)

	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	cp, step := snap.CheckpointID, snap.Metadata.Step+1
	var want []string
	for _, i := range pulled {
		want = append(want, name(i)+" "+wantTaskID(cp, "", step, name(i), false, 0))
	}
	for k, i := range sent {
		want = append(want, name(i)+" "+wantTaskID(cp, "", step, name(i), true, k))
	}
	var got []string
	for _, tk := range snap.Tasks {
		got = append(got, tk.Name+" "+tk.ID)
	}
	require.ElementsMatch(t, want, got, "the tasks of the paused step")

	mu.Lock()
	var read []string
	for n, rs := range seen {
		for _, r := range rs {
			require.Equal(t, n, r.name, "the name a node reads is its own")
			require.Equal(t, step, r.step)
			read = append(read, r.name+" "+r.id)
		}
	}
	mu.Unlock()
	require.ElementsMatch(t, want, read, "the IDs the nodes read are the stored ones")

	answers := map[string]any{}
	for _, x := range snap.Interrupts {
		answers[x.ID] = "ok"
	}
	require.Len(t, answers, len(want)-2) // finishes, pulled and sent, did not pause
	out, err := g.Resume(t.Context(), graph.Command[S]{ResumeMap: answers}, th)
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, 2, calls[finishes], "the task that finished is not run again (its pull and its Send)")
	mu.Unlock()
	require.Len(t, out.L.Get(), len(want))
	require.Equal(t, 2, countOf(out.L.Get(), finishes), "its two writes, each applied once")
	for _, x := range out.L.Get() {
		require.True(t, x == finishes || strings.HasSuffix(x, ":ok"), x)
	}
}

// A node of a subgraph reads its own graph's node name (its graph's table
// of names, not its parent's) through its context, and so does a
// goroutine that keeps the context after the node returned, while the
// parent runs on and later runs reuse the slabs of contexts; with the node
// run on a goroutine of its own (a timeout, a stream) too, and reached by
// a name built at run time.
func TestAKeptSubgraphContextNamesTheSubgraphsNodeWhileLaterRunsReuseSlabs(t *testing.T) {
	type S struct {
		L state.Append[string]
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		stream  bool
		saver   bool
	}{
		{name: "invoke"},
		{name: "inner node with a timeout", timeout: time.Minute},
		{name: "streamed", stream: true},
		{name: "checkpointed", saver: true},
		{name: "streamed, checkpointed, timeout", timeout: time.Minute, stream: true, saver: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				wg       sync.WaitGroup
				stop     = make(chan struct{})
				mu       sync.Mutex
				problems []string
			)
			report := func(format string, args ...any) {
				mu.Lock()
				if len(problems) < 20 {
					problems = append(problems, fmt.Sprintf(format, args...))
				}
				mu.Unlock()
			}
			keep := func(ctx context.Context, want string) {
				first := readIdentity(ctx)
				if first.name != want {
					report("node %s reads its name as %q", want, first.name)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						if r := readIdentity(ctx); r != first {
							report("kept context of %s: %+v, then %+v", want, first, r)
							return
						}
						select {
						case <-stop:
							return
						default:
							time.Sleep(50 * time.Microsecond)
						}
					}
				}()
			}
			var nopts []graph.NodeOption
			if tc.timeout > 0 {
				nopts = append(nopts, graph.WithNodeTimeout(tc.timeout))
			}
			cb := graph.New[S]()
			cb.AddNode("route", func(ctx context.Context, _ S) (S, error) {
				keep(ctx, "route")
				return S{}, nil
			})
			cb.AddEdge(graph.Start, "route")
			cb.AddBranch("route", func(context.Context, S) (graph.Route[S], error) {
				in := fmt.Sprint("in", "ner") // a name built at run time
				return graph.Route[S]{Nodes: []string{in}, Sends: []graph.Send[S]{{Node: in}, {Node: in}}}, nil
			})
			cb.AddNode("inner", func(ctx context.Context, _ S) (S, error) {
				keep(ctx, "inner")
				return S{L: state.Items("inner")}, nil
			}, nopts...)
			child, err := cb.Compile()
			require.NoError(t, err)

			// The parent's names sort so that no index of the child's
			// table names the same node in the parent's.
			pb := graph.New[S]()
			pb.AddNode("a", func(ctx context.Context, _ S) (S, error) {
				keep(ctx, "a")
				return S{}, nil
			})
			pb.AddNode("b", func(ctx context.Context, _ S) (S, error) {
				keep(ctx, "b")
				return S{}, nil
			})
			pb.AddCommandNode("sub", graph.Subgraph[S, S](child, nil, nil), nopts...)
			pb.AddNode("z", func(ctx context.Context, _ S) (S, error) {
				keep(ctx, "z")
				return S{}, nil
			})
			pb.AddEdge(graph.Start, "a")
			pb.AddEdge("a", "b")
			pb.AddEdge("a", "sub")
			pb.AddEdge("sub", "z")
			pb.AddEdge("b", "z")
			var copts []graph.CompileOption
			if tc.saver {
				copts = append(copts, graph.WithCheckpointer(checkpoint.NewMemory()))
			}
			g, err := pb.Compile(copts...)
			require.NoError(t, err)

			var runs sync.WaitGroup
			for w := range 2 {
				runs.Add(1)
				go func() {
					defer runs.Done()
					for i := range 40 {
						opts := []graph.RunOption{graph.WithThread(fmt.Sprint("t", w, "-", i))}
						var out S
						var err error
						if tc.stream {
							opts = append(opts, graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues), graph.WithSubgraphs())
							for ev, e := range g.Stream(t.Context(), S{}, opts...) {
								if e != nil {
									err = e
									break
								}
								if ev.Mode == graph.ModeValues && ev.Namespace == "" {
									if s, ok := ev.Payload.(S); ok {
										out = s
									}
								}
							}
						} else {
							out, err = g.Invoke(t.Context(), S{}, opts...)
						}
						if err != nil {
							report("run: %v", err)
							return
						}
						if got := out.L.Len(); got != 3 {
							report("run wrote %d items: %v", got, out.L.Get())
						}
					}
				}()
			}
			runs.Wait()
			time.Sleep(20 * time.Millisecond) // the kept contexts read on
			close(stop)
			wg.Wait()
			require.Empty(t, problems)
		})
	}
}

func countOf(list []string, x string) int {
	n := 0
	for _, y := range list {
		if y == x {
			n++
		}
	}
	return n
}
