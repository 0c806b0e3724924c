package goals_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	const jestPkg = `{"devDependencies": {"jest": "^29.0.0"}}`
	tests := []struct {
		name   string
		files  map[string]string
		goal   string
		reason string
	}{
		// Rule 1: .retrai.yml.
		{"config goal", map[string]string{".retrai.yml": "goal: perf-check\n", "go.mod": goModule},
			goals.GoalPerfCheck, ".retrai.yml sets goal perf-check"},
		{"config command", map[string]string{".retrai.yml": "command: ./check.sh\n", "go.mod": goModule},
			goals.GoalShell, ".retrai.yml sets a command"},
		{"config goal wins over command", map[string]string{".retrai.yml": "goal: make-test\ncommand: ./check.sh\n"},
			goals.GoalMakeTest, ".retrai.yml sets goal make-test"},
		{"config without goal or command falls through", map[string]string{".retrai.yml": "model: gpt-4o\n", "go.mod": goModule},
			goals.GoalGoTest, "go.mod found"},

		// Rule 2: pytest.
		{"pytest.ini", map[string]string{"pytest.ini": "[pytest]\n"}, goals.GoalPytest, "pytest.ini found"},
		{"conftest.py", map[string]string{"conftest.py": ""}, goals.GoalPytest, "conftest.py found"},
		{"pyproject with pytest", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q\"\n"},
			goals.GoalPytest, "pyproject.toml mentions pytest"},
		{"setup.cfg with pytest", map[string]string{"setup.cfg": "[tool:pytest]\ntestpaths = tests\n"},
			goals.GoalPytest, "setup.cfg mentions pytest"},
		{"tests dir with python", map[string]string{"tests/unit/test_x.py": ""},
			goals.GoalPytest, "tests directory holds Python files"},
		{"plain test files", map[string]string{"wordcount.py": "", "test_wordcount.py": "def test_x():\n    pass\n"},
			goals.GoalPytest, "test_wordcount.py found (a pytest test file)"},
		{"plain test files, suffix style", map[string]string{"calc_test.py": ""},
			goals.GoalPytest, "calc_test.py found (a pytest test file)"},
		{"pytest wins over pyright", map[string]string{"pytest.ini": "", "pyrightconfig.json": "{}"},
			goals.GoalPytest, "pytest.ini found"},

		// Rule 3: pyright.
		{"pyrightconfig.json", map[string]string{"pyrightconfig.json": "{}"}, goals.GoalPyright, "pyrightconfig.json found"},
		{"pyproject with pyright table only", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.pyright]\nstrict = [\"src\"]\n"},
			goals.GoalPyright, "pyproject.toml has a [tool.pyright] table"},

		// Rule 4: cargo.
		{"Cargo.toml", map[string]string{"Cargo.toml": "[package]\n"}, goals.GoalCargoTest, "Cargo.toml found"},
		{"cargo wins over go", map[string]string{"Cargo.toml": "", "go.mod": goModule}, goals.GoalCargoTest, "Cargo.toml found"},
		{"tests dir of rust files is not pytest", map[string]string{"Cargo.toml": "", "tests/it.rs": ""}, goals.GoalCargoTest, "Cargo.toml found"},

		// Rule 5: go.
		{"go.mod", map[string]string{"go.mod": goModule}, goals.GoalGoTest, "go.mod found"},
		{"go wins over package.json", map[string]string{"go.mod": goModule, "package.json": jestPkg}, goals.GoalGoTest, "go.mod found"},

		// Rule 6: bun.
		{"bun.lock", map[string]string{"package.json": "{}", "bun.lock": ""}, goals.GoalBunTest, "package.json and bun.lock found"},
		{"bun.lockb", map[string]string{"package.json": jestPkg, "bun.lockb": ""}, goals.GoalBunTest, "package.json and bun.lockb found"},

		// Rule 7: npm.
		{"jest in devDependencies", map[string]string{"package.json": jestPkg}, goals.GoalNpmTest, "package.json lists jest in devDependencies"},
		{"vitest in dependencies", map[string]string{"package.json": `{"dependencies": {"vitest": "1"}}`},
			goals.GoalNpmTest, "package.json lists vitest in dependencies"},
		{"test script", map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`},
			goals.GoalNpmTest, "package.json has a test script"},
		{"npm placeholder test script falls through to make", map[string]string{
			"package.json": `{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`,
			"Makefile":     "test:\n\tnode test.js\n",
		}, goals.GoalMakeTest, "Makefile has a test target"},

		// Rule 8: make.
		{"Makefile test target", map[string]string{"Makefile": "all: build\n\nbuild:\n\tcc x.c\n\ntest: build\n\t./run-tests\n"},
			goals.GoalMakeTest, "Makefile has a test target"},
		{"GNUmakefile double-colon rule", map[string]string{"GNUmakefile": "unit test::\n\t./t\n"},
			goals.GoalMakeTest, "GNUmakefile has a test target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name, reason, err := goals.Detect(project(t, tt.files))
			require.NoError(t, err)
			require.Equal(t, tt.goal, name)
			require.Equal(t, tt.reason, reason)
		})
	}
}

func TestDetectReportsNothingDetected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"empty directory", nil},
		{"package.json without tests", map[string]string{"package.json": `{"name": "x"}`}},
		{"Makefile without test target", map[string]string{"Makefile": ".PHONY: test\nTEST := go test\nbuild:\n\ttest -f x\n"}},
		{"tests dir without python", map[string]string{"tests/data.txt": ""}},
		{"pyproject without pytest or pyright", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n"}},
		{"python files that are not tests", map[string]string{"main.py": "", "testing.py": "", "contest_test.txt": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := goals.Detect(project(t, tt.files))
			require.ErrorIs(t, err, goals.ErrNoGoalDetected)
		})
	}
}

func TestDetectReportsAMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"file": ""})
	for _, d := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "file")} {
		_, _, err := goals.Detect(d)
		require.Error(t, err, d)
		require.NotErrorIs(t, err, goals.ErrNoGoalDetected)
	}
}

func TestDetectReportsMalformedConfig(t *testing.T) {
	t.Parallel()
	_, _, err := goals.Detect(project(t, map[string]string{".retrai.yml": "goal: [pytest\n", "go.mod": goModule}))
	var ce *goals.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), ".retrai.yml:")
}

func TestDetectRejectsUnknownGoalInConfig(t *testing.T) {
	t.Parallel()
	_, _, err := goals.Detect(project(t, map[string]string{".retrai.yml": "goal: shell-goal\n"}))
	var unknown *goals.UnknownGoalError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "shell-goal", unknown.Name)
	require.ErrorContains(t, err, ".retrai.yml")
}

func TestDetectReportsMalformedPackageJSON(t *testing.T) {
	t.Parallel()
	_, _, err := goals.Detect(project(t, map[string]string{"package.json": "{not json"}))
	require.ErrorContains(t, err, "package.json")
	require.NotErrorIs(t, err, goals.ErrNoGoalDetected)
}
