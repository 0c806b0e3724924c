package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/agent/coder"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// The offline demo's request that edits and tests — a wrong fix, caught
// by the tests, then the right one — ends with the tests passing when the
// sandbox is required; the project's test check then passes twice more,
// as the user's next requests would run it.
func TestTheDemoEditPassesItsTestsInTheRequiredSandboxAndKeepsPassing(t *testing.T) {
	if info := tools.SandboxStatus(); !info.Available {
		t.Skipf("bubblewrap sandbox not available: %s", info.Reason)
	}
	dir, mem := sampleProject(t), t.TempDir()
	var out bytes.Buffer
	s, err := openWith(t.Context(), demoModel(), options{cwd: dir, session: "e2e", memory: mem, sandbox: "required"}, &out)
	require.NoError(t, err)
	defer s.close()
	require.Contains(t, out.String(), "(--sandbox required)")
	// The demo's order: the question takes the script's first reply.
	_, err = s.ask(t.Context(), "what does Total do in cart.go?")
	require.NoError(t, err)
	res, err := s.ask(t.Context(), "the cart total comes out too low")
	require.NoError(t, err)
	require.Equal(t, coder.OutcomeTestsPass, res.Outcome, out.String())
	require.Equal(t, 2, res.Attempts)

	g, err := goals.New(goals.GoalGoTest, goals.Config{TestOptions: []tools.Option{tools.WithSandbox(tools.SandboxRequired)}})
	require.NoError(t, err)
	for i := range 2 {
		r, err := g.Check(context.Background(), goals.State{RunID: "after", Iteration: i + 1, MaxIterations: 2}, dir)
		require.NoError(t, err)
		require.True(t, r.Achieved, "check %d: %s\n%s", i+1, r.Reason, r.Details.Output)
	}
}

// coder -p exits non-zero when the command it ran was killed at its time
// limit.
func TestOneRequestWhoseCommandTimedOutExitsNonZero(t *testing.T) {
	dir := sampleProject(t)
	model := newFakeModel(t)
	t.Setenv("OPENAI_API_KEY", "test-key")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-p", "run sleep 30", "--command-timeout", "1s",
		"--cwd", dir, "--model", model.spec(), "--memory", t.TempDir())
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, exitError, exit.ExitCode(), "%s", out)
	require.Contains(t, string(out), "timed out after 1s")
	require.Empty(t, model.kinds(), "the command is routed by its pattern")
}
