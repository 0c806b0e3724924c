package goals_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

func requireMake(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not on PATH")
	}
}

func TestMakeTestAchievedWhenTargetSucceeds(t *testing.T) {
	t.Parallel()
	requireMake(t)
	dir := project(t, map[string]string{"Makefile": ".PHONY: test\ntest:\n\t@echo all good\n"})
	res := check(t, newGoal(t, goals.GoalMakeTest, goals.Config{}), dir)
	want := goals.Result{
		Achieved: true,
		Reason:   "make-test: make test exited 0 (no test counts recognised in its output)",
		Details:  goals.Details{Command: "make test", Output: "all good\n"},
	}
	require.Empty(t, cmp.Diff(want, res, cmpIgnoreDuration))
}

func TestMakeTestNotAchievedWhenTargetFails(t *testing.T) {
	t.Parallel()
	requireMake(t)
	dir := project(t, map[string]string{"Makefile": "test:\n\t@echo checking\n\t@echo 'assertion failed' >&2; exit 1\n"})
	res := check(t, newGoal(t, goals.GoalMakeTest, goals.Config{}), dir)
	require.False(t, res.Achieved)
	require.Equal(t, "make-test: make test exited with status 2", res.Reason)
	require.Equal(t, 2, res.Details.ExitCode, "make exits 2 when a recipe fails")
	require.Equal(t, 1, res.Details.Failed)
	require.Equal(t, "make test", res.Details.Failures[0].Name)
	require.Contains(t, res.Details.Failures[0].Output, "assertion failed")
	require.Contains(t, res.Details.Output, "checking\n")
}

func TestShellGoalAchievedWhenCommandExitsZero(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"input.txt": "hello\n"})
	res := check(t, newGoal(t, goals.GoalShell, goals.Config{Command: "grep -q hello input.txt && echo found"}), dir)
	want := goals.Result{
		Achieved: true,
		Reason:   "shell: grep -q hello input.txt && echo found exited 0",
		Details:  goals.Details{Command: "grep -q hello input.txt && echo found", Output: "found\n"},
	}
	require.Empty(t, cmp.Diff(want, res, cmpIgnoreDuration))
}

func TestShellGoalNotAchievedReportsExitCodeAndOutput(t *testing.T) {
	t.Parallel()
	res := check(t, newGoal(t, goals.GoalShell, goals.Config{Command: "echo out; echo err >&2; exit 3"}), t.TempDir())
	want := goals.Result{
		Reason: "shell: echo out; echo err >&2; exit 3 exited with status 3",
		Details: goals.Details{
			Command: "echo out; echo err >&2; exit 3", ExitCode: 3, Failed: 1, Output: "out\nerr\n",
			Failures: []goals.Failure{{Name: "echo out; echo err >&2; exit 3", Output: "out\nerr\n"}},
		},
	}
	require.Empty(t, cmp.Diff(want, res, cmpIgnoreDuration))
}

func TestShellGoalKillsCommandAtTimeout(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalShell, goals.Config{Command: "echo started; sleep 30 & wait", Timeout: 200 * time.Millisecond})
	res := check(t, g, t.TempDir())
	require.False(t, res.Achieved)
	require.True(t, res.Details.TimedOut)
	require.Equal(t, -1, res.Details.ExitCode)
	require.Equal(t, "started\n", res.Details.Output)
	require.Contains(t, res.Reason, "was killed after the time limit of 200ms")
	require.Less(t, res.Details.Duration, 20*time.Second, "the background sleep is killed with its group")
}

func TestShellGoalCancelledContextReturnsContextError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newGoal(t, goals.GoalShell, goals.Config{Command: "sleep 30"}).Check(ctx, goals.State{}, t.TempDir())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
