package goals_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

func TestPerfCheckAchievedForFastCommand(t *testing.T) {
	t.Parallel()
	// The limit is far above what a trivial command needs, so the result
	// does not depend on the machine's speed.
	g := newGoal(t, goals.GoalPerfCheck, goals.Config{Perf: goals.PerfConfig{Command: "true", MaxSeconds: 60, Runs: 3}})
	res := check(t, g, t.TempDir())
	require.True(t, res.Achieved, res.Reason)
	d := res.Details
	require.Equal(t, "true", d.Command)
	require.Len(t, d.Runs, 3)
	require.Equal(t, time.Minute, d.Limit)
	require.Positive(t, d.Median)
	require.LessOrEqual(t, d.Median, d.Limit)
	require.Contains(t, res.Reason, "perf-check: median of 3 runs")
}

func TestPerfCheckUsesTopLevelCommandAndDefaultRuns(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalPerfCheck, goals.Config{Command: "echo hi", Perf: goals.PerfConfig{MaxSeconds: 60}})
	res := check(t, g, t.TempDir())
	require.True(t, res.Achieved, res.Reason)
	require.Equal(t, "echo hi", res.Details.Command)
	require.Len(t, res.Details.Runs, goals.DefaultRuns)
	require.Equal(t, "hi\n", res.Details.Output)
}

func TestPerfCheckNotAchievedWhenCommandFails(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"bench.sh": "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count\n[ $n -lt 1 ] || { echo 'wrong answer' >&2; exit 4; }\n"})
	g := newGoal(t, goals.GoalPerfCheck, goals.Config{Perf: goals.PerfConfig{Command: "bash bench.sh", MaxSeconds: 60, Runs: 3}})
	res := check(t, g, dir)
	require.False(t, res.Achieved)
	require.Equal(t, "perf-check: run 2 of 3 failed: bash bench.sh exited with status 4", res.Reason)
	d := res.Details
	require.Equal(t, 4, d.ExitCode)
	require.Len(t, d.Runs, 1, "only the successful run is measured")
	require.Equal(t, []goals.Failure{{Name: "run 2", Output: "wrong answer\n"}}, d.Failures)
}
