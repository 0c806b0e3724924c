package goals_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
)

const goModule = "module example.com/m\n\ngo 1.21\n"

func requireGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
}

func TestGoTestAchievedWhenTestsPass(t *testing.T) {
	t.Parallel()
	requireGo(t)
	dir := project(t, map[string]string{
		"go.mod":    goModule,
		"m.go":      "package m\n\nfunc Add(a, b int) int { return a + b }\n",
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"wrong sum\")\n\t}\n}\n",
	})
	res := check(t, newGoal(t, goals.GoalGoTest, goals.Config{}), dir)
	want := goals.Result{
		Achieved: true,
		Reason:   "go-test: all 1 tests passed",
		Details:  goals.Details{Command: "go test -json ./...", Framework: "go", Passed: 1},
	}
	require.Empty(t, cmp.Diff(want, res, ignoreVolatile))
	require.Positive(t, res.Details.Duration)
}

func TestGoTestNotAchievedNamesFailingTest(t *testing.T) {
	t.Parallel()
	requireGo(t)
	dir := project(t, map[string]string{
		"go.mod":    goModule,
		"m.go":      "package m\n\nfunc Add(a, b int) int { return a - b }\n",
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(1, 2); got != 3 {\n\t\tt.Fatalf(\"Add(1, 2) = %d, want 3\", got)\n\t}\n}\n",
	})
	res := check(t, newGoal(t, goals.GoalGoTest, goals.Config{}), dir)
	require.False(t, res.Achieved)
	require.Equal(t, "go-test: 1 of 2 tests failed: example.com/m.TestAdd", res.Reason)
	d := res.Details
	require.Equal(t, [3]int{1, 1, 0}, [3]int{d.Passed, d.Failed, d.Skipped})
	require.Equal(t, 1, d.ExitCode)
	require.Len(t, d.Failures, 1)
	require.Equal(t, "example.com/m.TestAdd", d.Failures[0].Name)
	require.Contains(t, d.Failures[0].Output, "Add(1, 2) = -1, want 3")
	require.Contains(t, d.Output, "FAIL")
}

// Outputs of the real tools, as tools.RunTests parses them.
const (
	pytestFailing = `============================= test session starts ==============================
collected 2 items

tests/test_a.py .F                                                       [100%]

=================================== FAILURES ===================================
___________________________________ test_bad ___________________________________

    def test_bad():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:5: AssertionError
=========================== short test summary info ============================
PASSED tests/test_a.py::test_ok
FAILED tests/test_a.py::test_bad - assert 1 == 2
========================= 1 failed, 1 passed in 0.05s ==========================
`
	pytestPassing = `============================= test session starts ==============================
collected 2 items

tests/test_a.py ..                                                       [100%]

=========================== short test summary info ============================
PASSED tests/test_a.py::test_ok
PASSED tests/test_a.py::test_other
============================== 2 passed in 0.01s ===============================
`
	cargoFailing = `
running 2 tests
test tests::it_works ... ok
test tests::it_fails ... FAILED

failures:

---- tests::it_fails stdout ----
thread 'tests::it_fails' panicked at src/lib.rs:10:9:
assertion failed: 1 == 2

failures:
    tests::it_fails

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

`
	bunFailing = `bun test v1.1.30

math.test.ts:
(pass) math > adds [0.10ms]
error: expect(received).toBe(expected)

Expected: 4
Received: 3

(fail) math > subtracts [0.20ms]

 1 pass
 1 fail
Ran 2 tests across 1 files. [12.00ms]
`
	jestFailing = `FAIL ./sum.test.js
  sum
    ✓ adds (2 ms)
    ✕ adds wrong (3 ms)

  ● sum › adds wrong

    expect(received).toBe(expected)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Ran all test suites.
`
	jestPassing = `PASS ./sum.test.js
  sum
    ✓ adds (2 ms)

Test Suites: 1 passed, 1 total
Tests:       1 passed, 1 total
`
)

// fakeRunner returns a script that checks its arguments, prints out to
// stdout (or stderr) and exits with exit.
func fakeRunner(wantArg, out string, toStderr bool, exit string) string {
	redirect := ""
	if toStderr {
		redirect = " >&2"
	}
	return "[ \"$1\" = " + wantArg + " ] || { echo \"unexpected arguments: $*\" >&2; exit 99; }\n" +
		"cat" + redirect + " <<'EOF'\n" + out + "EOF\nexit " + exit + "\n"
}

func TestTestGoalsTurnRunnerOutputIntoDetails(t *testing.T) {
	tests := []struct {
		name     string
		goal     string
		files    map[string]string
		bin      string
		script   string
		achieved bool
		reason   string
		counts   [3]int // passed, failed, skipped
		failures []string
		output   string // in the first failure's output
	}{
		{
			name: "pytest failing", goal: goals.GoalPytest,
			files:  map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\n", "tests/test_a.py": ""},
			bin:    "pytest",
			script: fakeRunner("-rA", pytestFailing, false, "1"),
			reason: "pytest: 1 of 2 tests failed: tests/test_a.py::test_bad",
			counts: [3]int{1, 1, 0}, failures: []string{"tests/test_a.py::test_bad"}, output: "assert 1 == 2",
		},
		{
			name: "pytest passing", goal: goals.GoalPytest,
			files:    map[string]string{"pytest.ini": "", "tests/test_a.py": ""},
			bin:      "pytest",
			script:   fakeRunner("-rA", pytestPassing, false, "0"),
			achieved: true, reason: "pytest: all 2 tests passed",
			counts: [3]int{2, 0, 0},
		},
		{
			name: "pytest collecting nothing", goal: goals.GoalPytest,
			files:  map[string]string{"pytest.ini": ""},
			bin:    "pytest",
			script: fakeRunner("-rA", "collected 0 items\n\n============================ no tests ran in 0.01s =============================\n", false, "5"),
			reason: "pytest: pytest collected no tests",
		},
		{
			name: "cargo failing", goal: goals.GoalCargoTest,
			files:  map[string]string{"Cargo.toml": "[package]\nname = \"demo\"\n"},
			bin:    "cargo",
			script: fakeRunner("test", cargoFailing, false, "101"),
			reason: "cargo-test: 1 of 2 tests failed: tests::it_fails",
			counts: [3]int{1, 1, 0}, failures: []string{"tests::it_fails"}, output: "assertion failed: 1 == 2",
		},
		{
			name: "cargo compile error", goal: goals.GoalCargoTest,
			files:  map[string]string{"Cargo.toml": ""},
			bin:    "cargo",
			script: fakeRunner("test", "error[E0425]: cannot find value `x` in this scope\n", true, "101"),
			reason: "cargo-test: 1 of 1 tests failed: cargo test run",
			counts: [3]int{0, 1, 0}, failures: []string{"cargo test run"}, output: "cannot find value `x`",
		},
		{
			name: "bun failing", goal: goals.GoalBunTest,
			files:  map[string]string{"package.json": "{}", "bun.lock": ""},
			bin:    "bun",
			script: fakeRunner("test", bunFailing, true, "1"),
			reason: "bun-test: 1 of 2 tests failed: math > subtracts",
			counts: [3]int{1, 1, 0}, failures: []string{"math > subtracts"}, output: "Received: 3",
		},
		{
			name: "npm jest failing", goal: goals.GoalNpmTest,
			files:  map[string]string{"package.json": `{"scripts":{"test":"jest"}}`},
			bin:    "npm",
			script: fakeRunner("test", jestFailing, true, "1"),
			reason: "npm-test: 1 of 2 tests failed: sum › adds wrong",
			counts: [3]int{1, 1, 0}, failures: []string{"sum › adds wrong"}, output: "expect(received).toBe(expected)",
		},
		{
			name: "npm jest passing", goal: goals.GoalNpmTest,
			files:    map[string]string{"package.json": `{"scripts":{"test":"jest"}}`},
			bin:      "npm",
			script:   fakeRunner("test", jestPassing, true, "0"),
			achieved: true, reason: "npm-test: all 1 tests passed",
			counts: [3]int{1, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeBin(t, map[string]string{tt.bin: tt.script})
			res := check(t, newGoal(t, tt.goal, goals.Config{}), project(t, tt.files))
			require.Equal(t, tt.achieved, res.Achieved)
			require.Equal(t, tt.reason, res.Reason)
			d := res.Details
			require.Equal(t, tt.counts, [3]int{d.Passed, d.Failed, d.Skipped})
			var names []string
			for _, f := range d.Failures {
				names = append(names, f.Name)
			}
			require.Equal(t, tt.failures, names)
			if tt.output != "" {
				require.Contains(t, d.Failures[0].Output, tt.output)
			}
		})
	}
}

func TestTestGoalCapsFailureOutput(t *testing.T) {
	long := strings.Repeat("x", 3*goals.MaxFailureOutputChars)
	fakeBin(t, map[string]string{"cargo": fakeRunner("test", strings.Replace(cargoFailing, "assertion failed: 1 == 2", long, 1), false, "101")})
	res := check(t, newGoal(t, goals.GoalCargoTest, goals.Config{}), project(t, map[string]string{"Cargo.toml": ""}))
	require.Len(t, res.Details.Failures, 1)
	out := res.Details.Failures[0].Output
	require.Less(t, len([]rune(out)), goals.MaxFailureOutputChars+100, "capped, plus a marker")
	require.Contains(t, out, "omitted")
	require.LessOrEqual(t, len([]rune(res.Details.Output)), goals.MaxOutputChars+100)
}

func TestTestGoalMissingToolchainReturnsToolNotFoundError(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := project(t, map[string]string{"Cargo.toml": ""})
	_, err := newGoal(t, goals.GoalCargoTest, goals.Config{}).Check(context.Background(), goals.State{}, dir)
	var nf *goals.ToolNotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, goals.GoalCargoTest, nf.Goal)
	require.Equal(t, "cargo", nf.Tool)
	require.ErrorIs(t, err, exec.ErrNotFound)
}

func TestTestGoalCancelledContextReturnsContextError(t *testing.T) {
	fakeBin(t, map[string]string{"cargo": "exec sleep 60\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newGoal(t, goals.GoalCargoTest, goals.Config{}).Check(ctx, goals.State{}, project(t, map[string]string{"Cargo.toml": ""}))
	require.ErrorIs(t, err, context.Canceled)
}
