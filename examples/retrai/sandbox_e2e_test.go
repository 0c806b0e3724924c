package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// requireSandbox skips where bubblewrap does not work (.ci/run installs
// it, so CI runs these tests).
func requireSandbox(t *testing.T) {
	t.Helper()
	if info := tools.SandboxStatus(); !info.Available {
		t.Skipf("bubblewrap sandbox not available: %s", info.Reason)
	}
}

// The offline demo's loop, on the go-test sample with the sandbox
// required, reaches the goal; the goal check then passes twice more on
// the same project, as a user's next runs would (each go test of the
// sandbox writes its build cache).
func TestTheDemoLoopReachesItsGoalInTheRequiredSandboxAndStaysReached(t *testing.T) {
	requireSandbox(t)
	isolate(t)
	dir := t.TempDir()
	require.NoError(t, samples.Copy(samples.GoTest, dir))
	code, out, errOut := runCLI(t, "", "run", "--sandbox", "required", "--cwd", dir, "--model", demoPrefix+samples.GoTest,
		"--db", filepath.Join(t.TempDir(), "r.db"))
	require.Equal(t, exitAchieved, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "(--sandbox required)")
	require.NotContains(t, out, "NOT sandboxed")
	require.Contains(t, out, "✓ GOAL ACHIEVED after 2 iteration(s): go-test: all 1 tests passed")

	g, err := goals.New(goals.GoalGoTest, goals.Config{TestOptions: []tools.Option{tools.WithSandbox(tools.SandboxRequired)}})
	require.NoError(t, err)
	for i := range 2 {
		res, err := g.Check(context.Background(), goals.State{RunID: "after", Iteration: i + 1, MaxIterations: 2}, dir)
		require.NoError(t, err)
		require.True(t, res.Achieved, "check %d: %s\n%s", i+1, res.Reason, res.Details.Output)
	}
}
