package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type joinWords struct{}

func (joinWords) Reduce(old, update string) string {
	if old == "" {
		return update
	}
	return old + " " + update
}

type viewState struct {
	Items state.Append[int]
	Last  state.Value[int]
	Sum   state.Sum[int]
	Words state.Reduced[string, joinWords]
	Msgs  state.Messages
	Note  state.Value[string]
}

// route adds an edge from -> to: a router that always answers to when
// routed, a static edge otherwise.
func route(b *graph.Builder[viewState], from, to string, routed bool) {
	if !routed {
		b.AddEdge(from, to)
		return
	}
	b.AddConditionalEdges(from, func(_ context.Context, s viewState) (string, error) { return to, nil })
}

func words(w string) state.Reduced[string, joinWords] {
	var r state.Reduced[string, joinWords]
	r.Update(w)
	return r
}

func msg(id, text string) state.Message {
	m := state.Human(text)
	m.ID = id
	return m
}

// A node's writes merge the same way, and the checkpoints record the same
// values and versions, whether a router follows the node (a lone task
// whose branch view becomes the step's state) or a static edge (the
// merge at the step's end): for every reducer, a node writing nothing, a
// command node, a subgraph, an interrupt and its resume, in every
// durability mode, and the values and updates streamed.
func TestARoutedStepSavesWhatAStaticEdgeSaves(t *testing.T) {
	sub := func() *graph.Graph[viewState] {
		b := graph.New[viewState]()
		b.AddNode("inner", func(_ context.Context, s viewState) (viewState, error) {
			return viewState{Items: state.Items(100 + s.Items.Len()), Words: words("sub")}, nil
		})
		b.AddEdge(graph.Start, "inner")
		b.AddEdge("inner", graph.End)
		g, err := b.Compile()
		require.NoError(t, err)
		return g
	}()
	write := func(_ context.Context, s viewState) (viewState, error) {
		n := s.Items.Len()
		return viewState{
			Items: state.Items(n, n+1), Last: state.Set(n), Sum: state.Delta(n + 1),
			Words: words(fmt.Sprint("w", n)), Msgs: state.Msgs(msg(fmt.Sprint("m", n), "hi")),
		}, nil
	}
	nothing := func(_ context.Context, s viewState) (viewState, error) { return viewState{}, nil }
	tests := []struct {
		name   string
		build  func(b *graph.Builder[viewState], routed bool)
		resume bool // the first run interrupts; a second resumes it
	}{
		{"every reducer, then a node writing nothing", func(b *graph.Builder[viewState], routed bool) {
			b.AddNode("a", write).AddNode("b", write).AddNode("none", nothing)
			b.AddEdge(graph.Start, "a")
			route(b, "a", "b", routed)
			route(b, "b", "none", routed)
			route(b, "none", graph.End, routed)
		}, false},
		{"a command node's update and goto", func(b *graph.Builder[viewState], routed bool) {
			b.AddCommandNode("cmd", func(ctx context.Context, s viewState) (graph.Command[viewState], error) {
				u, _ := write(ctx, s)
				u.Note = state.Set("cmd")
				return graph.Command[viewState]{Update: u, Goto: []string{"b"}}, nil
			})
			b.AddNode("b", write).AddNode("c", func(_ context.Context, s viewState) (viewState, error) {
				return viewState{Items: state.Items(7), Sum: state.Delta(7), Words: words("c"), Msgs: state.Msgs(msg("c", "c"))}, nil
			})
			b.AddEdge(graph.Start, "cmd")
			route(b, "cmd", "c", routed) // goto b and c: a step of two tasks
			route(b, "b", graph.End, routed)
			route(b, "c", graph.End, routed)
		}, false},
		{"a subgraph node", func(b *graph.Builder[viewState], routed bool) {
			b.AddNode("a", write)
			b.AddCommandNode("sub", graph.Subgraph[viewState, viewState](sub, nil, nil))
			b.AddEdge(graph.Start, "a")
			route(b, "a", "sub", routed)
			route(b, "sub", graph.End, routed)
		}, false},
		{"a node that interrupts, then resumes", func(b *graph.Builder[viewState], routed bool) {
			b.AddNode("a", write)
			b.AddNode("ask", func(ctx context.Context, s viewState) (viewState, error) {
				ans, err := graph.Interrupt(ctx, "note?")
				if err != nil {
					return viewState{}, err
				}
				u, _ := write(ctx, s)
				u.Note = state.Set(fmt.Sprint(ans))
				return u, nil
			})
			b.AddEdge(graph.Start, "a")
			route(b, "a", "ask", routed)
			route(b, "ask", "a2", routed)
			b.AddNode("a2", write)
			route(b, "a2", graph.End, routed)
		}, true},
	}
	type run struct {
		checkpoints []string
		values      []string
		updates     []string
		out         string
	}
	show := func(s viewState) string {
		var ids []string
		for _, m := range s.Msgs.List() {
			ids = append(ids, m.ID)
		}
		return fmt.Sprint(s.Items.Get(), s.Last.Get(), s.Sum.Get(), s.Words.Get(), ids, s.Note.Get())
	}
	do := func(t *testing.T, build func(*graph.Builder[viewState], bool), routed, resume bool, d graph.Durability) run {
		saver := checkpoint.NewMemory()
		b := graph.New[viewState]()
		build(b, routed)
		g, err := b.Compile(graph.WithCheckpointer(saver))
		require.NoError(t, err)
		var r run
		opts := []graph.RunOption{graph.WithThread("t"), graph.WithDurability(d), graph.WithStreamModes(graph.ModeValues | graph.ModeUpdates)}
		stream := func(events func(func(graph.Event, error) bool)) {
			for ev, err := range events {
				var paused *graph.Interrupted
				if errors.As(err, &paused) {
					r.values = append(r.values, "interrupted")
					continue
				}
				require.NoError(t, err)
				switch ev.Mode {
				case graph.ModeValues:
					r.values = append(r.values, show(ev.Payload.(viewState)))
				case graph.ModeUpdates:
					if s, ok := ev.Payload.(viewState); ok {
						r.updates = append(r.updates, ev.Node+": "+show(s))
					}
				}
			}
		}
		stream(g.Stream(context.Background(), viewState{Items: state.Items(-1)}, opts...))
		if resume {
			stream(g.StreamResume(context.Background(), graph.Command[viewState]{Resume: "yes"}, opts...))
		}
		slices.Sort(r.updates) // parallel tasks report in the order they end
		out, err := g.GetState(context.Background(), graph.WithThread("t"))
		require.NoError(t, err)
		r.out = show(out.Values)
		// Versions differ from run to run: each is replaced by its rank
		// among the thread's versions.
		var cps []*checkpoint.Tuple
		for tp, err := range saver.List(context.Background(), "t", checkpoint.ListOptions{}) {
			require.NoError(t, err)
			cps = append(cps, tp)
		}
		slices.Reverse(cps) // oldest first
		var vers []int64
		for _, cp := range cps {
			for _, c := range cp.Channels {
				vers = append(vers, c.Version)
			}
		}
		slices.Sort(vers)
		vers = slices.Compact(vers)
		for _, cp := range cps {
			var chs []string
			for _, c := range cp.Channels {
				rank, _ := slices.BinarySearch(vers, c.Version)
				chs = append(chs, fmt.Sprintf("%s@%d=%s", c.Name, rank, c.Value))
			}
			r.checkpoints = append(r.checkpoints, fmt.Sprintf("%s %d: %s", cp.Metadata.Source, cp.Metadata.Step, strings.Join(chs, " ")))
		}
		return r
	}
	for _, tt := range tests {
		for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
			t.Run(fmt.Sprintf("%s/durability %d", tt.name, d), func(t *testing.T) {
				static := do(t, tt.build, false, tt.resume, d)
				routed := do(t, tt.build, true, tt.resume, d)
				require.NotEmpty(t, static.checkpoints)
				require.Equal(t, static, routed)
			})
		}
	}
}

// A reducer's error in the step of a lone task with a router is still an
// InvalidUpdateError naming the field and the node that wrote it.
func TestALoneRoutedTasksReducerErrorNamesFieldAndWriter(t *testing.T) {
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprint("routed ", routed), func(t *testing.T) {
			b := graph.New[viewState]()
			b.AddNode("rm", func(_ context.Context, s viewState) (viewState, error) {
				var u viewState
				u.Msgs.Remove("no such message")
				return u, nil
			})
			b.AddEdge(graph.Start, "rm")
			route(b, "rm", graph.End, routed)
			g, err := b.Compile()
			require.NoError(t, err)
			_, err = g.Invoke(context.Background(), viewState{})
			var iu *graph.InvalidUpdateError
			require.True(t, errors.As(err, &iu), "%v", err)
			require.Equal(t, "Msgs", iu.Field)
			require.Equal(t, []string{"rm"}, iu.Writers)
			var unknown *state.UnknownMessageError
			require.ErrorAs(t, err, &unknown)
		})
	}
}
