package goals_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

const harnessScript = `#!/usr/bin/env bash
if grep -qx ready done.txt 2>/dev/null; then
  echo "PASS: done.txt says ready"
else
  echo "FAIL: done.txt says ready: missing or wrong content"
  exit 1
fi
echo "PASS: nothing else"
`

// plannerReply is how a model typically answers the planner.
const plannerReply = "I'll check the file directly.\n\n```bash\n" + harnessScript + "```\n\nThe harness exits 1 until done.txt is ready."

const objective = "Create done.txt containing the word ready."

func aiEvalConfig(model llm.Model) goals.Config {
	return goals.Config{Eval: goals.EvalConfig{Objective: objective, Planner: model}}
}

func TestAIEvalWritesHarnessFromPlannerAndRunsIt(t *testing.T) {
	t.Parallel()
	model := llm.NewScripted(llm.Reply{Text: plannerReply})
	dir := project(t, map[string]string{"README.md": "# demo\nA demo project.\n", "main.go": "package main\n"})
	g := newGoal(t, goals.GoalAIEval, aiEvalConfig(model))

	res := check(t, g, dir)
	require.False(t, res.Achieved)
	require.Equal(t, "ai-eval: the harness exited with status 1; failed: done.txt says ready", res.Reason)
	require.Equal(t, []goals.Failure{{Name: "done.txt says ready", Output: "missing or wrong content"}}, res.Details.Failures)
	require.Equal(t, goals.DefaultHarness, res.Details.Harness)
	require.Equal(t, 1, res.Details.ExitCode)

	path := filepath.Join(dir, ".retrai", "eval_test.sh")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, harnessScript, string(data))

	calls := model.Calls()
	require.Len(t, calls, 1)
	msgs := calls[0].Messages
	require.Len(t, msgs, 2)
	require.Contains(t, msgs[0].Text(), `"FAIL: <check>: <what was wrong>"`)
	prompt := msgs[1].Text()
	for _, want := range []string{objective, "README.md", "main.go", "A demo project."} {
		require.Contains(t, prompt, want)
	}

	writeFiles(t, dir, map[string]string{"done.txt": "ready\n"})
	res = check(t, g, dir)
	require.True(t, res.Achieved, res.Reason)
	require.Equal(t, "ai-eval: the harness passed (2 checks)", res.Reason)
	require.Equal(t, 2, res.Details.Passed)
	require.Empty(t, res.Details.Failures)
	require.Len(t, model.Calls(), 1, "the harness is written once")
}

func TestAIEvalRestoresTamperedHarness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func(path string) error
		note   string
	}{
		{"modified", func(p string) error { return os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755) }, "the harness had been modified and was restored"},
		{"deleted", os.Remove, "the harness had been deleted and was restored"},
		{"made non-executable", func(p string) error { return os.Chmod(p, 0o644) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			g := newGoal(t, goals.GoalAIEval, aiEvalConfig(llm.NewScripted(llm.Reply{Text: plannerReply})))
			require.False(t, check(t, g, dir).Achieved)
			path := filepath.Join(dir, filepath.FromSlash(goals.DefaultHarness))
			require.NoError(t, tt.tamper(path))

			res := check(t, g, dir)
			require.False(t, res.Achieved, "the original harness still fails")
			want := "ai-eval: the harness exited with status 1; failed: done.txt says ready"
			if tt.note != "" {
				want += " (" + tt.note + ")"
			}
			require.Equal(t, want, res.Reason)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, harnessScript, string(data))
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
		})
	}
}

func TestAIEvalReplyWithoutCodeBlockIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := newGoal(t, goals.GoalAIEval, aiEvalConfig(llm.NewScripted(llm.Reply{Text: "Just check that done.txt exists."})))
	_, err := g.Check(context.Background(), goals.State{}, dir)
	require.ErrorIs(t, err, goals.ErrNoCodeBlock)
	_, statErr := os.Stat(filepath.Join(dir, ".retrai"))
	require.True(t, os.IsNotExist(statErr), "nothing is written")
}

func TestAIEvalPlannerErrorIsReturned(t *testing.T) {
	t.Parallel()
	boom := errors.New("rate limited")
	g := newGoal(t, goals.GoalAIEval, aiEvalConfig(llm.NewScripted(llm.Reply{Err: boom})))
	_, err := g.Check(context.Background(), goals.State{}, t.TempDir())
	require.ErrorIs(t, err, boom)
}

func TestAIEvalWithoutPlannerRunsExistingHarness(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"checks/accept.sh": "echo PASS: one\necho PASS: two\n"})
	cfg := goals.Config{Eval: goals.EvalConfig{Objective: objective, Harness: "checks/accept.sh"}}
	res := check(t, newGoal(t, goals.GoalAIEval, cfg), dir)
	require.True(t, res.Achieved, res.Reason)
	require.Equal(t, 2, res.Details.Passed)
	require.Equal(t, "checks/accept.sh", res.Details.Harness)
}

func TestAIEvalWithoutPlannerOrHarnessIsASettingError(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalAIEval, goals.Config{Eval: goals.EvalConfig{Objective: objective}})
	_, err := g.Check(context.Background(), goals.State{}, t.TempDir())
	var se *goals.SettingError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "Eval.Planner", se.Setting)
}

func TestAIEvalHarnessFailingWithoutFailLinesIsReportedAsOneFailure(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"accept.sh": "echo 'cannot build' >&2\nexit 2\n"})
	cfg := goals.Config{Eval: goals.EvalConfig{Objective: objective, Harness: "accept.sh"}}
	res := check(t, newGoal(t, goals.GoalAIEval, cfg), dir)
	require.False(t, res.Achieved)
	require.Equal(t, "ai-eval: the harness exited with status 2", res.Reason)
	require.Equal(t, []goals.Failure{{Name: "accept.sh", Output: "cannot build\n"}}, res.Details.Failures)
}

func TestPlanHarnessReturnsScriptWithShebang(t *testing.T) {
	t.Parallel()
	model := llm.NewScripted(llm.Reply{
		Text: "```sh\necho PASS: x\n```",
		Expect: func(msgs []state.Message) error {
			if !strings.Contains(msgs[len(msgs)-1].Text(), "Objective:\nship it") {
				return fmt.Errorf("objective missing from %q", msgs[len(msgs)-1].Text())
			}
			return nil
		},
	})
	script, err := goals.PlanHarness(context.Background(), model, t.TempDir(), "ship it")
	require.NoError(t, err)
	require.Equal(t, "#!/usr/bin/env bash\necho PASS: x\n", script)
}
