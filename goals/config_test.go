package goals_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

func TestLoadConfigReportsAbsentFile(t *testing.T) {
	t.Parallel()
	cfg, ok, err := goals.LoadConfig(t.TempDir())
	require.NoError(t, err)
	require.False(t, ok)
	require.Nil(t, cfg)
}

// Test files are protected unless the file says protect_tests: false.
func TestLoadConfigProtectsTestsUnlessTurnedOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		allowEdit bool
	}{
		{"goal: go-test\n", false},
		{"protect_tests: true\n", false},
		{"protect_tests: false\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			cfg, ok, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": tc.file}))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tc.allowEdit, cfg.AllowTestEdits)
		})
	}
}

func TestLoadConfigReadsAllSettings(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{".retrai.yml": `
goal: sql-benchmark
model: claude-sonnet-4-6
max_iterations: 20
hitl_enabled: true
command: ./check.sh
timeout: 90s
protect_tests: false
perf:
  command: ./bench.sh
  max_seconds: 1.5
  runs: 7
sql:
  driver: sqlite
  dsn: data/bench.db
  query: SELECT 1
  query_file: query.sql
  max_ms: 50
  runs: 3
  expected_rows: 42
eval:
  objective: The CLI prints its version.
  harness: .retrai/check.sh
`})
	cfg, ok, err := goals.LoadConfig(dir)
	require.NoError(t, err)
	require.True(t, ok)
	want := &goals.Config{
		Goal: "sql-benchmark", Model: "claude-sonnet-4-6", MaxIterations: 20, HITLEnabled: true,
		Command: "./check.sh", Timeout: 90 * time.Second, AllowTestEdits: true,
		Perf: goals.PerfConfig{Command: "./bench.sh", MaxSeconds: 1.5, Runs: 7},
		SQL: goals.SQLConfig{Driver: "sqlite", DSN: "data/bench.db", Query: "SELECT 1", QueryFile: "query.sql",
			MaxMS: 50, Runs: 3, ExpectedRows: new(42)},
		Eval: goals.EvalConfig{Objective: "The CLI prints its version.", Harness: ".retrai/check.sh"},
	}
	require.Empty(t, cmp.Diff(want, cfg))
}

func TestLoadConfigEmptyFileGivesZeroConfig(t *testing.T) {
	t.Parallel()
	cfg, ok, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": ""}))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, &goals.Config{}, cfg)
}

func TestLoadConfigRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"top level", "goal: pytest\nsystem_prompt: be careful\n", 2, `unknown key "system_prompt" (known keys here: command, eval, goal, hitl_enabled, max_iterations, model, perf, protect_tests, sql, timeout)`},
		{"a misspelt setting", "max_iteration: 5\n", 1, `unknown key "max_iteration"`},
		{"in a section", "goal: perf-check\nperf:\n  max_second: 2\n", 3, `unknown key "max_second" (known keys here: command, max_seconds, runs)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ok, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": tt.content}))
			require.False(t, ok)
			var ce *goals.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.line, ce.Line, ce.Error())
			require.Contains(t, ce.Msg, tt.msg)
		})
	}
}

func TestLoadConfigRequiresAPositiveIterationLimit(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "-3"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			_, _, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": "goal: pytest\nmax_iterations: " + v + "\n"}))
			var ce *goals.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, 2, ce.Line)
			require.Contains(t, ce.Msg, "max_iterations must be positive, not "+v)
		})
	}
	cfg, _, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": "max_iterations: 1\n"}))
	require.NoError(t, err)
	require.Equal(t, 1, cfg.MaxIterations)
}

func TestLoadConfigTimeoutAcceptsDurationOrSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"90s", 90 * time.Second},
		{"5m", 5 * time.Minute},
		{"30", 30 * time.Second},
		{"2.5", 2500 * time.Millisecond},
		{`"45"`, 45 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			cfg, _, err := goals.LoadConfig(project(t, map[string]string{".retrai.yml": "timeout: " + tt.value + "\n"}))
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Timeout)
		})
	}
}

func TestLoadConfigReportsMalformedFileWithLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"unclosed quote", "goal: pytest\ncommand: \"unclosed\n", 2, "found unexpected end of stream"},
		{"wrong type", "goal: perf-check\nperf:\n  runs: many\n", 3, "cannot unmarshal !!str `many` into int"},
		{"bad duration", "goal: shell\n\ntimeout: soon\n", 3, `invalid duration "soon"`},
		{"negative duration", "timeout: -5\n", 1, "invalid duration"},
		{"bad indentation", "goal: shell\n  command: x\n", 2, "mapping values are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := project(t, map[string]string{".retrai.yml": tt.content})
			_, ok, err := goals.LoadConfig(dir)
			require.False(t, ok)
			var ce *goals.ConfigError
			require.ErrorAs(t, err, &ce)
			path := filepath.Join(dir, ".retrai.yml")
			require.Equal(t, path, ce.Path)
			require.Equal(t, tt.line, ce.Line, ce.Error())
			require.Contains(t, ce.Msg, tt.msg)
			require.ErrorContains(t, err, path+":")
		})
	}
}
