package goals_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// plantedGo is a go that a model planted in the project: it prints a
// passing test run, whatever it is asked.
const plantedGo = `#!/bin/sh
echo PLANTED
echo '{"Action":"run","Package":"example.com/calc","Test":"TestAdd"}'
echo '{"Action":"pass","Package":"example.com/calc","Test":"TestAdd"}'
echo '{"Action":"pass","Package":"example.com/calc"}'
exit 0
`

// plantGo writes bin/go into the project dir and puts dir/bin first on
// PATH, as direnv's PATH_add bin would. Tests using it cannot run in
// parallel.
func plantGo(t *testing.T, dir string) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(plantedGo), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// The goal checks never run a go planted in the project, even when PATH
// leads to it first: the toolchain is found outside the project, and the
// check's commands get a PATH without the project's entries.
func TestGoalChecksDoNotRunAGoPlantedInTheProject(t *testing.T) {
	requireGo(t)
	tests := []struct {
		goal string
		cfg  goals.Config
	}{
		{goals.GoalGoTest, goals.Config{TestOptions: []tools.Option{tools.WithSandbox(tools.SandboxOff)}}},
		{goals.GoalShell, goals.Config{Command: "go test ./..."}},
	}
	for _, tc := range tests {
		t.Run(tc.goal, func(t *testing.T) {
			dir := project(t, goCalcFiles())
			plantGo(t, dir)
			res := check(t, newGoal(t, tc.goal, tc.cfg), dir)
			require.False(t, res.Achieved, res.Reason)
			require.NotContains(t, res.Details.Output, "PLANTED")
			require.Contains(t, res.Details.Output, "Add(1, 2) = -1, want 3")
		})
	}
}
