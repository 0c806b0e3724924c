package goals_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

// staticGoal is a goal whose check always returns the same result.
type staticGoal struct {
	name string
	res  goals.Result
}

func (g staticGoal) Name() string         { return g.name }
func (g staticGoal) SystemPrompt() string { return "static" }
func (g staticGoal) Check(context.Context, goals.State, string) (goals.Result, error) {
	return g.res, nil
}

func TestNamesListsBuiltinGoalsSorted(t *testing.T) {
	want := []string{
		"ai-eval", "bun-test", "cargo-test", "go-test", "make-test", "npm-test",
		"perf-check", "pyright", "pytest", "shell", "sql-benchmark",
	}
	require.Empty(t, cmp.Diff(want, goals.Names()))
}

func TestRegisterMakesGoalAvailableToNew(t *testing.T) {
	const name = "test-register-custom"
	t.Cleanup(func() { goals.Unregister(name) })
	var got goals.Config
	err := goals.Register(name, func(cfg goals.Config) (goals.Goal, error) {
		got = cfg
		return staticGoal{name: name, res: goals.Result{Achieved: true, Reason: "done"}}, nil
	})
	require.NoError(t, err)
	require.Contains(t, goals.Names(), name)

	g := newGoal(t, name, goals.Config{Command: "x"})
	require.Equal(t, "x", got.Command, "the factory receives the Config")
	require.Equal(t, goals.Result{Achieved: true, Reason: "done"}, check(t, g, t.TempDir()))
}

func TestRegisterRejectsDuplicateNameAndKeepsTheFirst(t *testing.T) {
	err := goals.Register(goals.GoalGoTest, func(goals.Config) (goals.Goal, error) {
		return staticGoal{name: "impostor"}, nil
	})
	var dup *goals.DuplicateGoalError
	require.ErrorAs(t, err, &dup)
	require.Equal(t, goals.GoalGoTest, dup.Name)

	g := newGoal(t, goals.GoalGoTest, goals.Config{})
	require.Contains(t, g.SystemPrompt(), "go test")
}

func TestRegisterRejectsEmptyNameAndNilFactory(t *testing.T) {
	factory := func(goals.Config) (goals.Goal, error) { return staticGoal{}, nil }
	require.ErrorContains(t, goals.Register("", factory), "empty goal name")
	require.ErrorContains(t, goals.Register("test-nil-factory", nil), "nil factory")
	require.NotContains(t, goals.Names(), "test-nil-factory")
}

func TestNewReturnsUnknownGoalErrorForUnregisteredName(t *testing.T) {
	_, err := goals.New("maven-test", goals.Config{})
	var unknown *goals.UnknownGoalError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "maven-test", unknown.Name)
	require.Equal(t, goals.Names(), unknown.Known)
	require.ErrorContains(t, err, "go-test")
}

func TestNewRejectsInvalidSettings(t *testing.T) {
	t.Parallel()
	perf := goals.PerfConfig{Command: "true", MaxSeconds: 1}
	sqlOK := goals.SQLConfig{DSN: "db.sqlite", Query: "SELECT 1", MaxMS: 10}
	tests := []struct {
		name    string
		goal    string
		cfg     goals.Config
		setting string
	}{
		{"shell without command", goals.GoalShell, goals.Config{}, "command"},
		{"negative timeout", goals.GoalGoTest, goals.Config{Timeout: -time.Second}, "timeout"},
		{"perf without command", goals.GoalPerfCheck, goals.Config{Perf: goals.PerfConfig{MaxSeconds: 1}}, "perf.command"},
		{"perf without max_seconds", goals.GoalPerfCheck, goals.Config{Perf: goals.PerfConfig{Command: "true"}}, "perf.max_seconds"},
		{"perf with negative runs", goals.GoalPerfCheck, goals.Config{Perf: goals.PerfConfig{Command: "true", MaxSeconds: 1, Runs: -1}}, "perf.runs"},
		{"sql without dsn", goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{Query: "SELECT 1", MaxMS: 1}}, "sql.dsn"},
		{"sql with unknown driver", goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{Driver: "oracle", DSN: "x", Query: "SELECT 1", MaxMS: 1}}, "sql.driver"},
		{"sql without query", goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{DSN: "x", MaxMS: 1}}, "sql.query"},
		{"sql with query and query_file", goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{DSN: "x", Query: "SELECT 1", QueryFile: "q.sql", MaxMS: 1}}, "sql.query"},
		{"sql without max_ms", goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{DSN: "x", Query: "SELECT 1"}}, "sql.max_ms"},
		{"ai-eval without objective", goals.GoalAIEval, goals.Config{}, "eval.objective"},
		{"ai-eval with harness outside the project", goals.GoalAIEval, goals.Config{Eval: goals.EvalConfig{Objective: "x", Harness: "../eval.sh"}}, "eval.harness"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := goals.New(tt.goal, tt.cfg)
			var se *goals.SettingError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.goal, se.Goal)
			require.Equal(t, tt.setting, se.Setting)
		})
	}
	// The valid variants of the same configurations are accepted.
	for name, cfg := range map[string]goals.Config{
		goals.GoalPerfCheck:    {Perf: perf},
		goals.GoalSQLBenchmark: {SQL: sqlOK},
	} {
		_, err := goals.New(name, cfg)
		require.NoError(t, err, name)
	}
}

func TestSystemPromptDescribesObjectiveAndVerification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		goal string
		cfg  goals.Config
		want []string
	}{
		{goals.GoalPytest, goals.Config{}, []string{"Python", "pytest -rA", "exits with status 0"}},
		{goals.GoalPyright, goals.Config{}, []string{"pyright --outputjson", "0 errors"}},
		{goals.GoalBunTest, goals.Config{}, []string{"bun test"}},
		{goals.GoalNpmTest, goals.Config{}, []string{"npm test"}},
		{goals.GoalCargoTest, goals.Config{}, []string{"Rust", "cargo test"}},
		{goals.GoalGoTest, goals.Config{Timeout: 3 * time.Minute}, []string{"Go module", "go test -json ./...", "3m0s"}},
		{goals.GoalMakeTest, goals.Config{}, []string{"make test", "status 0"}},
		{goals.GoalShell, goals.Config{Command: "./check.sh --all"}, []string{"./check.sh --all", "status 0"}},
		{goals.GoalPerfCheck, goals.Config{Command: "./bench", Perf: goals.PerfConfig{MaxSeconds: 1.5, Runs: 7}}, []string{"./bench", "7 times", "median", "1.5s"}},
		{goals.GoalSQLBenchmark, goals.Config{SQL: goals.SQLConfig{DSN: "postgres://u:secret@db/x", QueryFile: "q.sql", MaxMS: 50, ExpectedRows: new(3)}},
			[]string{"q.sql", "PostgreSQL", "postgres://u:xxxxx@db/x", "50ms", "exactly 3 rows"}},
		{goals.GoalAIEval, goals.Config{Eval: goals.EvalConfig{Objective: "The CLI prints its version."}}, []string{"The CLI prints its version.", goals.DefaultHarness, "exits with status 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.goal, func(t *testing.T) {
			t.Parallel()
			p := newGoal(t, tt.goal, tt.cfg).SystemPrompt()
			for _, w := range tt.want {
				require.Contains(t, p, w)
			}
			require.NotContains(t, p, "secret", "credentials stay out of prompts")
		})
	}
}

func TestResultRoundTripsThroughJSON(t *testing.T) {
	t.Parallel()
	res := goals.Result{
		Reason: "go-test: 1 of 2 tests failed: m.TestX",
		Details: goals.Details{
			Command: "go test -json ./...", Framework: "go", Passed: 1, Failed: 1,
			Failures: []goals.Failure{{Name: "m.TestX", Output: "boom"}},
			ExitCode: 1, Output: "FAIL", Duration: time.Second,
			Runs: []time.Duration{time.Millisecond}, Median: time.Millisecond, Limit: time.Second,
		},
	}
	data, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(data), `"failures":[{"name":"m.TestX","output":"boom"}]`)
	require.Contains(t, string(data), `"median_ns":1000000`)
	var back goals.Result
	require.NoError(t, json.Unmarshal(data, &back))
	require.Empty(t, cmp.Diff(res, back))
}
