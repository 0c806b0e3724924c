package codur_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/codur"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

func TestTextualPrePlanResolvesFileOperationsWithoutModelCalls(t *testing.T) {
	cases := []struct {
		task  string
		check func(t *testing.T, dir string)
	}{
		{"move a.txt to sub/b.txt", func(t *testing.T, dir string) {
			require.Equal(t, "alpha\n", readFile(t, dir, "sub/b.txt"))
			require.NoFileExists(t, filepath.Join(dir, "a.txt"))
		}},
		{"copy a.txt to c.txt", func(t *testing.T, dir string) { require.Equal(t, "alpha\n", readFile(t, dir, "c.txt")) }},
		{"delete the file a.txt", func(t *testing.T, dir string) { require.NoFileExists(t, filepath.Join(dir, "a.txt")) }},
		{`replace "alpha" with "omega" in a.txt`, func(t *testing.T, dir string) { require.Equal(t, "omega\n", readFile(t, dir, "a.txt")) }},
		{`write 'hi there' to notes/n.txt`, func(t *testing.T, dir string) { require.Equal(t, "hi there", readFile(t, dir, "notes/n.txt")) }},
		{"read a.txt", func(t *testing.T, dir string) {}},
	}
	for _, c := range cases {
		t.Run(c.task, func(t *testing.T) {
			dir, _ := workspace(t, map[string]string{"a.txt": "alpha\n"})
			model := llm.NewScripted()
			r := run(t, build(t, model, dir), codur.Input(c.task, false))
			require.NoError(t, r.err)
			require.Empty(t, model.Calls(), "the fast path calls no model")
			require.Equal(t, codur.PhaseTextual, r.out.DecidedBy.Get())
			require.NotContains(t, r.out.FinalResponse.Get(), "error:")
			c.check(t, dir)
		})
	}
}

func TestTextualPrePlanAnswersGreetingsWithoutModelCalls(t *testing.T) {
	dir, _ := workspace(t, nil)
	model := llm.NewScripted()
	r := run(t, build(t, model, dir), codur.Input("Hello there!", false))
	require.NoError(t, r.err)
	require.Empty(t, model.Calls())
	require.Equal(t, []string{"textual_pre_plan:end"}, r.phases())
	require.Contains(t, r.out.FinalResponse.Get(), "Hello")
}

func TestTextualPrePlanDelegatesToANamedAgent(t *testing.T) {
	dir, _ := workspace(t, nil)
	planner := llm.NewScripted()
	helper := llm.NewScripted(text("done by the helper"))
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: "llm:helper"}, &codur.ModelAgent{Model: helper}))
	ws, _ := tools.NewWorkspace(dir)
	g, err := codur.New(planner, reg, codur.DefaultTools(ws), codur.WithWorkspace(dir), codur.WithDefaultAgent("llm:helper"))
	require.NoError(t, err)
	r := run(t, g, codur.Input("llm:helper explain the layout", false))
	require.NoError(t, r.err)
	require.Empty(t, planner.Calls())
	require.Len(t, helper.Calls(), 1)
	require.Equal(t, "done by the helper", r.out.FinalResponse.Get())
}

func TestTextualPrePlanLeavesUnknownWordingToTheModel(t *testing.T) {
	dir, _ := workspace(t, nil)
	model := llm.NewScripted(
		text(`{"task_type": "explanation", "confidence": 0.95, "action": "respond", "response": "It is a demo."}`))
	r := run(t, build(t, model, dir), codur.Input("what is this project", false))
	require.NoError(t, r.err)
	require.Len(t, model.Calls(), 1)
	require.Equal(t, []string{"textual_pre_plan:continue", "llm_pre_plan:end"}, r.phases())
	require.Equal(t, "It is a demo.", r.out.FinalResponse.Get())
}

func TestPrePlanActsOnASureFileOperation(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"conf/app.ini": "[s]\nk = v\n"})
	model := llm.NewScripted(text("Sure:\n```json\n" +
		`{"task_type": "file_operation", "confidence": 0.95, "action": "tool", "tool_calls": [{"tool": "copy_file", "args": {"src": "conf/app.ini", "dst": "app.ini"}}]}` + "\n```"))
	r := run(t, build(t, model, dir), codur.Input("put a duplicate of conf/app.ini at the top", false))
	require.NoError(t, r.err)
	require.Len(t, model.Calls(), 1)
	require.Equal(t, codur.PhasePrePlan, r.out.DecidedBy.Get())
	require.Equal(t, "[s]\nk = v\n", readFile(t, dir, "app.ini"))
}

func TestPrePlanFallsThrough(t *testing.T) {
	cases := []struct {
		name, task, answer string
		fallback           bool
	}{
		{"low confidence", "tidy the docs folder", `{"task_type": "file_operation", "confidence": 0.89, "action": "tool", "tool_calls": [{"tool": "file_list", "args": {}}]}`, false},
		{"code change by type", "tidy the docs folder", `{"task_type": "code_change", "confidence": 1, "action": "respond", "response": "no"}`, false},
		{"code change by wording", "fix the docs folder", `{"task_type": "file_operation", "confidence": 1, "action": "respond", "response": "no"}`, false},
		{"bad JSON", "tidy the docs folder", `I would plan this.`, true},
		{"unknown tool", "tidy the docs folder", `{"task_type": "file_operation", "confidence": 1, "action": "tool", "tool_calls": [{"tool": "rm_rf", "args": {}}]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := workspace(t, nil)
			model := llm.NewScripted(text(c.answer), text(`{"action": "respond", "response": "planned"}`))
			r := run(t, build(t, model, dir), codur.Input(c.task, false))
			require.NoError(t, r.err)
			require.Len(t, model.Calls(), 2, "the full planning ran")
			require.Equal(t, codur.PhasePlan, r.out.DecidedBy.Get())
			require.Equal(t, "planned", r.out.FinalResponse.Get())
			require.Equal(t, codur.ActionContinue, r.decisions[1].Action)
			require.Equal(t, c.fallback, r.decisions[1].Fallback)
		})
	}
}

func TestPlanFallsBackToTheDefaultAgent(t *testing.T) {
	cases := []struct{ name, plan string }{
		{"not JSON", "Let the agent do it."},
		{"unknown agent", `{"action": "delegate", "agent": "agent:nobody"}`},
		{"unknown action", `{"action": "dance"}`},
		{"tool without calls", `{"action": "tool", "tool_calls": []}`},
		{"truncated JSON", `{"action": "delegate", "agent": "llm:def`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := workspace(t, nil)
			model := llm.NewScripted(preCode, text(c.plan), text("agent answer"))
			r := run(t, build(t, model, dir), codur.Input("refactor the module", false))
			require.NoError(t, r.err)
			require.Len(t, model.Calls(), 3)
			plan := r.decisions[2]
			require.Equal(t, codur.PhasePlan, plan.Phase)
			require.True(t, plan.Fallback)
			require.Equal(t, codur.ActionDelegate, plan.Action)
			require.Equal(t, codur.DefaultAgent, r.out.SelectedAgent.Get())
			require.Equal(t, "agent answer", r.out.FinalResponse.Get())
		})
	}
}

func TestPlanRunsToolCalls(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": `print("Hello, Wrld")` + "\n"})
	model := llm.NewScripted(preCode,
		text(`{"action": "tool", "tool_calls": [{"tool": "replace_in_file", "args": {"path": "main.py", "old": "Wrld", "new": "World"}}]}`))
	r := run(t, build(t, model, dir), codur.Input("update the greeting", false))
	require.NoError(t, r.err)
	require.Equal(t, []string{"textual_pre_plan:continue", "llm_pre_plan:continue", "llm_plan:tool", "review:end"}, r.phases())
	require.Equal(t, `print("Hello, World")`+"\n", readFile(t, dir, "main.py"))
}

func TestToolLoopStopsAtItsRoundLimit(t *testing.T) {
	for _, limit := range []int{1, 2, codur.DefaultMaxToolRounds} {
		t.Run(strings.Repeat("r", limit), func(t *testing.T) {
			dir, _ := workspace(t, map[string]string{"a.txt": "x"})
			replies := []llm.Reply{preCode, planDelegate}
			for range limit + 1 {
				replies = append(replies, nativeCall("file_read", `{"path": "a.txt"}`))
			}
			model := llm.NewScripted(replies...)
			opts := []codur.Option{}
			if limit != codur.DefaultMaxToolRounds {
				opts = append(opts, codur.WithMaxToolRounds(limit))
			}
			r := run(t, build(t, model, dir, opts...), codur.Input("refactor a.txt", false))
			require.NoError(t, r.err)
			require.Equal(t, 0, model.Remaining(), "the agent was called once more than the rounds")
			require.Len(t, r.rounds, limit+1)
			for i, round := range r.rounds {
				require.Equal(t, i == limit, round.LimitReached, "round %d", i+1)
			}
		})
	}
}

func TestToolLoopFeedsResultsBack(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"a.txt": "secret-42"})
	model := llm.NewScripted(preCode, planDelegate,
		text(`{"tool": "read_file", "args": {"file": "a.txt"}}`),
		llm.Reply{Text: "it says 42", Expect: func(msgs []state.Message) error {
			last := msgs[len(msgs)-1].Text()
			if !strings.Contains(last, "secret-42") {
				return errors.New("the tool result is not in the last message: " + last)
			}
			return nil
		}})
	r := run(t, build(t, model, dir), codur.Input("refactor a.txt", false))
	require.NoError(t, r.err)
	require.Equal(t, "it says 42", r.out.FinalResponse.Get())
	require.Equal(t, codur.FormatJSON, r.rounds[0].Format)
}

func TestIterationLimitEndsTheRunAtItsBoundary(t *testing.T) {
	for _, limit := range []int{1, 2, codur.DefaultMaxIterations} {
		t.Run(strings.Repeat("i", limit), func(t *testing.T) {
			dir, _ := workspace(t, map[string]string{"main.py": "print('no')\n", "expected.txt": "yes\n"})
			v, err := codur.DetectVerifier(dir)
			require.NoError(t, err)
			replies := []llm.Reply{preCode}
			for range limit {
				replies = append(replies, planDelegate, text("I tried."))
			}
			model := llm.NewScripted(replies...)
			opts := []codur.Option{codur.WithVerifier(v), codur.WithRepairBudget(0)}
			if limit != codur.DefaultMaxIterations {
				opts = append(opts, codur.WithMaxIterations(limit))
			}
			r := run(t, build(t, model, dir, opts...), codur.Input("fix main.py", false))
			require.NoError(t, r.err)
			require.Equal(t, limit, r.out.Iterations.Get())
			require.Equal(t, 0, model.Remaining())
			require.False(t, r.out.Verified.Get())
			require.Len(t, r.out.Failures.Get(), limit)
			require.Contains(t, r.out.FinalResponse.Get(), "Gave up")
		})
	}
}

func TestRecursionLimitAtItsBoundary(t *testing.T) {
	// Two iterations through an agent take 2 × 6 supersteps, and the
	// graph counts the input as a step too.
	const steps = 2*6 + 1
	dir, _ := workspace(t, map[string]string{"main.py": "print('no')\n", "expected.txt": "yes\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	model := llm.NewScripted(preCode, planDelegate, text("a"), planDelegate, text("b"))
	g := build(t, model, dir, codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithMaxIterations(2), codur.WithRecursionLimit(steps))
	r := run(t, g, codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.Equal(t, 2, r.out.Iterations.Get())

	// One below cannot hold the iterations: New says so.
	ws, err := tools.NewWorkspace(dir)
	require.NoError(t, err)
	reg := codur.NewRegistry()
	require.NoError(t, reg.Register(codur.AgentInfo{Ref: codur.DefaultAgent}, &codur.ModelAgent{Model: model}))
	_, err = codur.New(model, reg, codur.DefaultTools(ws), codur.WithMaxIterations(2), codur.WithRecursionLimit(steps-1))
	var le *codur.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, codur.LimitError{RecursionLimit: steps - 1, MaxIterations: 2, Needed: steps}, *le)

	// A recursion limit alone still stops a run at its boundary.
	g = build(t, llm.NewScripted(preCode, planDelegate, text("a"), planDelegate, text("b")), dir,
		codur.WithVerifier(v), codur.WithRepairBudget(0), codur.WithRecursionLimit(steps-1))
	r = run(t, g, codur.Input("fix main.py", false))
	var re *graph.RecursionError
	require.ErrorAs(t, r.err, &re)
	require.Equal(t, 300, codur.DefaultRecursionLimit)
}

func TestReviewLoopsWithTheVerificationMessage(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "print(1)\n", "expected.txt": "2\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	var second []string
	model := llm.NewScripted(preCode, planDelegate, text("no change"),
		llm.Reply{Text: `{"action": "delegate", "agent": "llm:default"}`, Expect: func(msgs []state.Message) error {
			for _, m := range msgs {
				second = append(second, m.Text())
			}
			return nil
		}},
		nativeCall("file_write", `{"path": "main.py", "content": "print(2)\n"}`), text("fixed"))
	r := run(t, build(t, model, dir, codur.WithVerifier(v), codur.WithRepairBudget(0)), codur.Input("fix main.py", false))
	require.NoError(t, r.err)
	require.True(t, r.out.Verified.Get())
	require.Equal(t, 2, r.out.Iterations.Get())
	joined := strings.Join(second, "\n")
	for _, part := range []string{codur.VerificationHeader, "=== Expected Output ===\n2", "=== Actual Output ===\n1", "=== Current Implementation (main.py) ===", "=== Action ==="} {
		require.Contains(t, joined, part)
	}
}

func TestVerifierIgnoresARewrittenExpectedFile(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"main.py": "print(1)\n", "expected.txt": "2\n"})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("1\n"), 0o644))
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.False(t, res.Passed)
}

func TestDecisionEventsNameEachPhase(t *testing.T) {
	dir, _ := workspace(t, nil)
	model := llm.NewScripted(preCode, planDelegate, text("ok"))
	r := run(t, build(t, model, dir), codur.Input("implement it", false))
	require.NoError(t, r.err)
	require.Empty(t, cmp.Diff([]string{"textual_pre_plan:continue", "llm_pre_plan:continue", "llm_plan:delegate", "delegate:delegate", "review:end"}, r.phases()))
}

func TestTextualPrePlanNeedsPathsThatNameFiles(t *testing.T) {
	for _, task := range []string{
		"remove the bug",          // "bug" is not a file of the workspace
		"delete missing.txt",      // no such file
		"move ghost.txt to b.txt", // no such file
		"read ../outside.txt",     // leaves the workspace
		"write 'x' to notes",      // a destination that does not look like a path
	} {
		t.Run(task, func(t *testing.T) {
			dir, _ := workspace(t, map[string]string{"a.txt": "alpha\n"})
			model := llm.NewScripted(text(`{"task_type": "other", "confidence": 0.1, "action": "plan"}`), text(`{"action": "respond", "response": "planned"}`))
			r := run(t, build(t, model, dir), codur.Input(task, false))
			require.NoError(t, r.err)
			require.Equal(t, codur.ActionContinue, r.decisions[0].Action, "the textual phase is not sure")
			require.Equal(t, "planned", r.out.FinalResponse.Get())
		})
	}
}

func TestVerifiedProgramDoesNotSeeSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("CODUR_VISIBLE", "yes")
	dir, _ := workspace(t, map[string]string{
		"main.py":      "import os\nprint(os.environ.get('OPENAI_API_KEY', 'none'), os.environ.get('CODUR_VISIBLE'))\n",
		"expected.txt": "none yes\n",
	})
	v, err := codur.DetectVerifier(dir)
	require.NoError(t, err)
	// Only the variables named pass; a secret never through a pattern.
	v.RunOptions = []tools.Option{tools.WithEnv("CODUR_*", "OPENAI*")}
	res, err := v.Run(t.Context())
	require.NoError(t, err)
	require.True(t, res.Passed, "output %q", res.Actual)
}

func TestToolOutputsKeptAfterTheLoopAreClipped(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"big.txt": strings.Repeat("x", 10000)})
	var seen string
	model := llm.NewScripted(preCode, planDelegate,
		nativeCall("file_read", `{"path": "big.txt"}`),
		llm.Reply{Text: "read it", Expect: func(msgs []state.Message) error {
			seen = msgs[len(msgs)-1].Text()
			return nil
		}})
	r := run(t, build(t, model, dir), codur.Input("refactor big.txt", false))
	require.NoError(t, r.err)
	require.Greater(t, len(seen), 10000, "the agent saw the whole output in its loop")
	var kept string
	for _, m := range r.out.Messages.List() {
		if strings.HasPrefix(m.Text(), "Tool results of your last attempt") {
			kept = m.Text()
		}
	}
	require.Contains(t, kept, "more characters]")
	require.Less(t, len(kept), 3000)
}

func TestToolCallExtractionByTheModel(t *testing.T) {
	dir, _ := workspace(t, map[string]string{"a.txt": "secret-42"})
	model := llm.NewScripted(preCode, planDelegate,
		text("First I will use read_file on a.txt to see it."),
		text(`{"tool_calls": [{"tool": "read_file", "args": {"path": "a.txt"}}]}`),
		text("It says secret-42; nothing to fix."))
	r := run(t, build(t, model, dir, codur.WithToolCallExtraction(true)), codur.Input("refactor a.txt", false))
	require.NoError(t, r.err)
	require.Equal(t, 0, model.Remaining())
	require.Equal(t, codur.FormatExtracted, r.rounds[0].Format)
	require.Equal(t, []string{"file_read"}, r.rounds[0].Tools)
	require.Equal(t, "It says secret-42; nothing to fix.", r.out.FinalResponse.Get())

	// Off by default, and never asked when the answer names no tool.
	for _, c := range []struct {
		answer string
		opts   []codur.Option
	}{
		{"I would use read_file, but I am done.", nil},
		{"All done, nothing to call.", []codur.Option{codur.WithToolCallExtraction(true)}},
	} {
		model := llm.NewScripted(preCode, planDelegate, text(c.answer))
		r := run(t, build(t, model, dir, c.opts...), codur.Input("refactor a.txt", false))
		require.NoError(t, r.err)
		require.Len(t, model.Calls(), 3, c.answer)
	}
}
