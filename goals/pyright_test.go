package goals_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

// pyrightScript returns a fake pyright printing report (with PROJECT
// replaced by its working directory) and exiting with exit.
func pyrightScript(report, exit string) string {
	return `[ "$1" = --outputjson ] || { echo "unexpected arguments: $*" >&2; exit 4; }
echo "No configuration file found." >&2
cat <<EOF
` + report + `
EOF
exit ` + exit + "\n"
}

const pyrightErrors = `{
  "version": "1.1.380",
  "time": "1700000000000",
  "generalDiagnostics": [
    {
      "file": "$PWD/app/main.py",
      "severity": "error",
      "message": "\"foo\" is not a known attribute of module \"os\"",
      "range": {"start": {"line": 2, "character": 3}, "end": {"line": 2, "character": 6}},
      "rule": "reportAttributeAccessIssue"
    },
    {
      "file": "$PWD/app/util.py",
      "severity": "warning",
      "message": "Import \"yaml\" could not be resolved from source",
      "range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 11}},
      "rule": "reportMissingModuleSource"
    },
    {
      "file": "$PWD/app/util.py",
      "severity": "error",
      "message": "Expression of type \"str\" is incompatible with declared type \"int\"",
      "range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 5}}
    }
  ],
  "summary": {"filesAnalyzed": 2, "errorCount": 2, "warningCount": 1, "informationCount": 0, "timeInSec": 0.4}
}`

const pyrightClean = `{
  "version": "1.1.380",
  "generalDiagnostics": [],
  "summary": {"filesAnalyzed": 3, "errorCount": 0, "warningCount": 0, "informationCount": 0, "timeInSec": 0.3}
}`

func TestPyrightAchievedWithNoErrors(t *testing.T) {
	fakeBin(t, map[string]string{"pyright": pyrightScript(pyrightClean, "0")})
	res := check(t, newGoal(t, goals.GoalPyright, goals.Config{}), project(t, map[string]string{"pyrightconfig.json": "{}"}))
	want := goals.Result{
		Achieved: true,
		Reason:   "pyright: 0 errors in 3 files (0 warnings)",
		Details:  goals.Details{Command: "pyright --outputjson"},
	}
	require.Empty(t, cmp.Diff(want, res, ignoreVolatile))
}

func TestPyrightListsErrorsWithPositions(t *testing.T) {
	fakeBin(t, map[string]string{"pyright": pyrightScript(pyrightErrors, "1")})
	res := check(t, newGoal(t, goals.GoalPyright, goals.Config{}), project(t, map[string]string{"pyrightconfig.json": "{}"}))
	want := goals.Result{
		Reason: "pyright: 2 errors: app/main.py:3:4, app/util.py:10:1",
		Details: goals.Details{
			Command: "pyright --outputjson", Failed: 2, Warnings: 1, ExitCode: 1,
			Failures: []goals.Failure{
				{Name: "app/main.py:3:4", Output: `error: "foo" is not a known attribute of module "os" (reportAttributeAccessIssue)`},
				{Name: "app/util.py:10:1", Output: `error: Expression of type "str" is incompatible with declared type "int"`},
			},
		},
	}
	require.Empty(t, cmp.Diff(want, res, ignoreVolatile))
	require.Contains(t, res.Details.Output, `app/main.py:3:4 - error: "foo" is not a known attribute`)
}

func TestPyrightWithoutJSONReportIsNotAchieved(t *testing.T) {
	fakeBin(t, map[string]string{"pyright": `echo "Config file \"pyrightconfig.json\" could not be parsed" >&2; exit 3` + "\n"})
	res := check(t, newGoal(t, goals.GoalPyright, goals.Config{}), project(t, map[string]string{"pyrightconfig.json": "{"}))
	require.False(t, res.Achieved)
	require.Equal(t, "pyright: no JSON report: pyright exited with status 3", res.Reason)
	require.Equal(t, 3, res.Details.ExitCode)
	require.Equal(t, 1, res.Details.Failed)
	require.True(t, strings.Contains(res.Details.Failures[0].Output, "could not be parsed"))
}

func TestCommandGoalsMissingProgramReturnsToolNotFoundError(t *testing.T) {
	tests := []struct {
		goal, tool string
	}{
		{goals.GoalPyright, "pyright"},
		{goals.GoalMakeTest, "make"},
	}
	for _, tt := range tests {
		t.Run(tt.goal, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			_, err := newGoal(t, tt.goal, goals.Config{}).Check(context.Background(), goals.State{}, t.TempDir())
			var nf *goals.ToolNotFoundError
			require.ErrorAs(t, err, &nf)
			require.Equal(t, tt.tool, nf.Tool)
			require.Equal(t, tt.goal, nf.Goal)
		})
	}
}
