package graph_test

// Ports of LangGraph behavioural scenarios, section B of
// the project's LangGraph behavioural specification (not shipped) §7 (edges, joins, defer,
// schemas, caching). Python pins the completion order of parallel tasks
// with sleeps; here a task waits until the stream consumer has seen the
// update of the task that must finish first (abcfSeen), so the scenarios
// are run through Stream.

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// abcfSortedAdd is Python's sorted_add: sorted(x + y).
type abcfSortedAdd struct{}

func (abcfSortedAdd) Reduce(old, update []string) []string {
	out := append(slices.Clone(old), update...)
	slices.Sort(out)
	return out
}

// abcfRAG is the state of the "in_one_fan_out" scenarios.
type abcfRAG struct {
	Query  state.Value[string]
	Answer state.Value[string]
	Docs   state.Reduced[[]string, abcfSortedAdd]
}

// abcfRAGNodes are the scenario's nodes; retriever_two (Python: sleeps
// 0.1 s) waits until the consumer has seen the update of `after` as many
// times as retriever_two has run, calls counts rewrite_query runs, and
// opts are rewrite_query's options.
func abcfRAGNodes(b *graph.Builder[abcfRAG], seen *abcfSeen, after string, calls *atomic.Int32, opts ...graph.NodeOption) *graph.Builder[abcfRAG] {
	var r2 atomic.Int32
	return b.
		AddNode("rewrite_query", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
			if calls != nil {
				calls.Add(1)
			}
			return abcfRAG{Query: state.Set("query: " + s.Query.Get())}, nil
		}, opts...).
		AddNode("analyzer_one", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
			return abcfRAG{Query: state.Set("analyzed: " + s.Query.Get())}, nil
		}).
		AddNode("retriever_one", func(context.Context, abcfRAG) (abcfRAG, error) {
			var u abcfRAG
			u.Docs.Update([]string{"doc1", "doc2"})
			return u, nil
		}).
		AddNode("retriever_two", func(ctx context.Context, s abcfRAG) (abcfRAG, error) {
			if err := seen.wait(ctx, after, int(r2.Add(1))); err != nil {
				return s, err
			}
			var u abcfRAG
			u.Docs.Update([]string{"doc3", "doc4"})
			return u, nil
		}).
		AddNode("qa", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
			return abcfRAG{Answer: state.Set(strings.Join(s.Docs.Get(), ","))}, nil
		})
}

// abcfStreamRun streams a run (or a resume when cmd is non-nil), marking
// every update in seen, and returns the updates, the last values event
// and the error.
func abcfStreamRun[S any](t *testing.T, seq func(opts ...graph.RunOption) func(func(graph.Event, error) bool), seen *abcfSeen, opts ...graph.RunOption) ([]graph.Event, *S, error) {
	t.Helper()
	var evs []graph.Event
	var last *S
	var runErr error
	opts = append([]graph.RunOption{graph.WithStreamModes(graph.ModeUpdates | graph.ModeValues)}, opts...)
	for ev, err := range seq(opts...) {
		if err != nil {
			runErr = err
			continue
		}
		evs = append(evs, ev)
		switch ev.Mode {
		case graph.ModeUpdates:
			if ev.Node != "" && seen != nil {
				seen.mark(ev.Node)
			}
		case graph.ModeValues:
			v := ev.Payload.(S)
			last = &v
		}
	}
	return evs, last, runErr
}

func abcfHasInterruptEvent(evs []graph.Event) bool {
	for _, ev := range evs {
		if ev.Mode == graph.ModeInterrupts {
			return true
		}
	}
	return false
}

func abcfDocs(docs ...string) map[string]any {
	l := make([]any, len(docs))
	for i, d := range docs {
		l[i] = d
	}
	return map[string]any{"Docs": []any{l}}
}

// ---------------------------------------------------------------------------
// S16 test_in_one_fan_out_state_graph_waiting_edge.

func TestS16FanOutWaitingEdge(t *testing.T) {
	const q = "what is weather in sf"
	build := func(seen *abcfSeen, opts ...graph.CompileOption) *graph.Graph[abcfRAG] {
		g, err := abcfRAGNodes(graph.New[abcfRAG](), seen, "analyzer_one", nil).
			AddEdge(graph.Start, "rewrite_query").
			AddEdge("rewrite_query", "analyzer_one").
			AddEdge("analyzer_one", "retriever_one").
			AddEdge("rewrite_query", "retriever_two").
			AddJoin([]string{"retriever_one", "retriever_two"}, "qa").
			AddEdge("qa", graph.End).
			Compile(opts...)
		require.NoError(t, err)
		return g
	}
	first4 := []abcfUpdate{
		{Node: "rewrite_query", Writes: map[string]any{"Query": "query: " + q}},
		{Node: "analyzer_one", Writes: map[string]any{"Query": "analyzed: query: " + q}},
		{Node: "retriever_two", Writes: abcfDocs("doc3", "doc4")},
		{Node: "retriever_one", Writes: abcfDocs("doc1", "doc2")},
	}
	qa := abcfUpdate{Node: "qa", Writes: map[string]any{"Answer": "doc1,doc2,doc3,doc4"}}

	t.Run("run", func(t *testing.T) {
		seen := newAbcfSeen()
		g := build(seen)
		evs, final, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.Stream(dexCtx(t), abcfRAG{Query: state.Set(q)}, o...)
		}, seen)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(append(slices.Clone(first4), qa), abcfUpdates(t, evs)))
		require.Equal(t, map[string]any{
			"Query":  "analyzed: query: " + q,
			"Docs":   []any{"doc1", "doc2", "doc3", "doc4"},
			"Answer": "doc1,doc2,doc3,doc4",
		}, dexVals(t, *final))
	})

	t.Run("interrupt after retriever_one", func(t *testing.T) {
		seen := newAbcfSeen()
		g := build(seen, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("retriever_one"))
		ctx := dexCtx(t)
		evs, _, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.Stream(ctx, abcfRAG{Query: state.Set(q)}, o...)
		}, seen, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"retriever_one"}, intr.After)
		require.Empty(t, intr.Interrupts)
		require.Empty(t, cmp.Diff(first4, abcfUpdates(t, evs)))
		require.True(t, abcfHasInterruptEvent(evs), "an updates event announces the interrupt")

		evs, final, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.StreamResume(ctx, graph.Command[abcfRAG]{}, o...)
		}, seen, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []abcfUpdate{qa}, abcfUpdates(t, evs))
		require.Equal(t, "doc1,doc2,doc3,doc4", final.Answer.Get())
	})

	t.Run("interrupt after retriever_two, join half seen", func(t *testing.T) {
		// The pause falls between the two arrivals at the join: the
		// checkpoint must remember that retriever_two has arrived.
		seen := newAbcfSeen()
		g := build(seen, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("retriever_two"))
		ctx := dexCtx(t)
		evs, _, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.Stream(ctx, abcfRAG{Query: state.Set(q)}, o...)
		}, seen, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"retriever_two"}, intr.After)
		require.Empty(t, cmp.Diff(first4[:3], abcfUpdates(t, evs)))
		snap, err := g.GetState(ctx, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []string{"retriever_one"}, snap.Next)

		evs, final, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.StreamResume(ctx, graph.Command[abcfRAG]{}, o...)
		}, seen, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []abcfUpdate{first4[3], qa}, abcfUpdates(t, evs))
		require.Equal(t, "doc1,doc2,doc3,doc4", final.Answer.Get())
	})

	t.Run("interrupt before qa then update_state", func(t *testing.T) {
		seen := newAbcfSeen()
		g := build(seen, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptBefore("qa"))
		ctx := dexCtx(t)
		evs, _, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.Stream(ctx, abcfRAG{Query: state.Set(q)}, o...)
		}, seen, graph.WithThread("1"))
		var intr *graph.Interrupted
		require.ErrorAs(t, err, &intr)
		require.Equal(t, []string{"qa"}, intr.Before)
		require.Empty(t, cmp.Diff(first4, abcfUpdates(t, evs)))
		require.True(t, abcfHasInterruptEvent(evs))

		var upd abcfRAG
		upd.Docs.Update([]string{"doc5"})
		_, err = g.UpdateState(ctx, upd, "", graph.WithThread("1")) // as_node inferred: retriever_one
		require.NoError(t, err)
		snap, err := g.GetState(ctx, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, map[string]any{
			"Query": "analyzed: query: " + q,
			"Docs":  []any{"doc1", "doc2", "doc3", "doc4", "doc5"},
		}, dexVals(t, snap.Values))
		require.Equal(t, "update", snap.Metadata.Source)
		require.Equal(t, 4, snap.Metadata.Step)
		require.Equal(t, []string{"qa"}, snap.Next)
		require.Len(t, snap.Tasks, 1)
		require.Equal(t, "qa", snap.Tasks[0].Name)

		evs, _, err = abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.StreamResume(ctx, graph.Command[abcfRAG]{}, o...)
		}, seen, graph.WithThread("1"))
		require.NoError(t, err)
		require.Equal(t, []abcfUpdate{{Node: "qa", Writes: map[string]any{"Answer": "doc1,doc2,doc3,doc4,doc5"}}}, abcfUpdates(t, evs))
	})
}

// ---------------------------------------------------------------------------
// S17 test_in_one_fan_out_state_graph_defer_node.

func TestS17FanOutDeferNode(t *testing.T) {
	const q = "what is weather in sf"
	for _, waiting := range []bool{true, false} {
		name := "plain edges"
		if waiting {
			name = "waiting edge"
		}
		t.Run(name, func(t *testing.T) {
			seen := newAbcfSeen()
			var r2 atomic.Int32
			b := graph.New[abcfRAG]().
				AddNode("rewrite_query", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
					return abcfRAG{Query: state.Set("query: " + s.Query.Get())}, nil
				}).
				AddNode("analyzer_one", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
					return abcfRAG{Query: state.Set("analyzed: " + s.Query.Get())}, nil
				}).
				AddNode("retriever_one", func(context.Context, abcfRAG) (abcfRAG, error) {
					var u abcfRAG
					u.Docs.Update([]string{"doc1", "doc2"})
					return u, nil
				}).
				AddNode("retriever_two", func(ctx context.Context, s abcfRAG) (abcfRAG, error) {
					if err := seen.wait(ctx, "retriever_one", int(r2.Add(1))); err != nil {
						return s, err
					}
					var u abcfRAG
					u.Docs.Update([]string{"doc3", "doc4"})
					return u, nil
				}).
				AddNode("qa", func(_ context.Context, s abcfRAG) (abcfRAG, error) {
					return abcfRAG{Answer: state.Set(strings.Join(s.Docs.Get(), ","))}, nil
				}, graph.WithDeferred()).
				AddEdge(graph.Start, "rewrite_query").
				AddEdge("rewrite_query", "retriever_one").
				AddEdge("retriever_one", "analyzer_one").
				AddEdge("rewrite_query", "retriever_two").
				AddEdge("analyzer_one", graph.End). // Python leaves it a dead end
				AddEdge("qa", graph.End)
			if waiting {
				b.AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
			} else {
				b.AddEdge("retriever_one", "qa").AddEdge("retriever_two", "qa")
			}
			g, err := b.Compile()
			require.NoError(t, err)

			type stepped struct {
				Node string
				Step int
			}
			var ups []stepped
			var qaInput any
			var final abcfRAG
			for ev, err := range g.Stream(dexCtx(t), abcfRAG{Query: state.Set(q)}, graph.WithStreamModes(graph.ModeUpdates|graph.ModeTasks|graph.ModeValues)) {
				require.NoError(t, err)
				switch ev.Mode {
				case graph.ModeUpdates:
					ups = append(ups, stepped{ev.Node, ev.Step})
					seen.mark(ev.Node)
				case graph.ModeTasks:
					if ts, ok := ev.Payload.(graph.TaskStart); ok && ts.Name == "qa" {
						qaInput = ts.Input
					}
				case graph.ModeValues:
					final = ev.Payload.(abcfRAG)
				}
			}
			require.Equal(t, []stepped{
				{"rewrite_query", 1}, {"retriever_one", 2}, {"retriever_two", 2}, {"analyzer_one", 3}, {"qa", 4},
			}, ups)
			require.NotNil(t, qaInput)
			require.Equal(t, map[string]any{
				"Query": "analyzed: query: " + q,
				"Docs":  []any{"doc1", "doc2", "doc3", "doc4"},
			}, dexVals(t, qaInput))
			require.Equal(t, "doc1,doc2,doc3,doc4", final.Answer.Get())

			// The deferred node survives a pause (its pending trigger is
			// checkpointed): pause after step 2, resume, qa still runs last.
			seen = newAbcfSeen()
			r2.Store(0)
			g, err = b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("retriever_one"))
			require.NoError(t, err)
			ctx := dexCtx(t)
			evs, _, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
				return g.Stream(ctx, abcfRAG{Query: state.Set(q)}, o...)
			}, seen, graph.WithThread("1"))
			var intr *graph.Interrupted
			require.ErrorAs(t, err, &intr)
			require.Equal(t, []string{"rewrite_query", "retriever_one", "retriever_two"}, abcfUpdateNodes(t, evs))
			evs, last, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
				return g.StreamResume(ctx, graph.Command[abcfRAG]{}, o...)
			}, seen, graph.WithThread("1"))
			require.NoError(t, err)
			require.Equal(t, []string{"analyzer_one", "qa"}, abcfUpdateNodes(t, evs))
			require.Equal(t, "doc1,doc2,doc3,doc4", last.Answer.Get())
		})
	}
}

// ---------------------------------------------------------------------------
// S18 test_in_one_fan_out_state_graph_waiting_edge_multiple_cond_edge, and
// S24 test_in_one_fan_out_state_graph_waiting_edge_multiple (with cache).

func abcfLoopGraph(t *testing.T, seen *abcfSeen, calls *atomic.Int32, nodeOpts []graph.NodeOption, opts ...graph.CompileOption) *graph.Graph[abcfRAG] {
	g, err := abcfRAGNodes(graph.New[abcfRAG](), seen, "analyzer_one", calls, nodeOpts...).
		AddNode("decider", func(context.Context, abcfRAG) (abcfRAG, error) { return abcfRAG{}, nil }).
		AddEdge(graph.Start, "rewrite_query").
		AddBranch("rewrite_query", func(context.Context, abcfRAG) (graph.Route[abcfRAG], error) {
			return graph.To[abcfRAG]("analyzer_one", "retriever_two"), nil
		}, graph.WithDestinations("analyzer_one", "retriever_two")).
		AddEdge("analyzer_one", "retriever_one").
		AddJoin([]string{"retriever_one", "retriever_two"}, "decider").
		AddConditionalEdges("decider", func(_ context.Context, s abcfRAG) (string, error) {
			if strings.Count(s.Query.Get(), "analyzed") > 1 {
				return "qa", nil
			}
			return "rewrite_query", nil
		}, graph.WithDestinations("qa", "rewrite_query")).
		AddEdge("qa", graph.End).
		Compile(opts...)
	require.NoError(t, err)
	return g
}

var abcfLoopUpdates = func() []abcfUpdate {
	const q = "what is weather in sf"
	round := func(in string) []abcfUpdate {
		return []abcfUpdate{
			{Node: "rewrite_query", Writes: map[string]any{"Query": "query: " + in}},
			{Node: "analyzer_one", Writes: map[string]any{"Query": "analyzed: query: " + in}},
			{Node: "retriever_two", Writes: abcfDocs("doc3", "doc4")},
			{Node: "retriever_one", Writes: abcfDocs("doc1", "doc2")},
			{Node: "decider", Writes: map[string]any{}},
		}
	}
	out := round(q)
	out = append(out, round("analyzed: query: "+q)...)
	return append(out, abcfUpdate{Node: "qa", Writes: map[string]any{"Answer": "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4"}})
}()

var abcfLoopFinal = map[string]any{
	"Query":  "analyzed: query: analyzed: query: what is weather in sf",
	"Answer": "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4",
	"Docs":   []any{"doc1", "doc1", "doc2", "doc2", "doc3", "doc3", "doc4", "doc4"},
}

func TestS18FanOutWaitingEdgeMultipleCondEdge(t *testing.T) {
	seen := newAbcfSeen()
	g := abcfLoopGraph(t, seen, nil, nil)
	evs, final, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
		return g.Stream(dexCtx(t), abcfRAG{Query: state.Set("what is weather in sf")}, o...)
	}, seen)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(abcfLoopUpdates, abcfUpdates(t, evs)))
	require.Equal(t, abcfLoopFinal, dexVals(t, *final))
}

func TestS24FanOutWaitingEdgeMultipleWithCache(t *testing.T) {
	var calls atomic.Int32
	seen := newAbcfSeen()
	g := abcfLoopGraph(t, seen, &calls, []graph.NodeOption{graph.WithCachePolicy(graph.CachePolicy{})}, graph.WithCache(graph.NewMemoryCache()))
	ctx := dexCtx(t)
	run := func() ([]graph.Event, *abcfRAG) {
		evs, final, err := abcfStreamRun[abcfRAG](t, func(o ...graph.RunOption) func(func(graph.Event, error) bool) {
			return g.Stream(ctx, abcfRAG{Query: state.Set("what is weather in sf")}, o...)
		}, seen)
		require.NoError(t, err)
		return evs, final
	}
	_, final := run()
	require.Equal(t, abcfLoopFinal, dexVals(t, *final))
	require.EqualValues(t, 2, calls.Load())

	evs, final := run()
	require.Equal(t, abcfLoopFinal, dexVals(t, *final))
	require.EqualValues(t, 2, calls.Load(), "both rewrite_query runs come from the cache")
	want := slices.Clone(abcfLoopUpdates)
	for i := range want {
		want[i].Cached = want[i].Node == "rewrite_query"
	}
	require.Empty(t, cmp.Diff(want, abcfUpdates(t, evs)))

	require.NoError(t, g.ClearCache(ctx))
	run()
	require.EqualValues(t, 4, calls.Load())
}

// ---------------------------------------------------------------------------
// S19 test_simple_multi_edge.

func TestS19SimpleMultiEdge(t *testing.T) {
	type S struct {
		MyKey state.Reduced[string, dexConcat]
	}
	none := func(context.Context, S) (S, error) { return S{}, nil }
	g, err := graph.New[S]().
		AddNode("up", none).AddNode("side", none).AddNode("down", none).
		AddNode("other", func(context.Context, S) (S, error) {
			var u S
			u.MyKey.Update("_more")
			return u, nil
		}).
		AddEdge(graph.Start, "up").
		AddEdge("up", "side").AddEdge("up", "other").
		AddJoin([]string{"up", "side"}, "down").
		AddEdge("down", graph.End).AddEdge("other", graph.End).
		Compile()
	require.NoError(t, err)
	var in S
	in.MyKey.Update("my_value")
	ctx := dexCtx(t)
	out, err := g.Invoke(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "my_value_more", out.MyKey.Get())

	evs, err := dexCollect(g.Stream(ctx, in))
	require.NoError(t, err)
	ups := abcfUpdates(t, evs)
	require.Len(t, ups, 4)
	require.Equal(t, abcfUpdate{Node: "up", Writes: map[string]any{}}, ups[0])
	mid := []abcfUpdate{ups[1], ups[2]}
	slices.SortFunc(mid, func(a, b abcfUpdate) int { return strings.Compare(a.Node, b.Node) })
	require.Equal(t, []abcfUpdate{
		{Node: "other", Writes: map[string]any{"MyKey": []any{"_more"}}},
		{Node: "side", Writes: map[string]any{}},
	}, mid)
	require.Equal(t, abcfUpdate{Node: "down", Writes: map[string]any{}}, ups[3])
}

// ---------------------------------------------------------------------------
// S20 test_conditional_entrypoint_graph_state.

func TestS20ConditionalEntrypointGraphState(t *testing.T) {
	type S struct {
		Input, Output state.Value[string]
		Steps         state.Append[string]
	}
	side := func(dir string) graph.NodeFunc[S] {
		return func(_ context.Context, s S) (S, error) {
			return S{Output: state.Set(s.Input.Get() + "->" + dir)}, nil
		}
	}
	var routerSawSteps []int
	g, err := graph.New[S]().
		AddNode("left", side("left")).AddNode("right", side("right")).
		AddConditionalEdges(graph.Start, func(_ context.Context, s S) (string, error) {
			routerSawSteps = append(routerSawSteps, s.Steps.Len())
			if strings.Contains(s.Input.Get(), "weather") {
				return "go-right", nil
			}
			return "go-left", nil
		}, graph.WithPathMap(map[string]string{"go-left": "left", "go-right": "right"})).
		AddEdge("left", graph.End).AddEdge("right", graph.End).
		Compile()
	require.NoError(t, err)
	ctx := dexCtx(t)
	out, err := g.Invoke(ctx, S{Input: state.Set("what is weather in sf")})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"Input":  "what is weather in sf",
		"Output": "what is weather in sf->right",
		"Steps":  []any{},
	}, dexVals(t, out))

	evs, err := dexCollect(g.Stream(ctx, S{Input: state.Set("what is weather in sf")}))
	require.NoError(t, err)
	require.Equal(t, []abcfUpdate{{Node: "right", Writes: map[string]any{"Output": "what is weather in sf->right"}}}, abcfUpdates(t, evs))
	require.Equal(t, []int{0, 0}, routerSawSteps)
}

// ---------------------------------------------------------------------------
// S21 test_conditional_entrypoint_to_multiple_state_graph.

// The Send argument {"location": l} becomes the Location field. The sf task
// finishes after the nyc task, yet its result comes first (Send order).
func TestS21ConditionalEntrypointToMultipleSends(t *testing.T) {
	type S struct {
		Locations state.Append[string]
		Location  state.Value[string]
		Results   state.Append[string]
	}
	done := newAbcfSeen()
	g, err := graph.New[S]().
		AddNode("get_weather", func(ctx context.Context, s S) (S, error) {
			loc := s.Location.Get()
			weather := "sunny"
			if loc == "sf" {
				weather = "cloudy"
				if err := done.wait(ctx, "nyc", 1); err != nil {
					return s, err
				}
			}
			defer done.mark(loc)
			return S{Results: state.Items("It's " + weather + " in " + loc)}, nil
		}).
		AddBranch(graph.Start, func(_ context.Context, s S) (graph.Route[S], error) {
			var r graph.Route[S]
			for _, l := range s.Locations.Get() {
				r.Sends = append(r.Sends, graph.Send[S]{Node: "get_weather", Arg: S{Location: state.Set(l)}})
			}
			return r, nil
		}, graph.WithDestinations("get_weather")).
		AddEdge("get_weather", graph.End).
		Compile()
	require.NoError(t, err)
	out, err := g.Invoke(dexCtx(t), S{Locations: state.Items("sf", "nyc")})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"Locations": []any{"sf", "nyc"},
		"Results":   []any{"It's cloudy in sf", "It's sunny in nyc"},
	}, dexVals(t, out))
}

// ---------------------------------------------------------------------------
// S23 test_reducer_before_first_node.

func TestS23ReducerBeforeFirstNode(t *testing.T) {
	type S struct {
		Hello    state.Value[string]
		Messages state.Messages
	}
	var seenByNode []state.Message
	g, err := graph.New[S]().
		AddNode("node_a", func(_ context.Context, s S) (S, error) {
			seenByNode = s.Messages.List()
			return S{}, nil
		}).
		AddEdge(graph.Start, "node_a").AddEdge("node_a", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	out, err := g.Invoke(ctx, S{Hello: state.Set("there"), Messages: state.Msgs(state.Human("hello"))}, graph.WithThread("1"))
	require.NoError(t, err)
	require.Len(t, seenByNode, 1, "the reducer applied the input before the first node")
	require.Equal(t, "hello", seenByNode[0].Text())
	require.Regexp(t, abcfUUIDv4, seenByNode[0].ID)
	require.Equal(t, "there", out.Hello.Get())
	require.Equal(t, seenByNode, out.Messages.List())

	// Input goes through the reducers against the thread's state.
	out, err = g.Invoke(ctx, S{Messages: state.Msgs(state.Human("again"))}, graph.WithThread("1"))
	require.NoError(t, err)
	var texts []string
	for _, m := range out.Messages.List() {
		texts = append(texts, m.Text())
	}
	require.Equal(t, []string{"hello", "again"}, texts)
	require.Equal(t, "there", out.Hello.Get())
}
