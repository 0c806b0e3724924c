//go:build linux

package goals_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

func TestTestGoalRunsTheTestsInTheSandboxUnlessToldOtherwise(t *testing.T) {
	if info := tools.SandboxStatus(); !info.Available {
		t.Skipf("bubblewrap sandbox not available: %s", info.Reason)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	cases := []struct {
		name    string
		opts    []tools.Option
		reaches bool
	}{
		{"default", nil, false},
		{"sandbox off", []tools.Option{tools.WithSandbox(tools.SandboxOff)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			outside := filepath.Join(t.TempDir(), "planted.txt")
			dir := project(t, map[string]string{
				"go.mod": "module example.com/m\n\ngo 1.22\n",
				// A test an agent wrote, reaching out of the project.
				"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
					"func TestReachesOut(t *testing.T) {\n\t_ = os.WriteFile(" + strconv.Quote(outside) + ", []byte(\"x\"), 0o644)\n}\n",
			})
			res := check(t, newGoal(t, goals.GoalGoTest, goals.Config{TestOptions: tc.opts}), dir)
			require.True(t, res.Achieved, res.Details.Output)
			if tc.reaches {
				require.FileExists(t, outside)
			} else {
				require.NoFileExists(t, outside)
			}
		})
	}
}

func TestGoalCommandsDoNotGetThisProcesssSecrets(t *testing.T) {
	t.Setenv("AGENTGRAPH_TEST_API_KEY", "sk-secret")
	t.Setenv("AGENTGRAPH_TEST_DB", "postgres://app:hunter2@db/x")
	t.Setenv("AGENTGRAPH_TEST_VISIBLE", "yes")
	dir := project(t, nil)
	g := newGoal(t, goals.GoalShell, goals.Config{Command: `test -z "$AGENTGRAPH_TEST_API_KEY" && test -z "$AGENTGRAPH_TEST_DB" && test "$AGENTGRAPH_TEST_VISIBLE" = yes`})
	res := check(t, g, dir)
	require.True(t, res.Achieved, res.Details.Output)
}
