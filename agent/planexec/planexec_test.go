package planexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/agent/planexec"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type lookupArgs struct {
	Topic string `json:"topic" jsonschema:"required,description=What to look up"`
}

// library is a "lookup" tool that records its calls; the topic "broken"
// makes it fail.
type library struct {
	mu    sync.Mutex
	calls []string
}

func (l *library) tool() tools.Tool {
	return tools.New("lookup", "Look up a topic.", func(ctx context.Context, a lookupArgs) (string, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, a.Topic)
		if a.Topic == "broken" {
			return "", errors.New("the shelf is empty")
		}
		return "fact about " + a.Topic, nil
	})
}

func (l *library) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func plan(steps ...string) llm.Reply {
	b, _ := json.Marshal(steps)
	return llm.Reply{Text: string(b)}
}

func decide(d planexec.Decision, reason string) llm.Reply {
	return llm.Reply{Text: fmt.Sprintf(`{"decision": %q, "reason": %q}`, d, reason)}
}

func lookup(id, topic string) llm.Reply {
	return llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall(id, "lookup", fmt.Sprintf(`{"topic":%q}`, topic))}}
}

func text(s string) llm.Reply { return llm.Reply{Text: s} }

// run runs g on the input for question and returns the final state and
// the values the nodes wrote with graph.StreamWriter.
func run(t *testing.T, g *graph.Graph[planexec.State], question string, opts ...graph.RunOption) (planexec.State, []any, error) {
	t.Helper()
	var final planexec.State
	var custom []any
	opts = append(opts, graph.WithStreamModes(graph.ModeValues|graph.ModeCustom))
	for ev, err := range g.Stream(t.Context(), planexec.Input(question), opts...) {
		if err != nil {
			return final, custom, err
		}
		switch ev.Mode {
		case graph.ModeValues:
			final = ev.Payload.(planexec.State)
		case graph.ModeCustom:
			custom = append(custom, ev.Payload)
		}
	}
	return final, custom, nil
}

// only returns the values of type P among vs.
func only[P any](vs []any) []P {
	var out []P
	for _, v := range vs {
		if p, ok := v.(P); ok {
			out = append(out, p)
		}
	}
	return out
}

func TestFullRunPlansExecutesRefinesAndAnswers(t *testing.T) {
	var lib library
	model := llm.NewScripted(
		plan("Look up caches", "Look up eviction"),
		lookup("c1", "caches"),
		text("Caches keep entries."),
		decide(planexec.Finish, "enough"),
		text("# Answer\nCaches keep entries."),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()})
	require.NoError(t, err)

	out, _, err := run(t, g, "How do caches work?")
	require.NoError(t, err)

	require.Equal(t, "# Answer\nCaches keep entries.", out.Response.Get())
	require.Empty(t, cmp.Diff(map[string]string{
		"step_1: Look up caches": "fact about caches\n---\nCaches keep entries.",
	}, out.Findings.Get()))
	require.Equal(t, []string{"Look up caches", "Look up eviction"}, out.Plan.Get())
	require.Equal(t, 1, out.CurrentStep.Get())
	require.Equal(t, 1, out.IterationCount.Get())
	require.Equal(t, planexec.Finish, out.LoopDecision.Get())
	require.Zero(t, out.Messages.Len())
	require.Empty(t, cmp.Diff([]string{
		"human: How do caches work?",
		"ai: # Answer\nCaches keep entries.",
	}, agenttest.Summary(out.ChatHistory.List())))
	require.Equal(t, []string{"caches"}, lib.got())
	require.Zero(t, model.Remaining())

	// Only the executor's calls have the tools bound.
	var bound []bool
	for _, c := range model.Calls() {
		bound = append(bound, len(c.Options.Tools) > 0)
	}
	require.Equal(t, []bool{false, true, true, false, false}, bound)
	require.Empty(t, cmp.Diff(tools.Definitions(lib.tool()), model.Calls()[1].Options.Tools))
}

func TestExecutorSeesTheStepPriorFindingsAndToolResults(t *testing.T) {
	var lib library
	model := llm.NewScripted(
		plan("Look up caches"),
		lookup("c1", "caches"),
		text("Caches keep entries."),
		decide(planexec.Finish, "enough"),
		text("answer"),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()},
		planexec.WithPrompts(planexec.Prompts{Executor: "Step: {step}. Known: {findings}", ExecutorTask: "Do {step} for {input}"}))
	require.NoError(t, err)

	_, _, err = run(t, g, "How do caches work?")
	require.NoError(t, err)
	calls := model.Calls()
	require.Empty(t, cmp.Diff([]string{
		"system: Step: Look up caches. Known: (none yet)",
		"human: Do Look up caches for How do caches work?",
		`ai:  call(c1 lookup {"topic":"caches"})`,
		"tool:  result(c1 lookup fact about caches)",
	}, agenttest.Summary(calls[2].Messages)))
}

func TestReplanningPlansAgainWithTheFindingsSoFar(t *testing.T) {
	model := llm.NewScripted(
		plan("Find A"),
		text("A is 1."),
		decide(planexec.Continue, "B is missing"),
		llm.Reply{Text: `["Find B"]`, Expect: func(msgs []state.Message) error {
			if sys := msgs[0].Text(); !strings.Contains(sys, "### step_1: Find A\nA is 1.") {
				return fmt.Errorf("the re-planning prompt lacks the findings: %q", sys)
			}
			return nil
		}},
		text("B is 2."),
		decide(planexec.Finish, "complete"),
		text("A is 1 and B is 2."),
	)
	g, err := planexec.New(model, nil,
		planexec.WithPrompts(planexec.Prompts{Planner: "Plan for {input}. Findings:\n{findings}"}))
	require.NoError(t, err)

	out, custom, err := run(t, g, "What are A and B?")
	require.NoError(t, err)
	require.Equal(t, "A is 1 and B is 2.", out.Response.Get())
	require.Equal(t, 2, out.IterationCount.Get())
	require.Equal(t, []string{"Find B"}, out.Plan.Get())
	require.Empty(t, cmp.Diff(map[string]string{
		"step_1: Find A": "A is 1.",
		"step_2: Find B": "B is 2.",
	}, out.Findings.Get()))
	require.Equal(t, []planexec.PlanMade{
		{Iteration: 1, MaxIterations: planexec.DefaultMaxIterations, Steps: []string{"Find A"}},
		{Iteration: 2, MaxIterations: planexec.DefaultMaxIterations, Steps: []string{"Find B"}},
	}, only[planexec.PlanMade](custom))
	require.Equal(t, "Plan for What are A and B?. Findings:\n(none yet)", model.Calls()[0].Messages[0].Text())
}

func TestPlannerFallsBackToOneGenericStepOnUnusableJSON(t *testing.T) {
	tests := []struct {
		name   string
		answer string
	}{
		{"prose", "I would first search the code."},
		{"object", `{"steps": "Find A"}`},
		{"empty array", "[]"},
		{"numbers", "[1, 2]"},
		{"blank steps", `["", "  "]`},
		{"truncated", `["Find A", "Fi`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := llm.NewScripted(text(tt.answer), text("found"), decide(planexec.Finish, "ok"), text("answer"))
			g, err := planexec.New(model, nil, planexec.WithPrompts(planexec.Prompts{FallbackStep: "Search broadly"}))
			require.NoError(t, err)

			out, custom, err := run(t, g, "q")
			require.NoError(t, err)
			require.Equal(t, []string{"Search broadly"}, out.Plan.Get())
			require.Equal(t, map[string]string{"step_1: Search broadly": "found"}, out.Findings.Get())
			require.Equal(t, []planexec.PlanMade{{Iteration: 1, MaxIterations: 10, Steps: []string{"Search broadly"}, Fallback: true}},
				only[planexec.PlanMade](custom))
		})
	}
}

func TestPlannerAcceptsFencedJSONAfterProse(t *testing.T) {
	model := llm.NewScripted(
		text("Here is the plan:\n```json\n[\"Find A\", \" \", \"Find B\"]\n```\nGood luck."),
		text("found"), decide(planexec.Finish, "ok"), text("answer"),
	)
	g, err := planexec.New(model, nil)
	require.NoError(t, err)

	out, _, err := run(t, g, "q")
	require.NoError(t, err)
	require.Equal(t, []string{"Find A", "Find B"}, out.Plan.Get())
}

func TestRefineryFallsBackOnUnusableJSON(t *testing.T) {
	tests := []struct {
		name   string
		plan   []string
		answer string
		want   planexec.Decision // of the first refinery
	}{
		{"prose, steps left: continue", []string{"Find A", "Find B"}, "Looks good to me.", planexec.Continue},
		{"prose, no step left: finish", []string{"Find A"}, "Looks good to me.", planexec.Finish},
		{"unknown decision, steps left: continue", []string{"Find A", "Find B"}, `{"decision": "MAYBE"}`, planexec.Continue},
		{"unknown decision, no step left: finish", []string{"Find A"}, `{"decision": "MAYBE"}`, planexec.Finish},
		{"array, no step left: finish", []string{"Find A"}, `["FINISH"]`, planexec.Finish},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := []llm.Reply{plan(tt.plan...), text("found"), text(tt.answer)}
			wantIterations := 1
			if tt.want == planexec.Continue {
				replies = append(replies, plan("Find more"), text("more"), decide(planexec.Finish, "ok"))
				wantIterations = 2
			}
			model := llm.NewScripted(append(replies, text("answer"))...)
			g, err := planexec.New(model, nil)
			require.NoError(t, err)

			out, custom, err := run(t, g, "q")
			require.NoError(t, err)
			require.Zero(t, model.Remaining())
			require.Equal(t, wantIterations, out.IterationCount.Get())
			first := only[planexec.DecisionMade](custom)[0]
			require.Equal(t, tt.want, first.Decision)
			require.True(t, first.Fallback)
		})
	}
}

func TestRefineryAcceptsADecisionInAnyCaseInsideFences(t *testing.T) {
	model := llm.NewScripted(plan("Find A", "Find B"), text("found"),
		text("```json\n{\"decision\": \"finish\", \"reason\": \"A suffices\"}\n```"), text("answer"))
	g, err := planexec.New(model, nil)
	require.NoError(t, err)

	out, custom, err := run(t, g, "q")
	require.NoError(t, err)
	require.Equal(t, "answer", out.Response.Get())
	require.Equal(t, []planexec.DecisionMade{{Decision: planexec.Finish, Reason: "A suffices"}}, only[planexec.DecisionMade](custom))
}

// cycles returns the replies of n cycles whose refinery always asks to
// continue, except the last, whose refinery the iteration limit forces to
// finish without a model call, and the synthesizer's reply.
func cycles(n int) []llm.Reply {
	var replies []llm.Reply
	for i := 1; i <= n; i++ {
		replies = append(replies, plan(fmt.Sprintf("Find %d", i)), text(fmt.Sprintf("found %d", i)))
		if i < n {
			replies = append(replies, decide(planexec.Continue, "more"))
		}
	}
	return append(replies, text("answer"))
}

func TestMaxIterationsForcesFinishAtTheLimit(t *testing.T) {
	tests := []struct {
		name string
		opts []planexec.Option
		n    int
	}{
		{"one", []planexec.Option{planexec.WithMaxIterations(1)}, 1},
		{"three", []planexec.Option{planexec.WithMaxIterations(3)}, 3},
		{"default", nil, planexec.DefaultMaxIterations},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := llm.NewScripted(cycles(tt.n)...)
			g, err := planexec.New(model, nil, tt.opts...)
			require.NoError(t, err)

			out, custom, err := run(t, g, "q")
			require.NoError(t, err, "the refinery of cycle %d must not call the model", tt.n)
			require.Zero(t, model.Remaining(), "the run ended before cycle %d", tt.n)
			require.Equal(t, tt.n, out.IterationCount.Get())
			require.Equal(t, "answer", out.Response.Get())
			decisions := only[planexec.DecisionMade](custom)
			require.Len(t, decisions, tt.n)
			require.Equal(t, planexec.DecisionMade{
				Decision: planexec.Finish, Forced: true,
				Reason: fmt.Sprintf("reached the limit of %d iterations", tt.n),
			}, decisions[tt.n-1])
		})
	}
}

func TestMaxExecutorStepsEndsTheStepAtTheLimit(t *testing.T) {
	tests := []struct {
		name string
		opts []planexec.Option
		n    int
	}{
		{"one", []planexec.Option{planexec.WithMaxExecutorSteps(1)}, 1},
		{"two", []planexec.Option{planexec.WithMaxExecutorSteps(2)}, 2},
		{"default", nil, planexec.DefaultMaxExecutorSteps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lib library
			replies := []llm.Reply{plan("Dig")}
			var wantCalls, wantFinding []string
			for i := 1; i <= tt.n; i++ { // the model never stops asking
				topic := fmt.Sprintf("t%d", i)
				replies = append(replies, lookup(fmt.Sprintf("c%d", i), topic))
				if i < tt.n {
					wantCalls = append(wantCalls, topic)
					wantFinding = append(wantFinding, "fact about "+topic)
				}
			}
			model := llm.NewScripted(append(replies, decide(planexec.Finish, "ok"), text("answer"))...)
			g, err := planexec.New(model, []tools.Tool{lib.tool()}, tt.opts...)
			require.NoError(t, err)

			out, _, err := run(t, g, "q")
			require.NoError(t, err)
			require.Zero(t, model.Remaining())
			require.Equal(t, wantCalls, lib.got(), "the call of the last allowed answer is not run")
			require.Equal(t, tt.n, out.ExecutorCallCount.Get())
			want := planexec.NoResults
			if len(wantFinding) > 0 {
				want = strings.Join(wantFinding, "\n---\n")
			}
			require.Equal(t, map[string]string{"step_1: Dig": want}, out.Findings.Get())
		})
	}
}

func TestRecursionLimitBoundsTheSupersteps(t *testing.T) {
	// One cycle without tools runs planner, setup_executor, executor,
	// aggregate, refinery and synthesizer in supersteps 1 to 6, after the
	// input's: it needs a recursion limit of 7.
	oneCycle := []llm.Reply{plan("Find A"), text("found"), decide(planexec.Finish, "ok"), text("answer")}
	tests := []struct {
		name      string
		limit     int
		wantNodes []string // the last nodes run, when the limit stops the run
	}{
		{"enough", 7, nil},
		{"one short", 6, []string{planexec.SynthesizerNode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := planexec.New(llm.NewScripted(oneCycle...), nil, planexec.WithRecursionLimit(tt.limit))
			require.NoError(t, err)

			out, _, err := run(t, g, "q")
			if tt.wantNodes == nil {
				require.NoError(t, err)
				require.Equal(t, "answer", out.Response.Get())
				return
			}
			re, ok := errors.AsType[*graph.RecursionError](err)
			require.True(t, ok, "got %v", err)
			require.Equal(t, &graph.RecursionError{Limit: tt.limit, LastNodes: tt.wantNodes}, re)
		})
	}
}

func TestRecursionLimitDefaultsTo150(t *testing.T) {
	// A cycle without tools takes 5 supersteps after the input's: the
	// 30th cycle's refinery runs in superstep 150, the last the limit
	// allows, and the run stops before the 31st cycle's planner.
	var replies []llm.Reply
	for range 30 {
		replies = append(replies, plan("Find more"), text("found"), decide(planexec.Continue, "more"))
	}
	model := llm.NewScripted(replies...)
	g, err := planexec.New(model, nil, planexec.WithMaxIterations(50))
	require.NoError(t, err)

	_, _, err = run(t, g, "q")
	re, ok := errors.AsType[*graph.RecursionError](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, &graph.RecursionError{Limit: planexec.DefaultRecursionLimit, LastNodes: []string{planexec.RefineryNode}}, re)
	require.Zero(t, model.Remaining())
}

// messageOps decodes the write of the Messages field of an update: the
// messages appended and the IDs removed, in order.
func messageOps(t *testing.T, w graph.Writes) (appended []state.Message, removed []string) {
	t.Helper()
	raw, ok := w["Messages"]
	if !ok {
		return nil, nil
	}
	var write struct {
		Updates []struct {
			M         *state.Message `json:"m"`
			Remove    string         `json:"remove"`
			RemoveAll bool           `json:"remove_all"`
		} `json:"updates"`
	}
	require.NoError(t, json.Unmarshal(raw, &write))
	for _, op := range write.Updates {
		require.False(t, op.RemoveAll, "messages are removed by ID, not all at once")
		switch {
		case op.M != nil:
			appended = append(appended, *op.M)
		case op.Remove != "":
			removed = append(removed, op.Remove)
		}
	}
	return appended, removed
}

func TestNoExecutorMessageSurvivesItsStep(t *testing.T) {
	var lib library
	model := llm.NewScripted(
		plan("Find A"), lookup("c1", "a"), text("A found."), decide(planexec.Continue, "B missing"),
		plan("Find B"), text("B found."), decide(planexec.Finish, "ok"),
		text("answer"),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()})
	require.NoError(t, err)

	// A message left over by an earlier, failed run is removed too.
	in := planexec.Input("q")
	in.Messages.Append(state.AI("stale").WithID("stale-1"))

	live := map[string]bool{"stale-1": true} // the IDs in the Messages field
	var removedBy []string                   // "node: ID"
	for ev, err := range g.Stream(t.Context(), in, graph.WithStreamModes(graph.ModeUpdates|graph.ModeValues)) {
		require.NoError(t, err)
		if ev.Mode == graph.ModeValues {
			var ids []string
			for _, m := range ev.Payload.(planexec.State).Messages.List() {
				ids = append(ids, m.ID)
			}
			var want []string
			for id := range live {
				want = append(want, id)
			}
			require.ElementsMatch(t, want, ids, "step %d", ev.Step)
			continue
		}
		appended, removed := messageOps(t, ev.Writes)
		for _, id := range removed {
			require.True(t, live[id], "%s removes %s, which is not there", ev.Node, id)
			delete(live, id)
			removedBy = append(removedBy, ev.Node+": "+id)
		}
		for _, m := range appended {
			live[m.ID] = true
		}
		switch ev.Node {
		case planexec.AggregateNode:
			require.Empty(t, live, "aggregate leaves no executor message")
		case planexec.SetupExecutorNode:
			require.Len(t, live, 2, "setup_executor leaves only its system and human messages")
		}
	}
	require.Empty(t, live)
	// setup_executor removed the stale message; aggregate removed the 5
	// messages of step 1 (system, human, AI with a call, tool, AI) and
	// the 3 of step 2 (system, human, AI).
	counts := map[string]int{}
	for _, r := range removedBy {
		node, _, _ := strings.Cut(r, ": ")
		counts[node]++
	}
	require.Equal(t, map[string]int{planexec.SetupExecutorNode: 1, planexec.AggregateNode: 8}, counts)
	require.Contains(t, removedBy, planexec.SetupExecutorNode+": stale-1")

	// The second step's executor saw nothing of the first's.
	require.Empty(t, cmp.Diff([]string{"system", "human"}, roles(model.Calls()[5].Messages)))
}

func roles(msgs []state.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role))
	}
	return out
}

func TestToolErrorsBecomeToolMessages(t *testing.T) {
	var lib library
	model := llm.NewScripted(
		plan("Find it"), lookup("c1", "broken"),
		llm.Reply{Text: "The lookup failed.", Expect: func(msgs []state.Message) error {
			rs := msgs[len(msgs)-1].ToolResults()
			if len(rs) != 1 || !strings.Contains(rs[0].Content, "the shelf is empty") {
				return fmt.Errorf("want the tool's error as its result, got %v", agenttest.Summary(msgs))
			}
			return nil
		}},
		decide(planexec.Finish, "ok"), text("answer"),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()})
	require.NoError(t, err)

	out, _, err := run(t, g, "q")
	require.NoError(t, err)
	require.Contains(t, out.Findings.Get()["step_1: Find it"], "the shelf is empty")
}

func TestModelErrorsFailTheRunWithTheNode(t *testing.T) {
	boom := errors.New("provider down")
	tests := []struct {
		name    string
		replies []llm.Reply
		node    string
	}{
		{"planner", []llm.Reply{{Err: boom}}, "planner"},
		{"executor", []llm.Reply{plan("A"), {Err: boom}}, "executor"},
		{"refinery", []llm.Reply{plan("A"), text("a"), {Err: boom}}, "refinery"},
		{"synthesizer", []llm.Reply{plan("A"), text("a"), decide(planexec.Finish, "ok"), {Err: boom}}, "synthesizer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := planexec.New(llm.NewScripted(tt.replies...), nil)
			require.NoError(t, err)
			_, _, err = run(t, g, "q")
			require.ErrorIs(t, err, boom)
			require.ErrorContains(t, err, "planexec: "+tt.node+": model call")
		})
	}
}

func TestEventsReportPlanStepsToolCallsAndFindings(t *testing.T) {
	var lib library
	model := llm.NewScripted(
		plan("Look up caches"), lookup("c1", "caches"), text("Caches keep entries."),
		decide(planexec.Finish, "enough"), text("answer"),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()})
	require.NoError(t, err)

	bus := events.NewBus()
	sub := bus.Subscribe(t.Context())
	stream := g.Stream(t.Context(), planexec.Input("q"), graph.WithStreamModes(events.StreamModes))
	require.NoError(t, events.Bridge(t.Context(), bus, "run-1", stream))
	bus.Close()

	var got []string
	for ev := range sub.Events() {
		switch p := ev.Data.(type) {
		case planexec.PlanMade, planexec.StepStarted, planexec.FindingRecorded, planexec.DecisionMade,
			events.ToolCall, events.ToolResult:
			got = append(got, fmt.Sprintf("%s %s %+v", ev.Node, p.EventKind(), p))
		}
	}
	require.Empty(t, cmp.Diff([]string{
		"planner planexec.plan {Iteration:1 MaxIterations:10 Steps:[Look up caches] Fallback:false}",
		"setup_executor planexec.step {Iteration:1 Index:1 Total:1 Step:Look up caches}",
		`executor tool_call {ID:c1 Name:lookup Args:{"topic":"caches"}}`,
		"tools tool_result {ID:c1 Name:lookup Result:fact about caches}",
		"aggregate planexec.finding {Key:step_1: Look up caches Text:fact about caches\n---\nCaches keep entries.}",
		"refinery planexec.decision {Decision:FINISH Reason:enough Forced:false Fallback:false}",
	}, got))
}

func TestCheckpointedThreadPausesResumesAndKeepsItsHistory(t *testing.T) {
	model := llm.NewScripted(
		plan("Find A"), text("A is 1."), decide(planexec.Finish, "ok"), text("A is 1."),
		llm.Reply{Text: `["Find B"]`, Expect: func(msgs []state.Message) error {
			if got := roles(msgs); !cmp.Equal(got, []string{"system", "human", "ai", "human"}) {
				return fmt.Errorf("the follow-up's planner should see the first turn, got %v", got)
			}
			return nil
		}},
		text("B is 2."), decide(planexec.Finish, "ok"), text("B is 2."),
	)
	g, err := planexec.New(model, nil, planexec.WithCompileOptions(
		graph.WithCheckpointer(checkpoint.NewMemory()),
		graph.WithInterruptBefore(planexec.SynthesizerNode),
	))
	require.NoError(t, err)
	thread := graph.WithThread("t1")

	_, err = g.Invoke(t.Context(), planexec.Input("What is A?"), thread)
	intr, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, []string{planexec.SynthesizerNode}, intr.Before)

	out, err := g.Resume(t.Context(), graph.Command[planexec.State]{}, thread)
	require.NoError(t, err)
	require.Equal(t, "A is 1.", out.Response.Get())

	_, err = g.Invoke(t.Context(), planexec.Input("And B?"), thread)
	require.ErrorAs(t, err, &intr)
	out, err = g.Resume(t.Context(), graph.Command[planexec.State]{}, thread)
	require.NoError(t, err)
	require.Equal(t, "B is 2.", out.Response.Get())
	require.Equal(t, map[string]string{"step_1: Find B": "B is 2."}, out.Findings.Get(), "a new question starts with no findings")
	require.Empty(t, cmp.Diff([]string{"human: What is A?", "ai: A is 1.", "human: And B?", "ai: B is 2."},
		agenttest.Summary(out.ChatHistory.List())))
}

func TestNewRejectsInvalidConfiguration(t *testing.T) {
	model := llm.NewScripted()
	dup := tools.New("lookup", "dup", func(context.Context, lookupArgs) (string, error) { return "", nil })
	var lib library
	tests := []struct {
		name  string
		model llm.Model
		ts    []tools.Tool
		opts  []planexec.Option
		check func(t *testing.T, err error)
	}{
		{"nil model", nil, nil, nil, func(t *testing.T, err error) { require.ErrorIs(t, err, planexec.ErrNilModel) }},
		{"zero iterations", model, nil, []planexec.Option{planexec.WithMaxIterations(0)}, func(t *testing.T, err error) {
			require.Equal(t, &planexec.OptionError{Option: "WithMaxIterations", Value: 0}, err)
		}},
		{"negative executor steps", model, nil, []planexec.Option{planexec.WithMaxExecutorSteps(-1)}, func(t *testing.T, err error) {
			require.Equal(t, &planexec.OptionError{Option: "WithMaxExecutorSteps", Value: -1}, err)
		}},
		{"zero recursion limit", model, nil, []planexec.Option{planexec.WithRecursionLimit(0)}, func(t *testing.T, err error) {
			require.Equal(t, &planexec.OptionError{Option: "WithRecursionLimit", Value: 0}, err)
		}},
		{"duplicate tools", model, []tools.Tool{lib.tool(), dup}, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, "planexec: ")
			require.ErrorContains(t, err, "lookup")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := planexec.New(tt.model, tt.ts, tt.opts...)
			require.Nil(t, g)
			tt.check(t, err)
		})
	}
}

func TestMaxFindingLengthCutsTheMiddleOfAFinding(t *testing.T) {
	type bulkArgs struct {
		N int `json:"n"`
	}
	bulk := tools.New("bulk", "Return n characters.", func(_ context.Context, a bulkArgs) (string, error) {
		return "HEAD" + strings.Repeat("x", a.N) + "TAIL", nil
	})
	whole := "HEAD" + strings.Repeat("x", 10_000) + "TAIL\n---\nThe step's answer."
	tests := []struct {
		name string
		opts []planexec.Option
		want string
	}{
		{"no limit by default", nil, whole},
		{"a limit of 0 keeps it whole", []planexec.Option{planexec.WithMaxFindingLength(0)}, whole},
		{"a limit cuts the middle", []planexec.Option{planexec.WithMaxFindingLength(100)}, tools.Truncate(whole, 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := llm.NewScripted(plan("Fetch"),
				llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "bulk", `{"n":10000}`)}},
				text("The step's answer."), decide(planexec.Finish, "ok"), text("answer"))
			g, err := planexec.New(model, []tools.Tool{bulk}, tt.opts...)
			require.NoError(t, err)

			out, custom, err := run(t, g, "q")
			require.NoError(t, err)
			require.Equal(t, map[string]string{"step_1: Fetch": tt.want}, out.Findings.Get())
			require.Equal(t, []planexec.FindingRecorded{{Key: "step_1: Fetch", Text: tt.want}}, only[planexec.FindingRecorded](custom))
			// The refinery and the synthesizer saw the finding as recorded.
			require.Contains(t, model.Calls()[3].Messages[0].Text(), tt.want)
			if tt.want != whole {
				require.True(t, strings.HasPrefix(tt.want, "HEAD"))
				require.True(t, strings.HasSuffix(tt.want, "The step's answer."))
				require.Contains(t, tt.want, "chars truncated")
			}
		})
	}
}

func TestMaxCallsOfTheToolsNodeBoundsTheCallsOfOneExecutorTurn(t *testing.T) {
	var lib library
	var calls []llms.ToolCall
	for i := range 12 {
		calls = append(calls, state.ToolCall(fmt.Sprint("c", i), "lookup", fmt.Sprintf(`{"topic":"t%d"}`, i)))
	}
	model := llm.NewScripted(
		plan("Look up everything"),
		llm.Reply{ToolCalls: calls},
		text("Looked up eight."),
		decide(planexec.Finish, "enough"),
		text("answer"),
	)
	g, err := planexec.New(model, []tools.Tool{lib.tool()}, planexec.WithToolNodeOptions(tools.WithMaxCalls(8)))
	require.NoError(t, err)

	_, _, err = run(t, g, "Everything?")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}, lib.got(), "each call is a task of its own; the first 8 run")
	var notRun []string
	for _, m := range model.Calls()[2].Messages {
		for _, r := range m.ToolResults() {
			if strings.HasPrefix(r.Content, "Error: not run: at most 8 tool calls") {
				notRun = append(notRun, r.ToolCallID)
			}
		}
	}
	require.Equal(t, []string{"c8", "c9", "c10", "c11"}, notRun)
}
