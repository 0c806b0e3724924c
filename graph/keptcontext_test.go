package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// keptReading is what a goroutine started by a node read from the node's
// context, every time it looked.
type keptReading struct {
	name, id   string
	step, left int
}

func (r keptReading) String() string {
	return fmt.Sprintf("%s/%s step %d (%d left)", r.name, r.id, r.step, r.left)
}

// A node's context is an immutable value: goroutines the node started keep
// reading it (name, step, task ID, remaining steps) and writing to the
// stream for the rest of the run and after it (where Interrupt fails),
// while later steps run nodes of their own. Under -race this finds any
// field of the context that the runtime writes again; the readings find
// any value that changed.
func TestAKeptContextReadsTheSameValuesForeverWithoutARace(t *testing.T) {
	type S struct {
		N state.Sum[int]
	}
	for _, tt := range []struct {
		name   string
		stream graph.Mode // 0: Invoke
		saver  bool
		fanOut bool // the keeping nodes run in one concurrent step
		// limits gives every run another recursion limit, so that runs
		// share no settings (and a context reads its own run's).
		limits bool
	}{
		{name: "invoke"},
		{name: "invoke with checkpointer", saver: true},
		{name: "stream custom and messages", stream: graph.ModeCustom | graph.ModeMessages | graph.ModeUpdates},
		{name: "concurrent step", fanOut: true},
		{name: "concurrent step streaming", fanOut: true, stream: graph.ModeCustom | graph.ModeUpdates | graph.ModeTasks},
		{name: "runs with other limits", limits: true},
		{name: "concurrent steps of runs with other limits", fanOut: true, limits: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				wg       sync.WaitGroup
				stop     = make(chan struct{})
				mu       sync.Mutex
				problems []string
				kept     []context.Context
			)
			keep := func(ctx context.Context, s S) (S, error) {
				want := keptReading{graph.NodeName(ctx), graph.TaskID(ctx), graph.Step(ctx), graph.RemainingSteps(ctx)}
				custom, msg := graph.StreamWriter(ctx), graph.MessageWriter(ctx)
				mu.Lock()
				kept = append(kept, ctx)
				mu.Unlock()
				wg.Go(func() {
					for i := 0; ; i++ {
						got := keptReading{graph.NodeName(ctx), graph.TaskID(ctx), graph.Step(ctx), graph.RemainingSteps(ctx)}
						if got != want {
							mu.Lock()
							problems = append(problems, fmt.Sprintf("read %v, want %v", got, want))
							mu.Unlock()
							return
						}
						custom(i)
						msg(graph.MessageChunk{Text: "t"})
						select {
						case <-stop:
							return
						default:
						}
					}
				})
				var out S
				out.N.Add(1)
				return out, nil
			}
			b := graph.New[S]()
			names := []string{"k0", "k1", "k2", "k3"}
			for _, n := range names {
				b.AddNode(n, keep)
			}
			if tt.fanOut {
				for _, n := range names {
					b.AddEdge(graph.Start, n)
				}
			} else {
				b.AddEdge(graph.Start, names[0])
				for i := 1; i < len(names); i++ {
					b.AddEdge(names[i-1], names[i])
				}
			}
			var opts []graph.CompileOption
			var run []graph.RunOption
			if tt.saver {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()))
			}
			g, err := b.Compile(opts...)
			require.NoError(t, err)
			for i := range 3 { // later runs reuse the pooled run state
				run = nil
				if tt.saver {
					run = append(run, graph.WithThread(fmt.Sprint(i)))
				}
				if tt.limits {
					run = append(run, graph.WithRecursionLimit(10+i))
				}
				if tt.stream == 0 {
					out, err := g.Invoke(t.Context(), S{}, run...)
					require.NoError(t, err)
					require.Equal(t, 4, out.N.Get())
					continue
				}
				for _, err := range g.Stream(t.Context(), S{}, append(run, graph.WithStreamModes(tt.stream))...) {
					require.NoError(t, err)
				}
			}
			for _, ctx := range kept {
				_, err := graph.Interrupt(ctx, "late")
				require.Error(t, err, "a node that returned can no longer interrupt")
			}
			close(stop)
			wg.Wait()
			require.Empty(t, problems)
		})
	}
}
