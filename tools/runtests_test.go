package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

const goModule = "module example.com/m\n\ngo 1.21\n"

const goTests = `package m

import "testing"

func TestOK(t *testing.T)   {}
func TestBad(t *testing.T)  { t.Log("some log"); t.Error("boom") }
func TestSkip(t *testing.T) { t.Skip("later") }
func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) { t.Fatal("sub boom") })
}
`

func requireGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
}

func TestRunTestsGoReportsPassFailSkip(t *testing.T) {
	t.Parallel()
	requireGo(t)
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"go.mod": goModule, "m_test.go": goTests})

	report, err := RunTests(context.Background(), ws, "")
	require.NoError(t, err)
	require.Equal(t, FrameworkGo, report.Framework)
	require.Equal(t, 1, report.ExitCode)
	require.Equal(t, [3]int{2, 2, 1}, [3]int{report.Passed, report.Failed, report.Skipped}, report.Output)
	require.Len(t, report.Failures, 2)
	require.Equal(t, "example.com/m.TestBad", report.Failures[0].Name)
	elapsed := regexp.MustCompile(`\([0-9.]+s\)`)
	require.Equal(t, "    m_test.go:6: some log\n    m_test.go:6: boom\n--- FAIL: TestBad (X)\n",
		elapsed.ReplaceAllString(report.Failures[0].Output, "(X)"))
	require.Equal(t, "example.com/m.TestSub/b", report.Failures[1].Name)
	require.Contains(t, report.Failures[1].Output, "sub boom")
	require.Contains(t, report.Output, "FAIL\texample.com/m")
	require.NotContains(t, report.Output, "=== RUN", "progress noise is left out")
}

func TestRunTestsGoReportsBuildFailures(t *testing.T) {
	t.Parallel()
	requireGo(t)
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"go.mod":              goModule,
		"ok/ok_test.go":       "package ok\nimport \"testing\"\nfunc TestOK(t *testing.T) {}\n",
		"broken/b.go":         "package broken\n\nfunc X() { undefined() }\n",
		"broken/b_test.go":    "package broken\nimport \"testing\"\nfunc TestX(t *testing.T) {}\n",
		"other/unrelated.txt": "",
	})
	report, err := RunTests(context.Background(), ws, FrameworkGo)
	require.NoError(t, err)
	require.NotZero(t, report.ExitCode)
	require.Equal(t, 1, report.Passed)
	require.Equal(t, 1, report.Failed)
	require.Len(t, report.Failures, 1)
	require.Equal(t, "example.com/m/broken", report.Failures[0].Name)
	require.Contains(t, report.Failures[0].Output, "undefined: undefined")
}

func TestRunTestsToolRunsPathAndReturnsJSON(t *testing.T) {
	t.Parallel()
	requireGo(t)
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{
		"go.mod":         goModule,
		"m_test.go":      goTests,
		"sub/ok_test.go": "package sub\nimport \"testing\"\nfunc TestOne(t *testing.T) {}\nfunc TestTwo(t *testing.T) {}\n",
	})
	out, err := call(t, RunTestsTool(ws), RunTestsArgs{Path: "sub"})
	require.NoError(t, err)
	var report TestReport
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	want := TestReport{Framework: FrameworkGo, Passed: 2, Failures: []TestFailure{}}
	require.Empty(t, cmp.Diff(want, report, cmpopts.IgnoreFields(TestReport{}, "Output")))
}

// fakeBin writes executable scripts into a directory put first on PATH.
// Tests using it cannot run in parallel.
func fakeBin(t *testing.T, scripts map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body), 0o755))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runFake runs RunTests, detecting the framework, on a new workspace
// holding files, with the fake runners of scripts first on PATH (see
// fakeBin). Tests using it cannot run in parallel.
func runFake(t *testing.T, files, scripts map[string]string, opts ...Option) *TestReport {
	t.Helper()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), files)
	fakeBin(t, scripts)
	report, err := RunTests(context.Background(), ws, "", opts...)
	require.NoError(t, err)
	return report
}

// pytestRA is pytest 8 output for `pytest -rA` with a passing, a failing,
// a skipped and an erroring test.
const pytestRA = `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: /tmp/proj
configfile: pyproject.toml
collected 4 items

tests/test_a.py .FsE                                                     [100%]

==================================== ERRORS ====================================
__________________________ ERROR at setup of test_err __________________________

    @pytest.fixture
    def broken():
>       raise RuntimeError("fixture broke")
E       RuntimeError: fixture broke

tests/test_a.py:6: RuntimeError
=================================== FAILURES ===================================
___________________________________ test_bad ___________________________________

    def test_bad():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:12: AssertionError
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_ok
SKIPPED [1] tests/test_a.py:15: not now
ERROR tests/test_a.py::test_err - RuntimeError: fixture broke
FAILED tests/test_a.py::test_bad - assert 1 == 2
============= 1 failed, 1 passed, 1 skipped, 1 error in 0.05s =============
`

func TestRunTestsPytestParsesSummaryWithoutJSONReportPlugin(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"pyproject.toml": "", "tests/test_a.py": ""})
	argsLog := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_ARGS_LOG", argsLog)
	fakeBin(t, map[string]string{"pytest": `
echo "$PWD $*" >> "$FAKE_ARGS_LOG"
for a in "$@"; do
  case "$a" in --json-report*)
    echo "ERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]" >&2
    echo "pytest: error: unrecognized arguments: --json-report --json-report-file=x" >&2
    exit 4;;
  esac
done
cat <<'EOF'
` + pytestRA + `EOF
exit 1
`})
	// The fake runner logs its calls outside the workspace, through an
	// environment variable: unsandboxed, with the variable passed on.
	report, err := RunTests(context.Background(), ws, "", WithSandbox(SandboxOff), WithEnv("FAKE_ARGS_LOG"))
	require.NoError(t, err)
	want := &TestReport{
		Framework: FrameworkPytest, Passed: 1, Failed: 2, Skipped: 1, ExitCode: 1,
		Failures: []TestFailure{
			{Name: "tests/test_a.py::test_err", Output: "\n    @pytest.fixture\n    def broken():\n>       raise RuntimeError(\"fixture broke\")\nE       RuntimeError: fixture broke\n\ntests/test_a.py:6: RuntimeError\n"},
			{Name: "tests/test_a.py::test_bad", Output: "\n    def test_bad():\n>       assert 1 == 2\nE       assert 1 == 2\n\ntests/test_a.py:12: AssertionError\n"},
		},
	}
	require.Empty(t, cmp.Diff(want, report, cmpopts.IgnoreFields(TestReport{}, "Output")))
	require.Contains(t, report.Output, "short test summary info")

	log, err := os.ReadFile(argsLog)
	require.NoError(t, err)
	calls := strings.Split(strings.TrimSpace(string(log)), "\n")
	require.Len(t, calls, 2, "one try with --json-report, one without")
	require.Contains(t, calls[0], "--json-report")
	require.Equal(t, ws.Root()+" -rA", calls[1])
}

func TestRunTestsPytestUsesJSONReport(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"pytest.ini": "", "test_a.py": ""})
	fakeBin(t, map[string]string{"pytest": `
for a in "$@"; do
  case "$a" in --json-report-file=*) file="${a#--json-report-file=}";; esac
done
[ -n "$file" ] || { echo "no report file" >&2; exit 3; }
cat > "$file" <<'EOF'
{"created": 1700000000.0, "duration": 0.1, "exitcode": 1, "root": "/tmp/proj", "environment": {},
 "summary": {"passed": 1, "failed": 1, "skipped": 1, "total": 3, "collected": 3},
 "collectors": [{"nodeid": "", "outcome": "passed", "result": []}],
 "tests": [
  {"nodeid": "test_a.py::test_ok", "lineno": 1, "outcome": "passed", "keywords": [],
   "setup": {"duration": 0.0, "outcome": "passed"}, "call": {"duration": 0.0, "outcome": "passed"},
   "teardown": {"duration": 0.0, "outcome": "passed"}},
  {"nodeid": "test_a.py::test_bad", "lineno": 4, "outcome": "failed", "keywords": [],
   "setup": {"duration": 0.0, "outcome": "passed"},
   "call": {"duration": 0.0, "outcome": "failed",
            "crash": {"path": "/tmp/proj/test_a.py", "lineno": 5, "message": "assert 1 == 2"},
            "stdout": "debug print\n",
            "longrepr": "def test_bad():\n>       assert 1 == 2\nE       assert 1 == 2\n\ntest_a.py:5: AssertionError"},
   "teardown": {"duration": 0.0, "outcome": "passed"}},
  {"nodeid": "test_a.py::test_skip", "lineno": 7, "outcome": "skipped", "keywords": [],
   "setup": {"duration": 0.0, "outcome": "skipped", "longrepr": "('/tmp/proj/test_a.py', 8, 'Skipped: nope')"},
   "teardown": {"duration": 0.0, "outcome": "passed"}}
 ]}
EOF
echo "test_a.py .Fs"
echo "===== 1 failed, 1 passed, 1 skipped in 0.01s ====="
exit 1
`})
	report, err := RunTests(context.Background(), ws, "pytest")
	require.NoError(t, err)
	want := &TestReport{
		Framework: FrameworkPytest, Passed: 1, Failed: 1, Skipped: 1, ExitCode: 1,
		Failures: []TestFailure{{
			Name:   "test_a.py::test_bad",
			Output: "def test_bad():\n>       assert 1 == 2\nE       assert 1 == 2\n\ntest_a.py:5: AssertionError\n--- captured stdout ---\ndebug print\n",
		}},
		Output: "test_a.py .Fs\n===== 1 failed, 1 passed, 1 skipped in 0.01s =====\n",
	}
	require.Empty(t, cmp.Diff(want, report))
}

const cargoOutput = `
running 4 tests
test tests::ignored_one ... ignored
test tests::it_works ... ok
test tests::other ... ok
test tests::it_fails ... FAILED

failures:

---- tests::it_fails stdout ----
thread 'tests::it_fails' panicked at src/lib.rs:10:9:
assertion ` + "`left == right`" + ` failed
  left: 1
 right: 2
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace


failures:
    tests::it_fails

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests demo

running 1 test
test src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.15s

`

func TestRunTestsCargoParsesResults(t *testing.T) {
	report := runFake(t, map[string]string{"Cargo.toml": "[package]\nname = \"demo\"\n"}, map[string]string{"cargo": `
[ "$1" = test ] || exit 2
echo "   Compiling demo v0.1.0 (/tmp/demo)" >&2
echo "    Finished test [unoptimized + debuginfo] target(s) in 0.50s" >&2
cat <<'EOF'
` + cargoOutput + `EOF
echo "error: test failed, to rerun pass '--lib'" >&2
exit 101
`})
	want := &TestReport{
		Framework: FrameworkCargo, Passed: 3, Failed: 1, Skipped: 1, ExitCode: 101,
		Failures: []TestFailure{{
			Name: "tests::it_fails",
			Output: "thread 'tests::it_fails' panicked at src/lib.rs:10:9:\nassertion `left == right` failed\n" +
				"  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
		}},
	}
	require.Empty(t, cmp.Diff(want, report, cmpopts.IgnoreFields(TestReport{}, "Output")))
	require.Contains(t, report.Output, "Compiling demo")
}

func TestRunTestsCargoCompileErrorIsAFailure(t *testing.T) {
	report := runFake(t, map[string]string{"Cargo.toml": ""}, map[string]string{"cargo": `
echo "error[E0425]: cannot find value 'x' in this scope" >&2
exit 101
`})
	require.Equal(t, 1, report.Failed)
	require.Equal(t, []TestFailure{{Name: "cargo test run", Output: "error[E0425]: cannot find value 'x' in this scope\n"}}, report.Failures)
}

func TestRunTestsBunParsesResults(t *testing.T) {
	report := runFake(t, map[string]string{"package.json": "{}", "bun.lock": ""}, map[string]string{"bun": `
[ "$1" = test ] || exit 2
[ "$CI" = true ] || exit 3
cat >&2 <<'EOF'
bun test v1.1.30 (7996d06b)

math.test.ts:
(pass) math > adds [0.10ms]
error: expect(received).toBe(expected)

Expected: 4
Received: 3

      at <anonymous> (/tmp/proj/math.test.ts:8:15)
(fail) math > subtracts [0.20ms]
(skip) math > later

 1 pass
 1 skip
 1 fail
 2 expect() calls
Ran 3 tests across 1 files. [12.00ms]
EOF
exit 1
`})
	want := &TestReport{
		Framework: FrameworkBun, Passed: 1, Failed: 1, Skipped: 1, ExitCode: 1,
		Failures: []TestFailure{{
			Name:   "math > subtracts",
			Output: "error: expect(received).toBe(expected)\n\nExpected: 4\nReceived: 3\n\n      at <anonymous> (/tmp/proj/math.test.ts:8:15)",
		}},
	}
	require.Empty(t, cmp.Diff(want, report, cmpopts.IgnoreFields(TestReport{}, "Output")))
}

func TestRunTestsNpmParsesJestResults(t *testing.T) {
	report := runFake(t, map[string]string{"package.json": `{"scripts":{"test":"jest"}}`}, map[string]string{"npm": `
[ "$1" = test ] || exit 2
printf '\n> proj@1.0.0 test\n> jest\n\n'
cat >&2 <<'EOF'
FAIL ./sum.test.js
  sum
    ✓ adds (2 ms)
    ✕ adds wrong (3 ms)
    ○ skipped later

  ● sum › adds wrong

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 3

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 skipped, 1 passed, 3 total
Snapshots:   0 total
Time:        0.512 s
Ran all test suites.
EOF
exit 1
`})
	want := &TestReport{
		Framework: FrameworkNpm, Passed: 1, Failed: 1, Skipped: 1, ExitCode: 1,
		Failures: []TestFailure{{
			Name:   "sum › adds wrong",
			Output: "expect(received).toBe(expected) // Object.is equality\n\n    Expected: 4\n    Received: 3",
		}},
	}
	require.Empty(t, cmp.Diff(want, report, cmpopts.IgnoreFields(TestReport{}, "Output")))
}

func TestRunTestsMissingRunnerIsAnError(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"Cargo.toml": ""})
	t.Setenv("PATH", t.TempDir())
	_, err := RunTests(context.Background(), ws, "")
	require.ErrorContains(t, err, "cargo not found")
}

func TestRunTestsTimeoutIsReportedAsFailure(t *testing.T) {
	report := runFake(t, map[string]string{"Cargo.toml": ""}, map[string]string{"cargo": "echo running; exec sleep 60\n"},
		WithTestTimeout(300*time.Millisecond))
	require.Equal(t, -1, report.ExitCode)
	require.Equal(t, 1, report.Failed)
	require.Equal(t, "timeout", report.Failures[0].Name)
}

func TestRunTestsCancelledContextReturnsContextError(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"Cargo.toml": ""})
	fakeBin(t, map[string]string{"cargo": "exec sleep 60\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RunTests(ctx, ws, "")
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunTestsRejectsUnknownOrUndetectableFramework(t *testing.T) {
	t.Parallel()
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"README": ""})
	_, err := RunTests(context.Background(), ws, "")
	require.ErrorContains(t, err, "cannot detect")
	_, err = RunTests(context.Background(), ws, "maven")
	require.ErrorContains(t, err, "unknown framework")
}

func TestDetectFramework(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		start string
		want  string
		dir   string
	}{
		{"go.mod", map[string]string{"go.mod": ""}, "", FrameworkGo, ""},
		{"pyproject", map[string]string{"pyproject.toml": ""}, "", FrameworkPytest, ""},
		{"pytest.ini", map[string]string{"pytest.ini": ""}, "", FrameworkPytest, ""},
		{"tests dir with python", map[string]string{"tests/test_x.py": ""}, "", FrameworkPytest, ""},
		{"Cargo.toml with tests dir", map[string]string{"Cargo.toml": "", "tests/it.rs": ""}, "", FrameworkCargo, ""},
		{"package.json", map[string]string{"package.json": ""}, "", FrameworkNpm, ""},
		{"package.json with bun.lock", map[string]string{"package.json": "", "bun.lock": ""}, "", FrameworkBun, ""},
		{"package.json with bun.lockb", map[string]string{"package.json": "", "bun.lockb": ""}, "", FrameworkBun, ""},
		{"go.mod wins over package.json", map[string]string{"go.mod": "", "package.json": ""}, "", FrameworkGo, ""},
		{"nearest marker from subdir", map[string]string{"go.mod": "", "web/package.json": "", "web/src/a.js": ""}, "web/src", FrameworkNpm, "web"},
		{"marker in ancestor", map[string]string{"go.mod": "", "pkg/a/a.go": ""}, "pkg/a", FrameworkGo, ""},
		{"tests dir without python", map[string]string{"tests/data.txt": ""}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWorkspace(t)
			writeFiles(t, ws.Root(), tt.files)
			fw, dir := detectFramework(ws.Root(), filepath.Join(ws.Root(), tt.start))
			require.Equal(t, tt.want, fw)
			if tt.want != "" {
				require.Equal(t, filepath.Join(ws.Root(), tt.dir), dir)
			}
		})
	}
}

func TestParsersHandleOtherJSReporters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		output                  string
		passed, failed, skipped int
	}{
		{"vitest", " ✓ a.test.ts (2)\n\n Test Files  1 passed (1)\n      Tests  1 failed | 2 passed | 1 skipped (4)\n", 2, 1, 1},
		{"mocha", "  3 passing (10ms)\n  1 failing\n  2 pending\n", 3, 1, 2},
		{"node test runner", "ℹ tests 3\nℹ pass 2\nℹ fail 1\nℹ skipped 0\n", 2, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newJSParser(nil)
			for _, l := range strings.Split(tt.output, "\n") {
				p.line(l)
			}
			var r TestReport
			p.finish(&r)
			require.Equal(t, [3]int{tt.passed, tt.failed, tt.skipped}, [3]int{r.Passed, r.Failed, r.Skipped})
		})
	}
}

func TestGoParserCountsTestThatDiedAsFailed(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestPanics"}`,
		`{"Action":"output","Package":"p","Test":"TestPanics","Output":"panic: oops\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":0.01}`,
		`not json at all`,
	}
	var human strings.Builder
	p := newGoTestParser(&human)
	for _, l := range lines {
		p.line(l)
	}
	r := TestReport{}
	p.finish(&r)
	require.Equal(t, 1, r.Failed)
	require.Equal(t, []TestFailure{{Name: "p.TestPanics", Output: "panic: oops\n"}}, r.Failures)
	require.Equal(t, "panic: oops\nFAIL\tp\t0.01s\nnot json at all\n", human.String())
}

func TestRunTestsPytestNotInstalledIsAnError(t *testing.T) {
	ws := newTestWorkspace(t)
	writeFiles(t, ws.Root(), map[string]string{"pytest.ini": ""})
	fakeBin(t, map[string]string{"python3": `
echo "/usr/bin/python3: No module named pytest" >&2
exit 1
`})
	// Hide any real pytest: PATH holds only the fake python3 and bash.
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	t.Setenv("PATH", strings.Split(os.Getenv("PATH"), string(os.PathListSeparator))[0]+string(os.PathListSeparator)+filepath.Dir(bash))
	if _, err := exec.LookPath("pytest"); err == nil {
		t.Skip("a pytest executable lives next to bash")
	}
	_, err = RunTests(context.Background(), ws, "")
	require.ErrorContains(t, err, "pytest is not installed")
}
