package graph_test

// Ports of LangGraph behavioural scenarios, section D of
// the project's LangGraph behavioural specification (not shipped) §7 (interrupts and resume,
// S33–S45). Helpers shared with the other scenario files live in
// scenario_helpers_test.go.
//
// General differences with Python, applying to every test below:
//   - Python's dict states become structs of state channels; a node returns
//     its writes (the fields it wrote), never the whole state.
//   - Python's interrupt() raises; graph.Interrupt returns an error the node
//     returns as is.
//   - A paused Invoke/Resume returns the state so far and a
//     *graph.Interrupted error instead of a "__interrupt__" key; a stream
//     yields an updates event whose Interrupts field is set instead of
//     {"__interrupt__": (...)}, and the *graph.Interrupted as its last error.
//   - Python gives every interrupt() of one task the same id; this engine
//     gives each call its own stable id.
//   - invoke(None) / stream(None) is Resume/StreamResume with an empty
//     Command.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

// ---------------------------------------------------------------------------
// S33 test_interrupt_multiple.

type s33State struct {
	MyKey  state.Reduced[string, dexConcat]
	Market state.Value[string]
}

func s33Graph(t *testing.T) *graph.Graph[s33State] {
	g, err := graph.New[s33State]().
		AddNode("node", func(ctx context.Context, s s33State) (s33State, error) {
			a, err := graph.InterruptAs[string](ctx, map[string]any{"value": 1})
			if err != nil {
				return s, err
			}
			b, err := graph.InterruptAs[string](ctx, map[string]any{"value": 2})
			if err != nil {
				return s, err
			}
			s.MyKey.Update(a + " " + b)
			return s, nil
		}).
		AddEdge(graph.Start, "node").
		AddEdge("node", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	return g
}

func TestS33InterruptMultiple(t *testing.T) {
	type variant struct {
		name, resume string
		d            graph.Durability
	}
	// Python runs this scenario with the default durability; the other
	// durabilities must behave the same (the answers of a task that pauses
	// again, and the resume Command's update, are pending writes that
	// survive the run even when it writes no new checkpoint).
	variants := []variant{{"scalar", "scalar", graph.DurabilityAsync}, {"resume map", "map", graph.DurabilityAsync}}
	for _, d := range dexDurabilities {
		variants = append(variants, variant{"durability " + d.name, "scalar", d.d})
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := dexCtx(t)
			g := s33Graph(t)
			th := graph.WithThread("1")
			dur := graph.WithDurability(v.d)
			variant := v.resume

			evs, err := dexCollect(g.Stream(ctx, s33State{MyKey: dexStr("DE"), Market: state.Set("DE")}, th, dur))
			intr := dexInterrupted(t, err)
			require.Equal(t, []any{map[string]any{"value": 1.0}}, dexInterruptValues(t, intr.Interrupts))
			require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{map[string]any{"value": 1.0}}}},
				dexEvents(t, evs, graph.ModeUpdates))

			cmd := graph.Command[s33State]{Update: s33State{MyKey: dexStr(" foofoo ")}}
			if variant == "scalar" {
				cmd.Resume = "answer 1"
			} else {
				cmd.ResumeMap = map[string]any{intr.Interrupts[0].ID: "answer 1"}
			}
			evs, err = dexCollect(g.StreamResume(ctx, cmd, th, dur))
			intr2 := dexInterrupted(t, err)
			paused := dexState(t, g, "1")
			require.Equal(t, "DE foofoo ", paused.Values.MyKey.Get())
			require.Equal(t, []any{map[string]any{"value": 2.0}}, dexInterruptValues(t, intr2.Interrupts))
			require.NotEqual(t, intr.Interrupts[0].ID, intr2.Interrupts[0].ID, "each Interrupt call has its own id")
			require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{map[string]any{"value": 2.0}}}},
				dexEvents(t, evs, graph.ModeUpdates))

			evs, err = dexCollect(g.StreamResume(ctx, graph.Command[s33State]{Resume: "answer 2"}, th, dur,
				graph.WithStreamModes(graph.ModeValues)))
			require.NoError(t, err)
			var got []string
			for _, ev := range evs {
				require.Equal(t, graph.ModeValues, ev.Mode)
				got = append(got, ev.Payload.(s33State).MyKey.Get())
			}
			require.Equal(t, []string{"DE foofoo ", "DE foofoo answer 1 answer 2"}, got)

			snap := dexState(t, g, "1")
			require.Equal(t, "DE foofoo answer 1 answer 2", snap.Values.MyKey.Get())
			require.Empty(t, snap.Next)
			require.Empty(t, snap.Interrupts)
		})
	}

	// The update of a resume Command is a write like any other: the
	// checkpoint that ends the resumed step holds it even when the resumed
	// node does not write that field (Python applies Command.update with a
	// version bump, so the next checkpoint stores the new value).
	t.Run("resume update of a field the node does not write is checkpointed", func(t *testing.T) {
		ctx := dexCtx(t)
		g := s33Graph(t)
		th := graph.WithThread("1")
		_, err := g.Invoke(ctx, s33State{MyKey: dexStr("DE"), Market: state.Set("DE")}, th)
		dexInterrupted(t, err)
		_, err = g.Resume(ctx, graph.Command[s33State]{Resume: "answer 1", Update: s33State{Market: state.Set("FR")}}, th)
		dexInterrupted(t, err)
		require.Equal(t, "FR", dexState(t, g, "1").Values.Market.Get(), "while paused")
		out, err := g.Resume(ctx, graph.Command[s33State]{Resume: "answer 2"}, th)
		require.NoError(t, err)
		require.Equal(t, "FR", out.Market.Get())
		require.Equal(t, "DEanswer 1 answer 2", out.MyKey.Get())
		snap := dexState(t, g, "1")
		require.Equal(t, dexJSON(t, out), dexJSON(t, snap.Values), "the latest checkpoint holds what the run returned")
	})
}

// ---------------------------------------------------------------------------
// S34 test_interrupt_loop.

func TestS34InterruptLoop(t *testing.T) {
	type S struct {
		Other state.Value[string]
		Age   state.Value[int]
	}
	g, err := graph.New[S]().
		AddNode("node", func(ctx context.Context, s S) (S, error) {
			question := "How old are you?"
			age := 0
			for range 10 {
				v, err := graph.InterruptAs[string](ctx, question)
				if err != nil {
					return s, err
				}
				n, perr := strconv.Atoi(v)
				if perr != nil || n < 18 {
					question = "invalid response"
					continue
				}
				age = n
				break
			}
			s.Age.Set(age)
			return s, nil
		}).
		AddEdge(graph.Start, "node").
		AddEdge("node", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th := graph.WithThread("1")

	evs, err := dexCollect(g.Stream(ctx, S{Other: state.Set("")}, th))
	dexInterrupted(t, err)
	require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"How old are you?"}}}, dexEvents(t, evs, graph.ModeUpdates))

	for _, answer := range []string{"13", "15"} {
		evs, err = dexCollect(g.StreamResume(ctx, graph.Command[S]{Resume: answer}, th))
		dexInterrupted(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"invalid response"}}}, dexEvents(t, evs, graph.ModeUpdates), "answer %s", answer)
	}
	evs, err = dexCollect(g.StreamResume(ctx, graph.Command[S]{Resume: "19"}, th))
	require.NoError(t, err)
	require.Equal(t, []dexEv{{Mode: "updates", Node: "node", Writes: map[string]any{"Age": 19.0}}}, dexEvents(t, evs, graph.ModeUpdates))
}

// ---------------------------------------------------------------------------
// S35 test_multiple_interrupt_state_persistence.

func TestS35MultipleInterruptStatePersistence(t *testing.T) {
	type S struct {
		Steps state.Append[string]
	}
	var calls atomic.Int64
	g, err := graph.New[S]().
		AddNode("node", func(ctx context.Context, s S) (S, error) {
			calls.Add(1)
			first, err := graph.InterruptAs[string](ctx, "step 1")
			if err != nil {
				return s, err
			}
			second, err := graph.InterruptAs[string](ctx, "step 2")
			if err != nil {
				return s, err
			}
			s.Steps.Append(first, second)
			return s, nil
		}).
		AddEdge(graph.Start, "node").
		AddEdge("node", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th := graph.WithThread("1")

	_, err = g.Invoke(ctx, S{}, th)
	dexInterrupted(t, err)
	require.Empty(t, dexState(t, g, "1").Values.Steps.Get())

	_, err = g.Resume(ctx, graph.Command[S]{Resume: "step1"}, th)
	dexInterrupted(t, err)
	require.Empty(t, dexState(t, g, "1").Values.Steps.Get())

	out, err := g.Resume(ctx, graph.Command[S]{Resume: "step2"}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"step1", "step2"}, out.Steps.Get())
	require.Equal(t, []string{"step1", "step2"}, dexState(t, g, "1").Values.Steps.Get())
	require.EqualValues(t, 3, calls.Load(), "the node re-runs from its top on every resume")
}

// ---------------------------------------------------------------------------
// S36 test_node_before_interrupt_resume_graph_api.

func TestS36NodeBeforeInterruptResume(t *testing.T) {
	type S struct {
		Topics  state.Value[[]string]
		Answers state.Append[string]
	}
	var setupCalls atomic.Int64
	g, err := graph.New[S]().
		AddNode("setup", func(ctx context.Context, s S) (S, error) {
			setupCalls.Add(1)
			s.Topics.Set([]string{"topic 1", "topic 2"})
			return s, nil
		}).
		AddNode("ask", func(ctx context.Context, s S) (S, error) {
			var answers []string
			for _, topic := range s.Topics.Get() {
				a, err := graph.InterruptAs[string](ctx, fmt.Sprintf("Whats the answer for %s?", topic))
				if err != nil {
					return s, err
				}
				answers = append(answers, a)
			}
			s.Answers.Append(answers...)
			return s, nil
		}).
		AddEdge(graph.Start, "setup").
		AddEdge("setup", "ask").
		AddEdge("ask", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th := graph.WithThread("1")

	_, err = g.Invoke(ctx, S{Topics: state.Set([]string{"a", "b"})}, th)
	intr := dexInterrupted(t, err)
	require.Equal(t, []any{"Whats the answer for topic 1?"}, dexInterruptValues(t, intr.Interrupts))

	_, err = g.Resume(ctx, graph.Command[S]{Resume: "answer1"}, th)
	intr = dexInterrupted(t, err)
	require.Equal(t, []any{"Whats the answer for topic 2?"}, dexInterruptValues(t, intr.Interrupts))

	out, err := g.Resume(ctx, graph.Command[S]{Resume: "answer2"}, th)
	require.NoError(t, err)
	require.Equal(t, []string{"topic 1", "topic 2"}, out.Topics.Get())
	require.Equal(t, []string{"answer1", "answer2"}, out.Answers.Get())
	require.EqualValues(t, 1, setupCalls.Load(), "setup is not re-run")
}

// ---------------------------------------------------------------------------
// S37 test_null_resume_disallowed_with_multiple_interrupts.

func TestS37NullResumeDisallowedWithMultipleInterrupts(t *testing.T) {
	type S struct {
		Text1 state.Value[string]
		Text2 state.Value[string]
	}
	human := func(text string, set func(*S, string)) graph.NodeFunc[S] {
		return func(ctx context.Context, s S) (S, error) {
			v, err := graph.InterruptAs[string](ctx, map[string]any{"text_to_revise": text})
			if err != nil {
				return s, err
			}
			set(&s, v)
			return s, nil
		}
	}
	g, err := graph.New[S]().
		AddNode("human_node_1", human("original text 1", func(s *S, v string) { s.Text1.Set(v) })).
		AddNode("human_node_2", human("original text 2", func(s *S, v string) { s.Text2.Set(v) })).
		AddEdge(graph.Start, "human_node_1").
		AddEdge(graph.Start, "human_node_2").
		AddEdge("human_node_1", graph.End).
		AddEdge("human_node_2", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th := graph.WithThread("1")

	_, err = g.Invoke(ctx, S{Text1: state.Set("original text 1"), Text2: state.Set("original text 2")}, th)
	intr := dexInterrupted(t, err)
	require.Len(t, intr.Interrupts, 2)

	_, err = g.Resume(ctx, graph.Command[S]{Resume: "singular resume"}, th)
	require.ErrorIs(t, err, graph.ErrAmbiguousResume)
	snap := dexState(t, g, "1")
	require.Equal(t, []string{"human_node_1", "human_node_2"}, snap.Next, "a refused resume changes nothing")
	require.Len(t, snap.Interrupts, 2)

	rm := map[string]any{}
	for _, in := range snap.Interrupts {
		text := dexJSONAny(t, in.Value).(map[string]any)["text_to_revise"].(string)
		rm[in.ID] = "resume for prompt: " + text
	}
	out, err := g.Resume(ctx, graph.Command[S]{ResumeMap: rm}, th)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"Text1": "resume for prompt: original text 1", "Text2": "resume for prompt: original text 2"}, dexVals(t, out))
}

// ---------------------------------------------------------------------------
// S38 test_parallel_interrupts, S39 test_multi_resume.

// The child graph is a subgraph node that Send tasks target. Python's parent
// and child states share keys by name; here explicit in/out mappings.
type s38Parent struct {
	Prompts     state.Value[[]string]
	Prompt      state.Value[string] // the Send argument
	HumanInputs state.Append[string]
}

type s38Child struct {
	Prompt      state.Value[string]
	HumanInput  state.Value[string]
	HumanInputs state.Append[string]
}

func s38Graph(t *testing.T, cleanups *atomic.Int64) *graph.Graph[s38Parent] {
	child, err := graph.New[s38Child]().
		AddNode("get_human_input", func(ctx context.Context, s s38Child) (s38Child, error) {
			v, err := graph.InterruptAs[string](ctx, s.Prompt.Get())
			if err != nil {
				return s, err
			}
			s.HumanInput.Set(v)
			s.HumanInputs.Append(v)
			return s, nil
		}).
		AddEdge(graph.Start, "get_human_input").
		AddEdge("get_human_input", graph.End).
		Compile()
	require.NoError(t, err)
	g, err := graph.New[s38Parent]().
		AddCommandNode("child_graph", graph.Subgraph(child,
			func(p s38Parent) s38Child { return s38Child{Prompt: state.Set(p.Prompt.Get())} },
			func(c s38Child) s38Parent { return s38Parent{HumanInputs: state.Items(c.HumanInputs.Get()...)} })).
		AddNode("cleanup", func(ctx context.Context, s s38Parent) (s38Parent, error) {
			cleanups.Add(1)
			if len(s.HumanInputs.Get()) != len(s.Prompts.Get()) {
				return s, fmt.Errorf("cleanup: %d inputs for %d prompts", len(s.HumanInputs.Get()), len(s.Prompts.Get()))
			}
			return s, nil
		}).
		AddBranch(graph.Start, func(ctx context.Context, s s38Parent) (graph.Route[s38Parent], error) {
			var r graph.Route[s38Parent]
			for _, p := range s.Prompts.Get() {
				r.Sends = append(r.Sends, graph.Send[s38Parent]{Node: "child_graph", Arg: s38Parent{Prompt: state.Set(p)}})
			}
			return r, nil
		}, graph.WithDestinations("child_graph")).
		AddEdge("child_graph", "cleanup").
		AddEdge("cleanup", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	return g
}

func TestS38ParallelInterrupts(t *testing.T) {
	ctx := dexCtx(t)
	var cleanups atomic.Int64
	g := s38Graph(t, &cleanups)
	th := graph.WithThread("1")

	// Call 1: both children interrupt. Python streams one __interrupt__
	// chunk per interrupted task, as it interrupts; so does this engine
	// (a ModeInterrupts event per task).
	evs, err := dexCollect(g.Stream(ctx, s38Parent{Prompts: state.Set([]string{"a", "b"})}, th))
	intr := dexInterrupted(t, err)
	require.ElementsMatch(t, []any{"a", "b"}, dexInterruptValues(t, intr.Interrupts))
	require.ElementsMatch(t, []dexEv{{Mode: "updates", Interrupts: []any{"a"}}, {Mode: "updates", Interrupts: []any{"b"}}}, dexEvents(t, evs, graph.ModeUpdates))
	ids := map[string]string{}
	for _, in := range intr.Interrupts {
		ids[in.Value.(string)] = in.ID
	}
	require.NotEqual(t, ids["a"], ids["b"])

	// Call 2: resume only a.
	evs, err = dexCollect(g.StreamResume(ctx, graph.Command[s38Parent]{ResumeMap: map[string]any{ids["a"]: "Resume #1"}}, th))
	intr = dexInterrupted(t, err)
	require.Equal(t, []any{"b"}, dexInterruptValues(t, intr.Interrupts))
	require.Equal(t, ids["b"], intr.Interrupts[0].ID, "the interrupt id is stable across re-runs")
	require.ElementsMatch(t, []dexEv{
		{Mode: "updates", Node: "child_graph", Writes: map[string]any{"HumanInputs": []any{"Resume #1"}}},
		{Mode: "updates", Interrupts: []any{"b"}},
	}, dexEvents(t, evs, graph.ModeUpdates))

	// Call 3: resume b; a's result is replayed from its pending writes.
	evs, err = dexCollect(g.StreamResume(ctx, graph.Command[s38Parent]{ResumeMap: map[string]any{ids["b"]: "Resume #2"}}, th))
	require.NoError(t, err)
	require.ElementsMatch(t, []dexEv{
		{Mode: "updates", Node: "child_graph", Cached: true, Writes: map[string]any{"HumanInputs": []any{"Resume #1"}}},
		{Mode: "updates", Node: "child_graph", Writes: map[string]any{"HumanInputs": []any{"Resume #2"}}},
		{Mode: "updates", Node: "cleanup", Writes: map[string]any{}},
	}, dexEvents(t, evs, graph.ModeUpdates))
	snap := dexState(t, g, "1")
	require.Equal(t, []string{"Resume #1", "Resume #2"}, snap.Values.HumanInputs.Get(), "Send order, not resume order")
	require.EqualValues(t, 1, cleanups.Load())
}

func TestS39MultiResume(t *testing.T) {
	ctx := dexCtx(t)
	var cleanups atomic.Int64
	g := s38Graph(t, &cleanups)
	th := graph.WithThread("1")
	prompts := []string{"a", "b", "c", "d", "e"}

	_, err := g.Invoke(ctx, s38Parent{Prompts: state.Set(prompts)}, th, graph.WithStreamModes(graph.ModeValues))
	intr := dexInterrupted(t, err)
	require.Len(t, intr.Interrupts, 5)

	rm := map[string]any{}
	for _, in := range intr.Interrupts {
		rm[in.ID] = "human input for prompt " + in.Value.(string)
	}
	out, err := g.Resume(ctx, graph.Command[s38Parent]{ResumeMap: rm}, th)
	require.NoError(t, err)
	require.Equal(t, prompts, out.Prompts.Get())
	var want []string
	for _, p := range prompts {
		want = append(want, "human input for prompt "+p)
	}
	require.Equal(t, want, out.HumanInputs.Get(), "results in prompt (Send) order")
	require.EqualValues(t, 1, cleanups.Load())
}

// ---------------------------------------------------------------------------
// S40 test_interrupt_stream_mode_values.

func TestS40InterruptStreamModeValues(t *testing.T) {
	type S struct {
		RobotInput state.Value[string]
		HumanInput state.Value[string]
	}
	g, err := graph.New[S]().
		AddNode("robot_input_node", func(ctx context.Context, s S) (S, error) {
			s.RobotInput.Set("beep boop i am a robot")
			return s, nil
		}).
		AddCommandNode("human_input_node", func(ctx context.Context, s S) (graph.Command[S], error) {
			v, err := graph.InterruptAs[string](ctx, "interrupt")
			if err != nil {
				return graph.Command[S]{}, err
			}
			return graph.Command[S]{Update: S{HumanInput: state.Set(v)}}, nil
		}).
		AddEdge(graph.Start, "robot_input_node").
		AddEdge("robot_input_node", "human_input_node").
		AddEdge("human_input_node", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	ctx := dexCtx(t)
	th := graph.WithThread("1")
	modes := graph.WithStreamModes(graph.ModeUpdates | graph.ModeValues)
	robot := map[string]any{"RobotInput": "beep boop i am a robot"}

	// The input is empty: the __start__ step changes nothing, so it emits
	// no values event.
	evs, err := dexCollect(g.Stream(ctx, S{}, th, modes))
	dexInterrupted(t, err)
	require.Equal(t, []dexEv{
		{Mode: "updates", Node: "robot_input_node", Writes: robot},
		{Mode: "values", Writes: robot},
		{Mode: "updates", Interrupts: []any{"interrupt"}},
		{Mode: "values", Writes: robot, Interrupts: []any{"interrupt"}},
	}, dexEvents(t, evs, graph.ModeUpdates|graph.ModeValues))

	evs, err = dexCollect(g.StreamResume(ctx, graph.Command[S]{Resume: "i am a human"}, th, modes))
	require.NoError(t, err)
	require.Equal(t, []dexEv{
		{Mode: "values", Writes: robot},
		{Mode: "updates", Node: "human_input_node", Writes: map[string]any{"HumanInput": "i am a human"}},
		{Mode: "values", Writes: map[string]any{"RobotInput": "beep boop i am a robot", "HumanInput": "i am a human"}},
	}, dexEvents(t, evs, graph.ModeUpdates|graph.ModeValues))
}

// ---------------------------------------------------------------------------
// S41 test_dynamic_interrupt.

type s41State struct {
	MyKey  state.Reduced[string, dexConcat]
	Market state.Value[string]
}

func s41Builder(calls *atomic.Int64) *graph.Builder[s41State] {
	return graph.New[s41State]().
		AddNode("tool_two", func(ctx context.Context, s s41State) (s41State, error) {
			calls.Add(1)
			answer := " all good"
			if s.Market.Get() == "DE" {
				a, err := graph.InterruptAs[string](ctx, "Just because...")
				if err != nil {
					return s, err
				}
				answer = a
			}
			s.MyKey.Update(answer)
			return s, nil
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3})).
		AddEdge(graph.Start, "tool_two").
		AddEdge("tool_two", graph.End)
}

func TestS41DynamicInterrupt(t *testing.T) {
	ctx := dexCtx(t)

	t.Run("no checkpointer", func(t *testing.T) {
		var calls atomic.Int64
		g, err := s41Builder(&calls).Compile()
		require.NoError(t, err)
		// Python returns an interrupt no run could ever resume; here
		// Interrupt refuses at once, naming the node, and is not retried.
		out, err := g.Invoke(ctx, s41State{MyKey: dexStr("value"), Market: state.Set("DE")})
		require.ErrorIs(t, err, graph.ErrNoCheckpointer)
		var ne *graph.NodeError
		require.ErrorAs(t, err, &ne)
		require.Equal(t, "tool_two", ne.Node)
		require.Equal(t, map[string]any{"MyKey": "value", "Market": "DE"}, dexVals(t, out))
		require.EqualValues(t, 1, calls.Load(), "a refused interrupt is not retried")

		out, err = g.Invoke(ctx, s41State{MyKey: dexStr("value"), Market: state.Set("US")})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"MyKey": "value all good", "Market": "US"}, dexVals(t, out))

		_, err = g.Resume(ctx, graph.Command[s41State]{Resume: "x"})
		require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	})

	t.Run("missing thread", func(t *testing.T) {
		var calls atomic.Int64
		g, err := s41Builder(&calls).Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		_, err = g.Invoke(ctx, s41State{MyKey: dexStr("value"), Market: state.Set("DE")})
		require.ErrorIs(t, err, graph.ErrNoThread)
		require.EqualValues(t, 0, calls.Load())
	})

	t.Run("interrupt then resume", func(t *testing.T) {
		var calls atomic.Int64
		g, err := s41Builder(&calls).Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		th := graph.WithThread("2")
		evs, err := dexCollect(g.Stream(ctx, s41State{MyKey: dexStr("value ⛰️"), Market: state.Set("DE")}, th))
		dexInterrupted(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"Just because..."}}}, dexEvents(t, evs, graph.ModeUpdates))
		evs, err = dexCollect(g.StreamResume(ctx, graph.Command[s41State]{Resume: " my answer"}, th))
		require.NoError(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Node: "tool_two", Writes: map[string]any{"MyKey": []any{" my answer"}}}},
			dexEvents(t, evs, graph.ModeUpdates))
		require.Equal(t, "value ⛰️ my answer", dexState(t, g, "2").Values.MyKey.Get())
		require.EqualValues(t, 2, calls.Load())
	})

	// Interrupt, then clear the pending task with UpdateState(…, End).
	for _, d := range []struct {
		name string
		d    graph.Durability
	}{{"sync", graph.DurabilitySync}, {"exit", graph.DurabilityExit}} {
		t.Run("interrupt then clear/"+d.name, func(t *testing.T) {
			var calls atomic.Int64
			g, err := s41Builder(&calls).Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			th := graph.WithThread("1")
			out, err := g.Invoke(ctx, s41State{MyKey: dexStr("value ⛰️"), Market: state.Set("DE")}, th, graph.WithDurability(d.d))
			dexInterrupted(t, err)
			require.Equal(t, map[string]any{"MyKey": "value ⛰️", "Market": "DE"}, dexVals(t, out))

			hist := dexHistory(t, g, "1")
			if d.d == graph.DurabilityExit {
				require.Len(t, hist, 1, "exit durability writes one checkpoint")
			} else {
				require.Len(t, hist, 2)
				require.Equal(t, "input", hist[1].Metadata.Source)
				require.Equal(t, -1, hist[1].Metadata.Step)
			}
			snap := dexState(t, g, "1")
			require.Equal(t, "loop", snap.Metadata.Source)
			require.Equal(t, 0, snap.Metadata.Step)
			require.Empty(t, snap.Metadata.Parents)
			require.Equal(t, map[string]any{"MyKey": "value ⛰️", "Market": "DE"}, dexVals(t, snap.Values))
			require.Equal(t, []string{"tool_two"}, snap.Next)
			require.Len(t, snap.Tasks, 1)
			require.Equal(t, "tool_two", snap.Tasks[0].Name)
			require.Equal(t, []any{"Just because..."}, dexInterruptValues(t, snap.Tasks[0].Interrupts))
			require.Equal(t, []any{"Just because..."}, dexInterruptValues(t, snap.Interrupts))

			_, err = g.UpdateState(ctx, s41State{}, graph.End, th)
			require.NoError(t, err)
			snap = dexState(t, g, "1")
			require.Empty(t, snap.Next)
			require.Empty(t, snap.Tasks)
			require.Empty(t, snap.Interrupts)
			require.Equal(t, "update", snap.Metadata.Source)
			require.Equal(t, 1, snap.Metadata.Step)
			require.Equal(t, map[string]any{"MyKey": "value ⛰️", "Market": "DE"}, dexVals(t, snap.Values))
			require.EqualValues(t, 1, calls.Load())
		})
	}
}

// ---------------------------------------------------------------------------
// S42 test_partial_pending_checkpoint.

// The START branch routes to tool_two and Sends the state to tool_one;
// tool_two interrupts while tool_one finishes in the same step. This
// engine lists a snapshot's tasks triggered nodes first, then Send tasks
// (Python: PUSH first), so the task order is not compared.
func TestS42PartialPendingCheckpoint(t *testing.T) {
	for _, d := range []struct {
		name string
		d    graph.Durability
	}{{"sync", graph.DurabilitySync}, {"exit", graph.DurabilityExit}} {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			var oneCalls, twoCalls atomic.Int64
			g, err := graph.New[s41State]().
				AddNode("tool_one", func(ctx context.Context, s s41State) (s41State, error) {
					oneCalls.Add(1)
					s.MyKey.Update(" one")
					return s, nil
				}).
				AddNode("tool_two", func(ctx context.Context, s s41State) (s41State, error) {
					twoCalls.Add(1)
					a, err := graph.InterruptAs[string](ctx, "Just because...")
					if err != nil {
						return s, err
					}
					s.MyKey.Update(a)
					return s, nil
				}).
				AddBranch(graph.Start, func(ctx context.Context, s s41State) (graph.Route[s41State], error) {
					arg := s41State{Market: state.Set(s.Market.Get())}
					return graph.Route[s41State]{Nodes: []string{"tool_two"}, Sends: []graph.Send[s41State]{{Node: "tool_one", Arg: arg}}}, nil
				}, graph.WithDestinations("tool_one", "tool_two")).
				AddEdge("tool_one", graph.End).
				AddEdge("tool_two", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			th := graph.WithThread("1")

			evs, err := dexCollect(g.Stream(ctx, s41State{MyKey: dexStr("value ⛰️"), Market: state.Set("DE")}, th, graph.WithDurability(d.d)))
			dexInterrupted(t, err)
			require.ElementsMatch(t, []dexEv{
				{Mode: "updates", Node: "tool_one", Writes: map[string]any{"MyKey": []any{" one"}}},
				{Mode: "updates", Interrupts: []any{"Just because..."}},
			}, dexEvents(t, evs, graph.ModeUpdates))

			snap := dexState(t, g, "1")
			require.Equal(t, map[string]any{"MyKey": "value ⛰️ one", "Market": "DE"}, dexVals(t, snap.Values))
			require.Equal(t, []string{"tool_two"}, snap.Next)
			require.Equal(t, []string{"tool_one", "tool_two"}, dexTaskNames(snap.Tasks))
			for _, tk := range snap.Tasks {
				require.Empty(t, tk.Error)
				if tk.Name == "tool_one" {
					require.True(t, tk.Done)
					require.Empty(t, tk.Interrupts)
				} else {
					require.False(t, tk.Done)
					require.Equal(t, []any{"Just because..."}, dexInterruptValues(t, tk.Interrupts))
				}
			}
			require.Equal(t, "loop", snap.Metadata.Source)
			require.Equal(t, 0, snap.Metadata.Step)
			require.Equal(t, []any{"Just because..."}, dexInterruptValues(t, snap.Interrupts))

			evs, err = dexCollect(g.StreamResume(ctx, graph.Command[s41State]{Resume: " my answer"}, th, graph.WithDurability(d.d)))
			require.NoError(t, err)
			require.Equal(t, []dexEv{
				{Mode: "updates", Node: "tool_one", Cached: true, Writes: map[string]any{"MyKey": []any{" one"}}},
				{Mode: "updates", Node: "tool_two", Writes: map[string]any{"MyKey": []any{" my answer"}}},
			}, dexEvents(t, evs, graph.ModeUpdates))
			// Triggered nodes merge before Send tasks.
			require.Equal(t, "value ⛰️ my answer one", dexState(t, g, "1").Values.MyKey.Get())
			require.EqualValues(t, 1, oneCalls.Load())
			require.EqualValues(t, 2, twoCalls.Load())
		})
	}
}

// ---------------------------------------------------------------------------
// S43 test_node_not_cancelled_on_other_node_interrupted.

func TestS43NodeNotCancelledOnOtherNodeInterrupted(t *testing.T) {
	type S struct {
		Hello state.Reduced[string, dexConcat]
	}
	ctx := dexCtx(t)
	var agentCalls, badCalls atomic.Int64
	var agentCancelled atomic.Bool
	badInterrupted := make(chan struct{})
	var once sync.Once
	g, err := graph.New[S]().
		AddNode("agent", func(ctx context.Context, s S) (S, error) {
			agentCalls.Add(1)
			// Finish only after bad has interrupted: an interrupt must
			// not cancel a running sibling.
			<-badInterrupted
			if ctx.Err() != nil {
				agentCancelled.Store(true)
			}
			s.Hello.Update(" again")
			return s, nil
		}).
		AddNode("bad", func(ctx context.Context, s S) (S, error) {
			badCalls.Add(1)
			v, err := graph.InterruptAs[string](ctx, "I am bad")
			if err != nil {
				once.Do(func() { close(badInterrupted) })
				return s, err
			}
			s.Hello.Update(v)
			return s, nil
		}).
		AddEdge(graph.Start, "agent").
		AddEdge(graph.Start, "bad").
		AddEdge("agent", graph.End).
		AddEdge("bad", graph.End).
		Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	th := graph.WithThread("1")

	out, err := g.Invoke(ctx, S{Hello: dexStr("world")}, th)
	intr := dexInterrupted(t, err)
	require.Equal(t, []any{"I am bad"}, dexInterruptValues(t, intr.Interrupts))
	require.Equal(t, "world again", out.Hello.Get())
	require.False(t, agentCancelled.Load(), "agent was cancelled by the interrupt of its sibling")

	// Continuing without a resume value re-runs bad only, which interrupts
	// again with the same payload.
	out, err = g.Resume(ctx, graph.Command[S]{}, th)
	intr2 := dexInterrupted(t, err)
	require.Equal(t, []any{"I am bad"}, dexInterruptValues(t, intr2.Interrupts))
	require.Equal(t, intr.Interrupts[0].ID, intr2.Interrupts[0].ID)
	require.Equal(t, "world again", out.Hello.Get())
	require.EqualValues(t, 1, agentCalls.Load(), "agent re-run")

	out, err = g.Resume(ctx, graph.Command[S]{Resume: " okay"}, th)
	require.NoError(t, err)
	require.Equal(t, "world again okay", out.Hello.Get())
	require.EqualValues(t, 1, agentCalls.Load(), "agent re-run")
	require.EqualValues(t, 3, badCalls.Load())
}

// ---------------------------------------------------------------------------
// S44 test_interruption_without_state_updates.

func TestS44InterruptionWithoutStateUpdates(t *testing.T) {
	type S struct {
		Input state.Value[string]
	}
	for _, d := range dexDurabilities {
		t.Run(d.name, func(t *testing.T) {
			ctx := dexCtx(t)
			noop := func(ctx context.Context, s S) (S, error) { return S{}, nil }
			g, err := graph.New[S]().
				AddNode("step_1", noop).
				AddNode("step_2", noop).
				AddNode("step_3", noop).
				AddEdge(graph.Start, "step_1").
				AddEdge("step_1", "step_2").
				AddEdge("step_2", "step_3").
				AddEdge("step_3", graph.End).
				Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithInterruptAfter("*"))
			require.NoError(t, err)
			th := graph.WithThread("1")
			dur := graph.WithDurability(d.d)
			hist := func(sync, exit int) int {
				if d.d == graph.DurabilityExit {
					return exit
				}
				return sync
			}

			_, err = g.Invoke(ctx, S{Input: state.Set("test input")}, th, dur)
			intr := dexInterrupted(t, err)
			require.Equal(t, []string{"step_1"}, intr.After)
			require.Equal(t, []string{"step_2"}, dexState(t, g, "1").Next)
			require.Len(t, dexHistory(t, g, "1"), hist(3, 1))

			_, err = g.Resume(ctx, graph.Command[S]{}, th, dur)
			intr = dexInterrupted(t, err)
			require.Equal(t, []string{"step_2"}, intr.After)
			require.Equal(t, []string{"step_3"}, dexState(t, g, "1").Next)
			require.Len(t, dexHistory(t, g, "1"), hist(4, 2))

			// step_3 is a breakpoint too: the run pauses after it with
			// nothing left to run (as in Python, where the root swallows it).
			_, err = g.Resume(ctx, graph.Command[S]{}, th, dur)
			if err != nil {
				require.Equal(t, []string{"step_3"}, dexInterrupted(t, err).After)
			}
			require.Empty(t, dexState(t, g, "1").Next)
			require.Len(t, dexHistory(t, g, "1"), hist(5, 3))
		})
	}
}

// ---------------------------------------------------------------------------
// S45 test_double_interrupt_subgraph.

func TestS45DoubleInterruptSubgraph(t *testing.T) {
	type S struct {
		Input state.Value[string]
	}
	interrupter := func(name string) graph.NodeFunc[S] {
		return func(ctx context.Context, s S) (S, error) {
			v, err := graph.InterruptAs[string](ctx, "interrupt "+name)
			if err != nil {
				return s, err
			}
			s.Input.Set(v)
			return s, nil
		}
	}
	sub := func(opts ...graph.CompileOption) *graph.Graph[S] {
		g, err := graph.New[S]().
			AddNode("node_1", interrupter("node 1")).
			AddNode("node_2", interrupter("node 2")).
			AddEdge(graph.Start, "node_1").
			AddEdge("node_1", "node_2").
			AddEdge("node_2", graph.End).
			Compile(opts...)
		require.NoError(t, err)
		return g
	}

	t.Run("direct", func(t *testing.T) {
		ctx := dexCtx(t)
		g := sub(graph.WithCheckpointer(checkpoint.NewMemory()))
		th := graph.WithThread("1")
		evs, err := dexCollect(g.Stream(ctx, S{Input: state.Set("test")}, th))
		dexInterrupted(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"interrupt node 1"}}}, dexEvents(t, evs, graph.ModeUpdates))
		evs, err = dexCollect(g.StreamResume(ctx, graph.Command[S]{Resume: "123"}, th))
		dexInterrupted(t, err)
		require.Equal(t, []dexEv{
			{Mode: "updates", Node: "node_1", Writes: map[string]any{"Input": "123"}},
			{Mode: "updates", Interrupts: []any{"interrupt node 2"}},
		}, dexEvents(t, evs, graph.ModeUpdates))
		evs, err = dexCollect(g.StreamResume(ctx, graph.Command[S]{Resume: "123"}, th))
		require.NoError(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Node: "node_2", Writes: map[string]any{"Input": "123"}}}, dexEvents(t, evs, graph.ModeUpdates))
	})

	// Python calls subgraph.invoke inside a parent node function and
	// resumes with True; here the subgraph is a graph.Subgraph node and the
	// resume values are strings.
	t.Run("from a parent node", func(t *testing.T) {
		ctx := dexCtx(t)
		parent, err := graph.New[S]().
			AddCommandNode("invoke_sub_agent", graph.Subgraph[S, S](sub(), nil, nil)).
			AddEdge(graph.Start, "invoke_sub_agent").
			AddEdge("invoke_sub_agent", graph.End).
			Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
		require.NoError(t, err)
		th := graph.WithThread("1")
		evs, err := dexCollect(parent.Stream(ctx, S{Input: state.Set("test")}, th))
		intr := dexInterrupted(t, err)
		require.Equal(t, []any{"interrupt node 1"}, dexInterruptValues(t, intr.Interrupts))
		require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"interrupt node 1"}}}, dexEvents(t, evs, graph.ModeUpdates))

		evs, err = dexCollect(parent.StreamResume(ctx, graph.Command[S]{Resume: "true"}, th))
		dexInterrupted(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Interrupts: []any{"interrupt node 2"}}}, dexEvents(t, evs, graph.ModeUpdates))

		evs, err = dexCollect(parent.StreamResume(ctx, graph.Command[S]{Resume: "true"}, th))
		require.NoError(t, err)
		require.Equal(t, []dexEv{{Mode: "updates", Node: "invoke_sub_agent", Writes: map[string]any{"Input": "true"}}}, dexEvents(t, evs, graph.ModeUpdates))
		require.Equal(t, "true", dexState(t, parent, "1").Values.Input.Get())
	})
}

// dexSortedKeys returns m's keys, sorted.
func dexSortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
