package retrai_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// retraiGoal is a goal whose check is a function of the number of the
// check (from 1).
type retraiGoal struct {
	check func(n int) (goals.Result, error)

	mu     sync.Mutex
	states []goals.State
	cwds   []string
}

func (g *retraiGoal) Name() string         { return "fake-goal" }
func (g *retraiGoal) SystemPrompt() string { return "Make the fake widget work." }
func (g *retraiGoal) Check(ctx context.Context, st goals.State, cwd string) (goals.Result, error) {
	g.mu.Lock()
	g.states = append(g.states, st)
	g.cwds = append(g.cwds, cwd)
	n := len(g.states)
	g.mu.Unlock()
	return g.check(n)
}

// achievedAt returns a check that fails (with one failing test) until
// check number n.
func achievedAt(n int) func(int) (goals.Result, error) {
	return func(i int) (goals.Result, error) {
		if i >= n {
			return goals.Result{Achieved: true, Reason: "fake-goal: all 3 tests passed", Details: goals.Details{Passed: 3}}, nil
		}
		return goals.Result{Reason: "fake-goal: 1 of 3 tests failed: TestWidget", Details: goals.Details{
			Passed: 2, Failed: 1, Failures: []goals.Failure{{Name: "TestWidget", Output: "widget is broken"}},
		}}, nil
	}
}

// recorder collects the events of runs published by events.Bridge.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

// Publish implements events.Publisher.
func (r *recorder) Publish(ev events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) events() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Event(nil), r.evs...)
}

// kinds lists the events as kind, with the node of node events and the
// tool of tool events: "node_started:plan", "tool_call:probe".
func (r *recorder) kinds() []string {
	var out []string
	for _, ev := range r.events() {
		k := string(ev.Kind())
		switch p := ev.Data.(type) {
		case events.NodeStarted, events.NodeEnded:
			k += ":" + ev.Node
		case events.ToolCall:
			k += ":" + p.Name
		case events.ToolResult:
			k += ":" + p.Name
		}
		out = append(out, k)
	}
	return out
}

// ofType returns the payloads of type P published, in order.
func ofType[P events.Payload](r *recorder) []P {
	var out []P
	for _, ev := range r.events() {
		if p, ok := ev.Data.(P); ok {
			out = append(out, p)
		}
	}
	return out
}

// run runs g on in — or, when in is nil, resumes it with cmd — streaming
// it through events.Bridge onto rec as a program publishing the agent's
// events does, and returns the run's last state and error.
func run(t *testing.T, ctx context.Context, g *graph.Graph[retrai.State], rec *recorder, in *retrai.State, cmd graph.Command[retrai.State], opts ...graph.RunOption) (retrai.State, error) {
	t.Helper()
	opts = append(opts, graph.WithStreamModes(events.StreamModes|graph.ModeValues))
	var stream iter.Seq2[graph.Event, error]
	if in != nil {
		stream = g.Stream(ctx, *in, opts...)
	} else {
		stream = g.StreamResume(ctx, cmd, opts...)
	}
	var out retrai.State
	values := func(yield func(graph.Event, error) bool) {
		for ev, err := range stream {
			if s, ok := ev.Payload.(retrai.State); ok && ev.Mode == graph.ModeValues {
				out = s
			}
			if !yield(ev, err) {
				return
			}
		}
	}
	err := events.Bridge(ctx, rec, "run-1", values)
	return out, err
}

// invoke is run of a new run.
func invoke(t *testing.T, g *graph.Graph[retrai.State], rec *recorder, in retrai.State, opts ...graph.RunOption) (retrai.State, error) {
	t.Helper()
	return run(t, t.Context(), g, rec, &in, graph.Command[retrai.State]{}, opts...)
}

// echoTools are a "probe" tool answering "probed <what>" and a "big" tool
// answering n characters.
func echoTools(n int) func(string) ([]tools.Tool, error) {
	type probeArgs struct {
		What string `json:"what" jsonschema:"required"`
	}
	return func(string) ([]tools.Tool, error) {
		return []tools.Tool{
			tools.New("probe", "Probe something.\nMore details.", func(ctx context.Context, a probeArgs) (string, error) {
				return "probed " + a.What, nil
			}),
			tools.New("big", "Return a lot of output.", func(ctx context.Context, _ struct{}) (string, error) {
				return strings.Repeat("x", n), nil
			}),
		}, nil
	}
}

func probe(id, what string) llms.ToolCall {
	return state.ToolCall(id, "probe", `{"what":"`+what+`"}`)
}

func retraiInput(maxIter int, hitl bool) retrai.State {
	return retrai.Input(retrai.Run{RunID: "run-1", Cwd: "/project", ModelName: "scripted", MaxIterations: maxIter, HITL: hitl})
}

func TestReachesTheGoal(t *testing.T) {
	goal := &retraiGoal{check: achievedAt(2)}
	var rec recorder
	model := llm.NewScripted(
		llm.Reply{Text: "Let me probe.", ToolCalls: []llms.ToolCall{probe("c1", "a"), probe("c2", "b")}, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}},
		llm.Reply{Text: "Fixed.", Usage: llm.Usage{PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220}},
	)
	g, err := retrai.New(model, goal, retrai.WithTools(echoTools(1)))
	require.NoError(t, err)

	out, err := invoke(t, g, &rec, retraiInput(0, false))
	require.NoError(t, err)

	require.Equal(t, retrai.OutcomeAchieved, out.Outcome())
	require.Equal(t, 2, out.Iteration.Get())
	require.Equal(t, retrai.DefaultMaxIterations, out.MaxIterations.Get())
	require.Equal(t, 330, out.TotalTokens.Get())
	require.Equal(t, "fake-goal: all 3 tests passed", out.GoalReason.Get())
	require.Empty(t, out.PendingToolCalls.Get())
	require.Len(t, out.ToolResults.Get(), 2, "the results of the last act step")

	require.Equal(t, []string{
		"human: Start",
		`ai: Let me probe. call(c1 probe {"what":"a"}) call(c2 probe {"what":"b"})`,
		"tool:  result(c1 probe probed a)",
		"tool:  result(c2 probe probed b)",
		"human: [goal check, iteration 1 of 50] Not achieved yet: fake-goal: 1 of 3 tests failed: TestWidget",
		"ai: Fixed.",
		"human: [goal check, iteration 2 of 50] Goal achieved: fake-goal: all 3 tests passed",
	}, firstLines(agenttest.Summary(out.Messages.List())))

	require.Equal(t, []string{
		"run_started",
		"node_started:plan", "retrai.iteration_started", "model_call", "tool_call:probe", "tool_call:probe", "node_ended:plan",
		"node_started:act", "node_started:act",
		"tool_result:probe", "node_ended:act", "tool_result:probe", "node_ended:act",
		"node_started:evaluate", "retrai.goal_check", "node_ended:evaluate",
		"node_started:plan", "retrai.iteration_started", "model_call", "node_ended:plan",
		"node_started:evaluate", "retrai.goal_check", "retrai.finished", "node_ended:evaluate",
		"run_ended",
	}, rec.kinds())
	for _, ev := range rec.events() {
		require.Equal(t, "run-1", ev.RunID, "%s", ev.Kind())
	}
	require.Equal(t, []retrai.IterationStarted{{Iteration: 1, MaxIterations: 50}, {Iteration: 2, MaxIterations: 50}},
		ofType[retrai.IterationStarted](&rec))
	require.Equal(t, []events.ModelCall{
		{Model: "scripted", Text: "Let me probe.", ToolCalls: 2, StopReason: llm.StopToolCalls, PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110},
		{Model: "scripted", Text: "Fixed.", StopReason: llm.StopEnd, PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220},
	}, ofType[events.ModelCall](&rec))
	require.Equal(t, []events.ToolCall{{ID: "c1", Name: "probe", Args: `{"what":"a"}`}, {ID: "c2", Name: "probe", Args: `{"what":"b"}`}},
		ofType[events.ToolCall](&rec))
	require.Equal(t, []events.ToolResult{{ID: "c1", Name: "probe", Result: "probed a"}, {ID: "c2", Name: "probe", Result: "probed b"}},
		ofType[events.ToolResult](&rec))
	require.Equal(t, []retrai.GoalCheck{
		{Goal: "fake-goal", Iteration: 1, MaxIterations: 50, Reason: "fake-goal: 1 of 3 tests failed: TestWidget", Passed: 2, Failed: 1, Stuck: 1, TotalTokens: 110},
		{Goal: "fake-goal", Iteration: 2, MaxIterations: 50, Achieved: true, Reason: "fake-goal: all 3 tests passed", Passed: 3, TotalTokens: 330},
	}, ofType[retrai.GoalCheck](&rec))
	require.Equal(t, []retrai.Finished{{Outcome: retrai.OutcomeAchieved, Reason: "fake-goal: all 3 tests passed", Iteration: 2, TotalTokens: 330}},
		ofType[retrai.Finished](&rec))
	require.Equal(t, []events.RunEnded{{Status: events.StatusCompleted}}, ofType[events.RunEnded](&rec))

	// The goal saw each iteration's number, the limit and the project.
	require.Equal(t, []string{"/project", "/project"}, goal.cwds)
	require.Equal(t, 1, goal.states[0].Iteration)
	require.Equal(t, 2, goal.states[1].Iteration)
	require.Equal(t, "run-1", goal.states[1].RunID)
	require.Equal(t, 50, goal.states[1].MaxIterations)

	// Every model call got the system prompt first and the tools bound.
	calls := model.Calls()
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Equal(t, llms.ChatMessageTypeSystem, c.Messages[0].Role)
		require.Len(t, c.Options.Tools, 2)
	}
	prompt := calls[0].Messages[0].Text()
	for _, want := range []string{
		"You are retrAI", "/project", "## Goal: fake-goal", "Make the fake widget work.", "at most 50 iterations",
		"- probe: Probe something.\n", "- big: Return a lot of output.",
		"Understand first", "Run things", "Iterate", "Search when stuck", "Prefer file_patch", "Always verify",
	} {
		require.Contains(t, prompt, want)
	}
}

// firstLines cuts each string at its first newline.
func firstLines(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i], _, _ = strings.Cut(s, "\n")
		out[i] = strings.TrimSuffix(out[i], " Begin by exploring the project and running the check yourself, then fix what fails.")
		if strings.HasPrefix(out[i], "human: Start working") {
			out[i] = "human: Start"
		}
	}
	return out
}

func TestRouting(t *testing.T) {
	tests := []struct {
		name       string
		replies    []llm.Reply
		achieveAt  int
		maxIter    int
		wantNodes  []string
		wantOut    string
		wantIter   int
		wantReason string
	}{
		{
			name:      "no tool calls goes straight to evaluate",
			replies:   []llm.Reply{{Text: "Done already."}},
			achieveAt: 1,
			wantNodes: []string{"plan", "evaluate"},
			wantOut:   retrai.OutcomeAchieved,
			wantIter:  1,
		},
		{
			name:      "tool calls go through act",
			replies:   []llm.Reply{{ToolCalls: []llms.ToolCall{probe("c1", "x")}}},
			achieveAt: 1,
			wantNodes: []string{"plan", "act", "evaluate"},
			wantOut:   retrai.OutcomeAchieved,
			wantIter:  1,
		},
		{
			name:       "out of iterations ends the run as failed",
			replies:    []llm.Reply{{ToolCalls: []llms.ToolCall{probe("c1", "x")}}, {Text: "Hmm."}},
			achieveAt:  99,
			maxIter:    2,
			wantNodes:  []string{"plan", "act", "evaluate", "plan", "evaluate"},
			wantOut:    retrai.OutcomeFailed,
			wantIter:   2,
			wantReason: "goal not achieved after 2 iteration(s): fake-goal: 1 of 3 tests failed: TestWidget",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			model := llm.NewScripted(tt.replies...)
			g, err := retrai.New(model, &retraiGoal{check: achievedAt(tt.achieveAt)}, retrai.WithTools(echoTools(1)))
			require.NoError(t, err)
			out, err := invoke(t, g, &rec, retraiInput(tt.maxIter, false))
			require.NoError(t, err)
			require.Equal(t, tt.wantOut, out.Outcome())
			require.Equal(t, tt.wantIter, out.Iteration.Get())
			require.Zero(t, model.Remaining())

			var nodes []string
			for _, ev := range rec.events() {
				if _, ok := ev.Data.(events.NodeStarted); ok {
					nodes = append(nodes, ev.Node)
				}
			}
			require.Equal(t, tt.wantNodes, nodes)
			ends := ofType[retrai.Finished](&rec)
			require.Len(t, ends, 1)
			require.Equal(t, tt.wantOut, ends[0].Outcome)
			if tt.wantReason != "" {
				require.Equal(t, tt.wantReason, ends[0].Reason)
				last, _ := out.Messages.Last()
				require.Contains(t, last.Text(), "No iterations are left")
			}
		})
	}
}

func TestTellsTheModelToChangeApproachWhenStuck(t *testing.T) {
	// The check keeps reporting one failing test; from the third identical
	// failure on the status message says the model is stuck.
	var replies []llm.Reply
	for range 4 {
		replies = append(replies, llm.Reply{Text: "trying"})
	}
	model := llm.NewScripted(replies...)
	var rec recorder
	g, err := retrai.New(model, &retraiGoal{check: achievedAt(99)}, retrai.WithTools(echoTools(1)))
	require.NoError(t, err)
	out, err := invoke(t, g, &rec, retraiInput(4, false))
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeFailed, out.Outcome())
	require.Equal(t, 4, out.StuckIterations.Get())

	var status []string
	for _, m := range out.Messages.List() {
		if strings.HasPrefix(m.Text(), "[goal check") {
			status = append(status, m.Text())
		}
	}
	require.Len(t, status, 4)
	for i, s := range status {
		require.Contains(t, s, "--- TestWidget\nwidget is broken")
		if i == 2 {
			require.Contains(t, s, "You are stuck: the check has reported the same failure for 3 iterations in a row")
			require.Contains(t, s, "try a different approach")
			require.Contains(t, s, "1 iteration(s) left")
		} else {
			require.NotContains(t, s, "You are stuck", "status %d", i+1)
		}
	}
	var stuck []int
	for _, gc := range ofType[retrai.GoalCheck](&rec) {
		stuck = append(stuck, gc.Stuck)
	}
	require.Equal(t, []int{1, 2, 3, 4}, stuck)
}

func TestStuckCountResetsWhenTheFailureChanges(t *testing.T) {
	failing := []int{2, 2, 1, 1, 1}
	goal := &retraiGoal{check: func(n int) (goals.Result, error) {
		f := failing[n-1]
		return goals.Result{Reason: fmt.Sprintf("%d failing", f), Details: goals.Details{Failed: f}}, nil
	}}
	var replies []llm.Reply
	for range failing {
		replies = append(replies, llm.Reply{Text: "trying"})
	}
	var rec recorder
	g, err := retrai.New(llm.NewScripted(replies...), goal, retrai.WithTools(echoTools(1)))
	require.NoError(t, err)
	_, err = invoke(t, g, &rec, retraiInput(len(failing), false))
	require.NoError(t, err)
	var stuck []int
	for _, gc := range ofType[retrai.GoalCheck](&rec) {
		stuck = append(stuck, gc.Stuck)
	}
	require.Equal(t, []int{1, 2, 1, 2, 3}, stuck)
}

func TestHumanCheck(t *testing.T) {
	tests := []struct {
		name     string
		decision any
		want     string
	}{
		{"true", true, retrai.OutcomeAchieved},
		{"approve", "approve", retrai.OutcomeAchieved},
		{"yes in capitals", " YES ", retrai.OutcomeAchieved},
		{"continue", "continue", retrai.OutcomeAchieved},
		{"a map with a decision", map[string]any{"decision": "approve"}, retrai.OutcomeAchieved},
		{"abort", "abort", retrai.OutcomeAborted},
		{"false", false, retrai.OutcomeAborted},
		{"anything else", "maybe", retrai.OutcomeAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			model := llm.NewScripted(
				llm.Reply{ToolCalls: []llms.ToolCall{probe("c1", "x")}},
				llm.Reply{Text: "fixed"},
			)
			g, err := retrai.New(model, &retraiGoal{check: achievedAt(2)},
				retrai.WithTools(echoTools(1)), retrai.WithCheckpointer(checkpoint.NewMemory()))
			require.NoError(t, err)
			thread := graph.WithThread("hitl")

			_, err = invoke(t, g, &rec, retraiInput(0, true), thread)
			intr, ok := errors.AsType[*graph.Interrupted](err)
			require.True(t, ok, "want *graph.Interrupted, got %v", err)
			require.Len(t, intr.Interrupts, 1)
			require.Equal(t, retrai.HumanCheckNode, intr.Interrupts[0].Node)
			payload := intr.Interrupts[0].Value.(map[string]any)
			require.Contains(t, payload["question"], "Iteration 1 of 50 done: fake-goal: 1 of 3 tests failed")
			require.Equal(t, []retrai.HumanCheck{{Question: payload["question"].(string), Reason: "fake-goal: 1 of 3 tests failed: TestWidget", Iteration: 1}},
				ofType[retrai.HumanCheck](&rec))
			require.Equal(t, []events.Interrupt{{ID: intr.Interrupts[0].ID, Value: payload}}, ofType[events.Interrupt](&rec))
			require.Empty(t, ofType[retrai.Finished](&rec))
			require.Equal(t, []events.RunEnded{{Status: events.StatusInterrupted}}, ofType[events.RunEnded](&rec))

			out, err := run(t, t.Context(), g, &rec, nil, graph.Command[retrai.State]{Resume: tt.decision}, thread)
			if tt.want == retrai.OutcomeAchieved {
				// Approved: the agent plans again, reaches the goal at
				// the second check and ends without another human check.
				require.NoError(t, err)
				require.Equal(t, 2, out.Iteration.Get())
				require.Zero(t, model.Remaining())
			} else {
				require.NoError(t, err)
				require.True(t, out.Aborted.Get())
				require.Equal(t, 1, out.Iteration.Get())
				require.Equal(t, 1, model.Remaining(), "no model call after an abort")
			}
			require.Equal(t, tt.want, out.Outcome())
			require.Equal(t, []retrai.HumanDecision{{Decision: fmt.Sprint(tt.decision), Approved: tt.want == retrai.OutcomeAchieved, Iteration: 1}},
				ofType[retrai.HumanDecision](&rec))
			require.Len(t, ofType[retrai.HumanCheck](&rec), 1, "resuming does not ask again")
			ends := ofType[retrai.Finished](&rec)
			require.Len(t, ends, 1)
			require.Equal(t, tt.want, ends[0].Outcome)
		})
	}
}

func TestTrimsTheContext(t *testing.T) {
	tests := []struct {
		name   string
		window int
		want   int // messages after the system prompt
	}{
		{"default window of 60", 0, retrai.DefaultContextMessages},
		{"window of 5", 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := retraiInput(1, false)
			for i := range 100 {
				in.Messages.Append(state.Human(fmt.Sprintf("note %d", i)))
			}
			model := llm.NewScripted(llm.Reply{Text: "ok", Expect: func(msgs []state.Message) error {
				if len(msgs) != tt.want+1 {
					return fmt.Errorf("got %d messages, want %d", len(msgs), tt.want+1)
				}
				if msgs[0].Role != llms.ChatMessageTypeSystem || !strings.Contains(msgs[0].Text(), "retrAI") {
					return fmt.Errorf("the first message is not the system prompt: %q", msgs[0].Text())
				}
				if last := msgs[len(msgs)-1].Text(); last != "note 99" {
					return fmt.Errorf("the last message is %q", last)
				}
				return nil
			}})
			opts := []retrai.Option{retrai.WithTools(echoTools(1))}
			if tt.window > 0 {
				opts = append(opts, retrai.WithContextMessages(tt.window))
			}
			g, err := retrai.New(model, &retraiGoal{check: achievedAt(1)}, opts...)
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), in)
			require.NoError(t, err)
		})
	}
}

func TestTruncatesToolOutput(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		limit     int
		wantChars int
	}{
		{"short output is kept", 100, 0, 100},
		{"default limit", 20000, 0, retrai.DefaultToolOutputChars},
		{"custom limit", 3000, 1000, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			model := llm.NewScripted(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "big", `{}`)}})
			opts := []retrai.Option{retrai.WithTools(echoTools(tt.size))}
			if tt.limit > 0 {
				opts = append(opts, retrai.WithToolOutputLimit(tt.limit))
			}
			g, err := retrai.New(model, &retraiGoal{check: achievedAt(1)}, opts...)
			require.NoError(t, err)
			out, err := invoke(t, g, &rec, retraiInput(1, false))
			require.NoError(t, err)

			results := out.ToolResults.Get()
			require.Len(t, results, 1)
			require.Len(t, []rune(results[0].Output), tt.wantChars)
			require.False(t, results[0].IsError)
			var toolMsg string
			for _, m := range out.Messages.List() {
				for _, r := range m.ToolResults() {
					toolMsg = r.Content
				}
			}
			require.Equal(t, results[0].Output, toolMsg)
			if tt.size > tt.wantChars {
				require.Contains(t, toolMsg, "characters truncated")
			}
			require.Equal(t, []events.ToolResult{{ID: "c1", Name: "big", Result: toolMsg}}, ofType[events.ToolResult](&rec),
				"the event carries what the model is shown")
		})
	}
}

func TestToolErrorsAreResultsTheModelSees(t *testing.T) {
	var rec recorder
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "nope", `{}`), state.ToolCall("c2", "probe", `{"bad":1}`)}},
		llm.Reply{Text: "ok", Expect: func(msgs []state.Message) error {
			for _, m := range msgs {
				for _, r := range m.ToolResults() {
					if !strings.HasPrefix(r.Content, "Error") {
						return fmt.Errorf("tool result %q is not an error", r.Content)
					}
				}
			}
			return nil
		}},
	)
	g, err := retrai.New(model, &retraiGoal{check: achievedAt(2)}, retrai.WithTools(echoTools(1)))
	require.NoError(t, err)
	out, err := invoke(t, g, &rec, retraiInput(0, false))
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeAchieved, out.Outcome())
	for _, r := range out.ToolResults.Get() {
		require.True(t, r.IsError, "%+v", r)
	}
	results := ofType[events.ToolResult](&rec)
	require.Len(t, results, 2)
	for _, r := range results {
		require.True(t, strings.HasPrefix(r.Result, "Error"), "%+v", r)
	}
}

func TestFailures(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		model   llm.Reply
		check   func(int) (goals.Result, error)
		wantErr string
	}{
		{"model error", llm.Reply{Err: boom}, achievedAt(1), "retrai: model call"},
		{"goal check error", llm.Reply{Text: "ok"}, func(int) (goals.Result, error) { return goals.Result{}, boom }, "retrai: goal check fake-goal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			g, err := retrai.New(llm.NewScripted(tt.model), &retraiGoal{check: tt.check}, retrai.WithTools(echoTools(1)))
			require.NoError(t, err)
			_, err = invoke(t, g, &rec, retraiInput(0, false))
			require.ErrorIs(t, err, boom)
			require.ErrorContains(t, err, tt.wantErr)
			require.Equal(t, []events.Error{{Message: err.Error()}}, ofType[events.Error](&rec))
			require.Equal(t, []events.RunEnded{{Status: events.StatusFailed, Error: err.Error()}}, ofType[events.RunEnded](&rec))
			require.Empty(t, ofType[retrai.Finished](&rec))
		})
	}
}

func TestNewRejectsMissingParts(t *testing.T) {
	_, err := retrai.New(nil, &retraiGoal{})
	require.ErrorContains(t, err, "nil model")
	_, err = retrai.New(llm.NewScripted(), nil)
	require.ErrorContains(t, err, "nil goal")
}

func TestMermaid(t *testing.T) {
	g, err := retrai.New(llm.NewScripted(), &retraiGoal{})
	require.NoError(t, err)
	m := g.Mermaid()
	for _, edge := range []string{
		"__start__ --> plan",
		"plan -. tool calls .-> act",
		"plan -. no tool calls .-> evaluate",
		"act --> evaluate",
		"evaluate -. achieved or out of iterations .-> __end__",
		"evaluate -. HITL .-> human_check",
		"evaluate -. continue .-> plan",
		"human_check -. approve .-> plan",
		"human_check -. abort .-> __end__",
	} {
		require.Contains(t, m, edge)
	}
}

func TestApproved(t *testing.T) {
	tests := []struct {
		v    any
		want bool
	}{
		{true, true}, {false, false},
		{"approve", true}, {"Approve", true}, {" yes\n", true}, {"continue", true},
		{"abort", false}, {"no", false}, {"", false}, {"approved!", false},
		{map[string]any{"decision": "yes"}, true}, {map[string]any{"decision": "abort"}, false}, {map[string]any{}, false},
		{nil, false}, {1, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, retrai.Approved(tt.v), "%#v", tt.v)
	}
}

func TestTruncateMiddle(t *testing.T) {
	long := strings.Repeat("a", 600) + strings.Repeat("é", 600)
	tests := []struct {
		name string
		s    string
		n    int
	}{
		{"short", "hello", 10},
		{"exact", "hello", 5},
		{"no limit", long, 0},
		{"long", long, 500},
		{"tiny limit", long, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := retrai.TruncateMiddle(tt.s, tt.n)
			if tt.n <= 0 || len([]rune(tt.s)) <= tt.n {
				require.Equal(t, tt.s, got)
				return
			}
			require.Len(t, []rune(got), tt.n)
			if tt.n >= 100 {
				require.True(t, strings.HasPrefix(got, "aaaa"))
				require.True(t, strings.HasSuffix(got, "éééé"))
				require.Contains(t, got, "characters truncated")
			}
		})
	}
}

// stepTools returns a "step" tool recording the order in which its calls
// start and the most calls running at once; before, when set, runs at the
// start of each call.
type stepTools struct {
	mu      sync.Mutex
	started []string
	active  int
	peak    int
	before  func(ctx context.Context, n string) error
}

func (st *stepTools) tools(string) ([]tools.Tool, error) {
	type stepArgs struct {
		N string `json:"n" jsonschema:"required"`
	}
	return []tools.Tool{tools.New("step", "Take a step.", func(ctx context.Context, a stepArgs) (string, error) {
		st.mu.Lock()
		st.started = append(st.started, a.N)
		st.active++
		st.peak = max(st.peak, st.active)
		st.mu.Unlock()
		defer func() {
			st.mu.Lock()
			st.active--
			st.mu.Unlock()
		}()
		if st.before != nil {
			if err := st.before(ctx, a.N); err != nil {
				return "", err
			}
		}
		return "stepped " + a.N, nil
	})}, nil
}

func stepCalls(n int) []llms.ToolCall {
	var calls []llms.ToolCall
	for i := 1; i <= n; i++ {
		calls = append(calls, state.ToolCall(fmt.Sprint("c", i), "step", fmt.Sprintf(`{"n":"%d"}`, i)))
	}
	return calls
}

// toolResults renders the tool messages of msgs as "callID content".
func toolResults(msgs []state.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, r := range m.ToolResults() {
			out = append(out, r.ToolCallID+" "+r.Content)
		}
	}
	return out
}

func TestRunsEachToolCallAsATaskOneAtATimeInCallOrder(t *testing.T) {
	const calls = 5
	for range 10 { // the tasks of a turn start together: give races a chance
		var rec recorder
		var st stepTools
		model := llm.NewScripted(llm.Reply{ToolCalls: stepCalls(calls)})
		g, err := retrai.New(model, &retraiGoal{check: achievedAt(1)}, retrai.WithTools(st.tools))
		require.NoError(t, err)

		final, err := invoke(t, g, &rec, retraiInput(0, false))
		require.NoError(t, err)
		pushed := 0
		for _, ev := range rec.events() {
			if p, ok := ev.Data.(events.NodeStarted); ok && ev.Node == retrai.ActNode {
				require.True(t, p.Push, "a Send task")
				pushed++
			}
		}
		require.Equal(t, calls, pushed, "one act task per call")
		require.Equal(t, []string{"1", "2", "3", "4", "5"}, st.started)
		require.Equal(t, 1, st.peak, "one call at a time")

		want := []string{"c1 stepped 1", "c2 stepped 2", "c3 stepped 3", "c4 stepped 4", "c5 stepped 5"}
		require.Equal(t, want, toolResults(final.Messages.List()))
		var results []string
		for _, r := range final.ToolResults.Get() {
			results = append(results, r.CallID+" "+r.Output)
		}
		require.Equal(t, want, results)
		require.Empty(t, final.PendingToolCalls.Get())
		require.False(t, final.ActCall.HasValue(), "ActCall is only in the act tasks' input")

		var ids []string
		for _, r := range ofType[events.ToolResult](&rec) {
			ids = append(ids, r.ID)
		}
		require.Equal(t, []string{"c1", "c2", "c3", "c4", "c5"}, ids, "a tool result per call, in call order")
	}
}

func TestResumeRunsOnlyTheUnfinishedToolCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	st := stepTools{before: func(_ context.Context, n string) error {
		if n == "2" {
			cancel() // the run stops during the second call
			return context.Canceled
		}
		return nil
	}}
	model := llm.NewScripted(llm.Reply{ToolCalls: stepCalls(3)})
	g, err := retrai.New(model, &retraiGoal{check: achievedAt(1)},
		retrai.WithTools(st.tools), retrai.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	thread := graph.WithThread("t")

	_, err = g.Invoke(ctx, retraiInput(0, false), thread)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []string{"1", "2"}, st.started)

	st.before = nil
	out, err := g.Resume(t.Context(), graph.Command[retrai.State]{}, thread)
	require.NoError(t, err)
	require.Equal(t, retrai.OutcomeAchieved, out.Outcome())
	require.Equal(t, "1", st.started[0])
	require.ElementsMatch(t, []string{"1", "2", "2", "3"}, st.started, "call 1 ran once, call 2 again")
	require.Equal(t, 1, st.peak)
	require.Equal(t, []string{"c1 stepped 1", "c2 stepped 2", "c3 stepped 3"}, toolResults(out.Messages.List()))
	require.Len(t, out.ToolResults.Get(), 3)
}
