package goals_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/tools"
)

// removed, as a file's new content, deletes the file.
const removed = "\x00removed"

// integrityCase is a change an agent might make after the baseline, and
// what the goal's check must say about it.
type integrityCase struct {
	name string
	// protect runs the case with test files protected, as by default;
	// the other cases run with Config.AllowTestEdits.
	protect  bool
	change   map[string]string // files to write, or remove
	achieved bool
	reason   string
	failures []string // names that Details.Failures must hold
}

// integritySuite runs the cases of one test goal against a real
// toolchain on copies of one small project.
type integritySuite struct {
	goal  string
	tools []string // programs the suite needs
	files map[string]string
	cases []integrityCase
}

func (s integritySuite) run(t *testing.T) {
	for _, tool := range s.tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the %s integrity cases need it", tool, s.goal)
		}
	}
	for _, tc := range s.cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := project(t, s.files)
			g := newGoal(t, s.goal, goals.Config{AllowTestEdits: !tc.protect})
			bl, ok := g.(goals.Baseliner)
			require.True(t, ok, "%s records a baseline", s.goal)
			base, err := bl.Baseline(ctx, dir)
			require.NoError(t, err)
			require.Equal(t, s.goal, base.Goal)

			// The baseline lives in the run's state: it must survive JSON.
			data, err := json.Marshal(base)
			require.NoError(t, err)
			var kept goals.Baseline
			require.NoError(t, json.Unmarshal(data, &kept))
			require.Equal(t, base, &kept)

			applyChange(t, dir, tc.change)
			res, err := g.Check(ctx, goals.State{RunID: "run", Iteration: 1, MaxIterations: 10, Baseline: &kept}, dir)
			require.NoError(t, err)
			require.Equal(t, tc.reason, res.Reason, res.Details.Output)
			require.Equal(t, tc.achieved, res.Achieved)
			var names []string
			for _, f := range res.Details.Failures {
				names = append(names, f.Name)
			}
			for _, want := range tc.failures {
				require.Contains(t, names, want)
			}
		})
	}
}

// applyChange writes (or removes) files under dir.
func applyChange(t *testing.T, dir string, change map[string]string) {
	t.Helper()
	for name, content := range change {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == removed {
			require.NoError(t, os.Remove(p))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// The Go project: Add is wrong, TestAdd fails and TestOther passes.
const (
	goCalcModule = "module example.com/calc\n\ngo 1.21\n"
	goCalcBuggy  = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
	goCalcFixed  = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
	goCalcTest   = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(1, 2); got != 3 {
		t.Fatalf("Add(1, 2) = %d, want 3", got)
	}
}
`
	goOtherTest = `package calc

import "testing"

func TestOther(t *testing.T) {
	if Add(2, 0) != 2 {
		t.Fatal("Add(2, 0) != 2")
	}
}
`
)

func goCalcFiles() map[string]string {
	return map[string]string{"go.mod": goCalcModule, "calc.go": goCalcBuggy, "calc_test.go": goCalcTest, "other_test.go": goOtherTest}
}

func TestGoTestIntegrity(t *testing.T) {
	t.Parallel()
	integritySuite{
		goal: goals.GoalGoTest, tools: []string{"go"}, files: goCalcFiles(),
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.go": goCalcFixed},
				achieved: true, reason: "go-test: all 2 tests passed",
			},
			{
				name: "deleted test", change: map[string]string{"calc_test.go": removed},
				reason:   "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"example.com/calc.TestAdd"},
			},
			{
				name:     "skipped test",
				change:   map[string]string{"calc_test.go": strings.Replace(goCalcTest, "{\n\tif", "{\n\tt.Skip(\"later\")\n\tif", 1)},
				reason:   "go-test: example.com/calc.TestAdd was skipped (it ran at the baseline)",
				failures: []string{"example.com/calc.TestAdd"},
			},
			{
				name:     "renamed test",
				change:   map[string]string{"calc.go": goCalcFixed, "calc_test.go": strings.Replace(goCalcTest, "TestAdd", "TestAddition", 1)},
				reason:   "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"example.com/calc.TestAdd"},
			},
			{
				name:   "zero tests",
				change: map[string]string{"calc_test.go": removed, "other_test.go": removed},
				reason: "go-test: no test ran, and a run without tests never reaches the goal; " +
					"2 tests of the baseline did not run (deleted or renamed?): example.com/calc.TestAdd, example.com/calc.TestOther",
			},
			{
				name: "new test", change: map[string]string{
					"calc.go":       goCalcFixed,
					"extra_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestExtra(t *testing.T) {}\n",
				},
				achieved: true, reason: "go-test: all 3 tests passed",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"calc_test.go": strings.Replace(goCalcTest, "!= 3", "!= -1", 1)},
				reason:   "go-test: protected test file calc_test.go was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"calc_test.go"},
			},
			{
				name: "weakened assertion, by default", protect: true,
				change:   map[string]string{"calc_test.go": strings.Replace(goCalcTest, "t.Fatalf", "t.Logf", 1)},
				reason:   "go-test: protected test file calc_test.go was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"calc_test.go"},
			},
			{
				name: "emptied test body, by default", protect: true,
				change: map[string]string{"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"},
				reason: "go-test: protected test file calc_test.go was changed (test files may not be changed: restore them and fix the code under test)",
			},
			{
				name: "fix and edited test, by default", protect: true,
				change: map[string]string{"calc.go": goCalcFixed, "other_test.go": strings.Replace(goOtherTest, "t.Fatal", "t.Log", 1)},
				reason: "go-test: protected test file other_test.go was changed (test files may not be changed: restore them and fix the code under test)",
			},
			{
				name: "genuine fix, by default", protect: true, change: map[string]string{"calc.go": goCalcFixed},
				achieved: true, reason: "go-test: all 2 tests passed",
			},
			{
				name:     "edited test, test edits allowed",
				change:   map[string]string{"calc_test.go": strings.Replace(goCalcTest, "!= 3", "!= -1", 1)},
				achieved: true, reason: "go-test: all 2 tests passed",
			},
			{
				name: "deleted test, by default", protect: true,
				change:   map[string]string{"calc_test.go": removed},
				reason:   "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?); protected test file calc_test.go was deleted (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"example.com/calc.TestAdd", "calc_test.go"},
			},
		},
	}.run(t)
}

// A deleted subtest, and the tests of a package that did not build at the
// baseline, are missed too.
func TestGoTestIntegrityFindsSubtestsAndTestsThatDidNotBuild(t *testing.T) {
	t.Parallel()
	const table = `package calc

import "testing"

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b, w int
	}{
		{"zero", 0, 0, 0},
		{"positive", 1, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Add(tc.a, tc.b); got != tc.w {
				t.Fatalf("got %d", got)
			}
		})
	}
}
`
	integritySuite{
		goal: goals.GoalGoTest, tools: []string{"go"},
		files: map[string]string{
			"go.mod": goCalcModule, "calc.go": goCalcBuggy, "calc_test.go": table,
			// Sum does not exist yet: the package's tests do not build.
			"sum/sum.go":      "package sum\n",
			"sum/sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2) != 3 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
		},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{
					"calc.go":    goCalcFixed,
					"sum/sum.go": "package sum\n\nfunc Sum(a, b int) int { return a + b }\n",
				},
				achieved: true, reason: "go-test: all 3 tests passed",
			},
			{
				name: "deleted table case", change: map[string]string{
					"calc_test.go": strings.Replace(table, "\t\t{\"positive\", 1, 2, 3},\n", "", 1),
					"sum/sum.go":   "package sum\n\nfunc Sum(a, b int) int { return a + b }\n",
				},
				reason:   "go-test: example.com/calc.TestAdd/positive was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"example.com/calc.TestAdd/positive"},
			},
			{
				name: "deleted test that did not build", change: map[string]string{
					"calc.go":         goCalcFixed,
					"sum/sum_test.go": removed,
				},
				reason:   "go-test: example.com/calc/sum.TestSum was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"example.com/calc/sum.TestSum"},
			},
		},
	}.run(t)
}

// The Python project: add is wrong, test_add fails and test_other passes.
const (
	pyCalcBuggy = "def add(a, b):\n    return a - b\n"
	pyCalcFixed = "def add(a, b):\n    return a + b\n"
	pyCalcTest  = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
	pyOtherTest = "from calc import add\n\n\ndef test_other():\n    assert add(2, 0) == 2\n"
)

func TestPytestIntegrity(t *testing.T) {
	t.Parallel()
	integritySuite{
		goal: goals.GoalPytest, tools: []string{"pytest"},
		files: map[string]string{"pytest.ini": "[pytest]\n", "calc.py": pyCalcBuggy, "test_calc.py": pyCalcTest, "test_other.py": pyOtherTest},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.py": pyCalcFixed},
				achieved: true, reason: "pytest: all 2 tests passed",
			},
			{
				name: "deleted test", change: map[string]string{"test_calc.py": removed},
				reason:   "pytest: test_calc.py::test_add was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"test_calc.py::test_add"},
			},
			{
				name:     "skipped test",
				change:   map[string]string{"test_calc.py": "import pytest\n" + strings.Replace(pyCalcTest, "def test_add", "@pytest.mark.skip(reason=\"later\")\ndef test_add", 1)},
				reason:   "pytest: test_calc.py::test_add was skipped (it ran at the baseline)",
				failures: []string{"test_calc.py::test_add"},
			},
			{
				name:     "test marked as an expected failure",
				change:   map[string]string{"test_calc.py": "import pytest\n" + strings.Replace(pyCalcTest, "def test_add", "@pytest.mark.xfail\ndef test_add", 1)},
				reason:   "pytest: test_calc.py::test_add was skipped (it ran at the baseline)",
				failures: []string{"test_calc.py::test_add"},
			},
			{
				name:     "renamed test",
				change:   map[string]string{"calc.py": pyCalcFixed, "test_calc.py": strings.Replace(pyCalcTest, "test_add", "test_addition", 1)},
				reason:   "pytest: test_calc.py::test_add was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"test_calc.py::test_add"},
			},
			{
				name:   "zero tests",
				change: map[string]string{"test_calc.py": removed, "test_other.py": removed},
				reason: "pytest: pytest collected no tests; " +
					"2 tests of the baseline did not run (deleted or renamed?): test_calc.py::test_add, test_other.py::test_other",
			},
			{
				name: "new test", change: map[string]string{"calc.py": pyCalcFixed, "test_more.py": "def test_more():\n    pass\n"},
				achieved: true, reason: "pytest: all 3 tests passed",
			},
			{
				name: "weakened assertion, by default", protect: true,
				change: map[string]string{"test_calc.py": strings.Replace(pyCalcTest, "assert add(1, 2) == 3", "assert add(1, 2) is not None", 1)},
				reason: "pytest: protected test file test_calc.py was changed (test files may not be changed: restore them and fix the code under test)",
			},
			{
				name: "emptied test body, by default", protect: true,
				change: map[string]string{"test_calc.py": "def test_add():\n    pass\n"},
				reason: "pytest: protected test file test_calc.py was changed (test files may not be changed: restore them and fix the code under test)",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"test_calc.py": strings.Replace(pyCalcTest, "== 3", "== -1", 1)},
				reason:   "pytest: protected test file test_calc.py was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"test_calc.py"},
			},
		},
	}.run(t)
}

// A test file that failed to collect at the baseline must run tests once
// it collects.
func TestPytestIntegrityFindsTestsThatDidNotCollect(t *testing.T) {
	t.Parallel()
	integritySuite{
		goal: goals.GoalPytest, tools: []string{"pytest"},
		files: map[string]string{
			"pytest.ini": "[pytest]\n", "calc.py": pyCalcFixed, "test_other.py": pyOtherTest,
			// total does not exist yet: the file fails to collect.
			"tests/test_total.py": "from calc import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
		},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.py": pyCalcFixed + "\n\ndef total(xs):\n    return sum(xs)\n"},
				achieved: true, reason: "pytest: all 2 tests passed",
			},
			{
				name: "deleted test file", change: map[string]string{"tests/test_total.py": removed},
				reason:   "pytest: tests/test_total.py could not run its tests at the baseline, and none of them ran now (tests deleted?)",
				failures: []string{"tests/test_total.py"},
			},
		},
	}.run(t)
}

// The Rust crate: add is wrong, the integration test adds fails, the unit
// test tests::other and the doc-test pass.
const (
	rustLibBuggy = "/// Adds.\n///\n/// ```\n/// assert_eq!(calc::add(2, 0), 2);\n/// ```\npub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n" +
		"#[cfg(test)]\nmod tests {\n    #[test]\n    fn other() {\n        assert_eq!(super::add(2, 0), 2);\n    }\n}\n"
	rustAddTest = "#[test]\nfn adds() {\n    assert_eq!(calc::add(1, 2), 3);\n}\n"
)

func TestCargoTestIntegrity(t *testing.T) {
	t.Parallel()
	// The fix moves the doc-test down a line: doc-tests are named without
	// their line numbers.
	fixed := strings.Replace(rustLibBuggy, "    a - b\n", "    // Fixed.\n    a + b\n", 1)
	fixed = strings.Replace(fixed, "/// Adds.\n", "/// Adds\n/// two numbers.\n", 1)
	integritySuite{
		goal: goals.GoalCargoTest, tools: []string{"cargo"},
		files: map[string]string{
			"Cargo.toml":   "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			"src/lib.rs":   rustLibBuggy,
			"tests/add.rs": rustAddTest,
		},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"src/lib.rs": fixed},
				achieved: true, reason: "cargo-test: all 3 tests passed",
			},
			{
				name: "deleted test", change: map[string]string{"tests/add.rs": removed},
				reason:   "cargo-test: adds was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"adds"},
			},
			{
				name:     "skipped test",
				change:   map[string]string{"tests/add.rs": "#[test]\n#[ignore]\n" + strings.TrimPrefix(rustAddTest, "#[test]\n")},
				reason:   "cargo-test: adds was skipped (it ran at the baseline)",
				failures: []string{"adds"},
			},
			{
				name:     "renamed test",
				change:   map[string]string{"src/lib.rs": fixed, "tests/add.rs": strings.Replace(rustAddTest, "fn adds", "fn adds_up", 1)},
				reason:   "cargo-test: adds was in the baseline but did not run (deleted or renamed?)",
				failures: []string{"adds"},
			},
			{
				name:   "zero tests",
				change: map[string]string{"tests/add.rs": removed, "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"},
				reason: "cargo-test: no test ran, and a run without tests never reaches the goal; " +
					"3 tests of the baseline did not run (deleted or renamed?): adds, src/lib.rs - add, tests::other",
			},
			{
				name: "new test", change: map[string]string{"src/lib.rs": fixed, "tests/more.rs": "#[test]\nfn more() {}\n"},
				achieved: true, reason: "cargo-test: all 4 tests passed",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"tests/add.rs": strings.Replace(rustAddTest, "3);", "-1);", 1)},
				reason:   "cargo-test: protected test file tests/add.rs was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"tests/add.rs"},
			},
		},
	}.run(t)
}

// The npm package, tested with node's test runner: add is wrong, the test
// "adds" fails and "other" passes. npm test names no tests: the counts
// are compared.
const (
	jsCalcBuggy = "exports.add = (a, b) => a - b;\n"
	jsCalcFixed = "exports.add = (a, b) => a + b;\n"
	jsCalcTest  = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./calc');\n\n" +
		"test('adds', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n"
	jsOtherTest = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./calc');\n\n" +
		"test('other', () => {\n  assert.strictEqual(add(2, 0), 2);\n});\n"
)

func TestNpmTestIntegrity(t *testing.T) {
	t.Parallel()
	integritySuite{
		goal: goals.GoalNpmTest, tools: []string{"npm", "node"},
		files: map[string]string{
			"package.json": `{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}`,
			"calc.js":      jsCalcBuggy, "calc.test.js": jsCalcTest, "other.test.js": jsOtherTest,
		},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.js": jsCalcFixed},
				achieved: true, reason: "npm-test: all 2 tests passed",
			},
			{
				name: "deleted test", change: map[string]string{"calc.test.js": removed},
				reason: "npm-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name:   "skipped test",
				change: map[string]string{"calc.test.js": strings.Replace(jsCalcTest, "test('adds', () =>", "test('adds', { skip: true }, () =>", 1)},
				reason: "npm-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?); 1 test skipped, 0 at the baseline",
			},
			{
				// npm test names no tests: a renamed test that still runs
				// is not told apart; one that no longer runs is.
				name:   "renamed test file",
				change: map[string]string{"calc.js": jsCalcFixed, "calc.test.js": removed, "calc.check.js": jsCalcTest},
				reason: "npm-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name:   "zero tests",
				change: map[string]string{"calc.test.js": removed, "other.test.js": removed},
				reason: "npm-test: no test ran, and a run without tests never reaches the goal; 0 tests ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name: "new test", change: map[string]string{"calc.js": jsCalcFixed, "more.test.js": "const test = require('node:test');\n\ntest('more', () => {});\n"},
				achieved: true, reason: "npm-test: all 3 tests passed",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"calc.test.js": strings.Replace(jsCalcTest, "3);", "-1);", 1)},
				reason:   "npm-test: protected test file calc.test.js was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"calc.test.js"},
			},
		},
	}.run(t)
}

// The Bun project: the same as the npm one, in bun's own test runner.
const (
	bunCalcTest  = "import { test, expect } from \"bun:test\";\nimport { add } from \"./calc\";\n\ntest(\"adds\", () => {\n  expect(add(1, 2)).toBe(3);\n});\n"
	bunOtherTest = "import { test, expect } from \"bun:test\";\nimport { add } from \"./calc\";\n\ntest(\"other\", () => {\n  expect(add(2, 0)).toBe(2);\n});\n"
)

func TestBunTestIntegrity(t *testing.T) {
	t.Parallel()
	integritySuite{
		goal: goals.GoalBunTest, tools: []string{"bun"},
		files: map[string]string{
			"package.json": `{"name": "calc"}`, "bun.lock": "",
			"calc.ts": "export const add = (a: number, b: number) => a - b;\n", "calc.test.ts": bunCalcTest, "other.test.ts": bunOtherTest,
		},
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.ts": "export const add = (a: number, b: number) => a + b;\n"},
				achieved: true, reason: "bun-test: all 2 tests passed",
			},
			{
				name: "deleted test", change: map[string]string{"calc.test.ts": removed},
				reason: "bun-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name:   "skipped test",
				change: map[string]string{"calc.test.ts": strings.Replace(bunCalcTest, "test(\"adds\"", "test.skip(\"adds\"", 1)},
				reason: "bun-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?); 1 test skipped, 0 at the baseline",
			},
			{
				name:   "renamed test file",
				change: map[string]string{"calc.ts": "export const add = (a: number, b: number) => a + b;\n", "calc.test.ts": removed, "calc.check.ts": bunCalcTest},
				reason: "bun-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"calc.test.ts": strings.Replace(bunCalcTest, "toBe(3)", "toBe(-1)", 1)},
				reason:   "bun-test: protected test file calc.test.ts was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"calc.test.ts"},
			},
		},
	}.run(t)
}

// make test running go test -v: the counts of its output are compared.
func TestMakeTestIntegrity(t *testing.T) {
	t.Parallel()
	files := goCalcFiles()
	files["Makefile"] = ".PHONY: test\ntest:\n\tgo test -v ./...\n"
	integritySuite{
		goal: goals.GoalMakeTest, tools: []string{"make", "go"}, files: files,
		cases: []integrityCase{
			{
				name: "genuine fix", change: map[string]string{"calc.go": goCalcFixed},
				achieved: true, reason: "make-test: make test exited 0",
			},
			{
				name: "deleted test", change: map[string]string{"calc_test.go": removed},
				reason: "make-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name:   "skipped test",
				change: map[string]string{"calc_test.go": strings.Replace(goCalcTest, "{\n\tif", "{\n\tt.Skip(\"later\")\n\tif", 1)},
				reason: "make-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?); 1 test skipped, 0 at the baseline",
			},
			{
				name:   "renamed test",
				change: map[string]string{"calc.go": goCalcFixed, "calc_test.go": strings.Replace(goCalcTest, "func TestAdd", "func checkAdd", 1)},
				reason: "make-test: 1 test ran, 2 at the baseline (tests deleted or no longer run?)",
			},
			{
				name:   "zero tests",
				change: map[string]string{"calc_test.go": removed, "other_test.go": removed},
				reason: "make-test: the output no longer shows test counts (it did at the baseline)",
			},
			{
				name: "new test", change: map[string]string{
					"calc.go":       goCalcFixed,
					"extra_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestExtra(t *testing.T) {}\n",
				},
				achieved: true, reason: "make-test: make test exited 0",
			},
			{
				name: "edited test, by default", protect: true,
				change:   map[string]string{"calc_test.go": strings.Replace(goCalcTest, "!= 3", "!= -1", 1)},
				reason:   "make-test: protected test file calc_test.go was changed (test files may not be changed: restore them and fix the code under test)",
				failures: []string{"calc_test.go"},
			},
		},
	}.run(t)
}

func TestMakeTestZeroTestsNeverAchieved(t *testing.T) {
	t.Parallel()
	requireMake(t)
	dir := project(t, map[string]string{"Makefile": "test:\n\t@echo '0 passed, 0 failed'\n"})
	res := check(t, newGoal(t, goals.GoalMakeTest, goals.Config{}), dir)
	require.False(t, res.Achieved)
	require.Equal(t, "make-test: no test ran, and a run without tests never reaches the goal", res.Reason)
}

func TestGoTestZeroTestsNeverAchieved(t *testing.T) {
	t.Parallel()
	requireGo(t)
	dir := project(t, map[string]string{"go.mod": goCalcModule, "calc.go": goCalcFixed})
	g := newGoal(t, goals.GoalGoTest, goals.Config{})
	base, err := g.(goals.Baseliner).Baseline(context.Background(), dir)
	require.NoError(t, err)
	require.Zero(t, base.Ran)
	for _, st := range []goals.State{{}, {RunID: "run"}, {RunID: "run", Baseline: base}} {
		res, err := g.Check(context.Background(), st, dir)
		require.NoError(t, err)
		require.False(t, res.Achieved)
		require.Equal(t, "go-test: no test ran, and a run without tests never reaches the goal", res.Reason)
	}
}

// Without a baseline in State, a goal takes one at the first check of the
// run and holds later checks of that run to it.
func TestTestGoalTakesBaselineAtFirstCheckWithoutOne(t *testing.T) {
	t.Parallel()
	requireGo(t)
	ctx := context.Background()
	dir := project(t, goCalcFiles())
	g := newGoal(t, goals.GoalGoTest, goals.Config{AllowTestEdits: true})
	st := goals.State{RunID: "run-1", Iteration: 1, MaxIterations: 10}

	res, err := g.Check(ctx, st, dir)
	require.NoError(t, err)
	require.Equal(t, "go-test: 1 of 2 tests failed: example.com/calc.TestAdd", res.Reason)

	applyChange(t, dir, map[string]string{"calc_test.go": removed})
	st.Iteration = 2
	res, err = g.Check(ctx, st, dir)
	require.NoError(t, err)
	require.False(t, res.Achieved)
	require.Equal(t, "go-test: example.com/calc.TestAdd was in the baseline but did not run (deleted or renamed?)", res.Reason)

	// Another run starts afresh.
	res, err = g.Check(ctx, goals.State{RunID: "run-2"}, dir)
	require.NoError(t, err)
	require.True(t, res.Achieved, res.Reason)
}

func TestTestGoalRejectsAnotherGoalsBaseline(t *testing.T) {
	t.Parallel()
	g := newGoal(t, goals.GoalCargoTest, goals.Config{})
	_, err := g.Check(context.Background(), goals.State{Baseline: &goals.Baseline{Goal: goals.GoalGoTest}}, t.TempDir())
	var se *goals.SettingError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "State.Baseline", se.Setting)
}

func TestIsTestFile(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"calc_test.go":             true,
		"pkg/calc_test.go":         true,
		"calc.go":                  false,
		"test_calc.py":             true,
		"pkg/calc_test.py":         true,
		"conftest.py":              true,
		"calc.py":                  false,
		"testing.py":               false,
		"calc.test.js":             true,
		"src/calc.spec.tsx":        true,
		"calc.js":                  false,
		"latest.js":                false,
		"tests/add.rs":             true,
		"tests/fixtures/data.json": true,
		"test/helper.js":           true,
		"src/__tests__/calc.js":    true,
		"testdata/golden.txt":      true,
		"pkg/testdata/in.txt":      true,
		"src/lib.rs":               false,
		"contest/x.py":             false,
	}
	for name, want := range tests {
		require.Equal(t, want, goals.IsTestFile(name), name)
	}
}

func TestGoTestBaselineRecordsTestsAndTestFiles(t *testing.T) {
	t.Parallel()
	requireGo(t)
	dir := project(t, goCalcFiles())
	g := newGoal(t, goals.GoalGoTest, goals.Config{})
	base, err := g.(goals.Baseliner).Baseline(context.Background(), dir)
	require.NoError(t, err)
	require.Len(t, base.Files["calc_test.go"], 64, "a hex SHA-256")
	require.Len(t, base.Files, 2)
	base.Files = nil
	require.Equal(t, &goals.Baseline{
		Goal:    goals.GoalGoTest,
		Named:   true,
		Tests:   map[string][]string{"example.com/calc": {"example.com/calc.TestAdd", "example.com/calc.TestOther"}},
		Broken:  []string{"example.com/calc"}, // it failed
		Counted: true,
		Ran:     2,
		Summary: "go-test: 1 of 2 tests failed: example.com/calc.TestAdd",
	}, base)
	require.Equal(t, 2, base.NumTests())
}

// A runner that stops recording its tests fails the goal: it may have been
// made to hide them.
func TestPytestWithoutItsRecordAfterANamedBaselineIsNotAchieved(t *testing.T) {
	// The fake pytest records two passing tests while RECORD is set.
	script := `[ "$1" = -rA ] || exit 99
if [ -n "$RECORD" ]; then
  printf '["started", ""]\n["passed", "t.py::a"]\n["passed", "t.py::b"]\n' > "$AGENTGRAPH_TEST_RECORD"
fi
cat <<'OUT'
=========================== short test summary info ============================
PASSED t.py::a
PASSED t.py::b
============================== 2 passed in 0.01s ===============================
OUT
`
	fakeBin(t, map[string]string{"pytest": script})
	dir := project(t, map[string]string{"pytest.ini": ""})
	// Commands get only the variables they are given.
	g := newGoal(t, goals.GoalPytest, goals.Config{TestOptions: []tools.Option{tools.WithEnv("RECORD")}})
	t.Setenv("RECORD", "1")
	base, err := g.(goals.Baseliner).Baseline(context.Background(), dir)
	require.NoError(t, err)
	require.True(t, base.Named)
	require.Equal(t, map[string][]string{"t.py": {"t.py::a", "t.py::b"}}, base.Tests)

	res, err := g.Check(context.Background(), goals.State{Baseline: base}, dir)
	require.NoError(t, err)
	require.True(t, res.Achieved, res.Reason)

	t.Setenv("RECORD", "")
	res, err = g.Check(context.Background(), goals.State{Baseline: base}, dir)
	require.NoError(t, err)
	require.False(t, res.Achieved)
	require.Equal(t, "pytest: the test run no longer records which tests ran (it did at the baseline)", res.Reason)
}
