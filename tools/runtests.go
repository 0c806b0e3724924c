package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/internal/filetree"
)

const (
	// maxFailureChars caps TestFailure.Output.
	maxFailureChars = 2000
	// maxFailures caps TestReport.Failures.
	maxFailures = 50
	// maxParsedLineBytes bounds one line of test output fed to a parser.
	maxParsedLineBytes = 1 << 20
)

// Test frameworks supported by RunTests.
const (
	FrameworkGo     = "go"
	FrameworkPytest = "pytest"
	FrameworkCargo  = "cargo"
	FrameworkNpm    = "npm"
	FrameworkBun    = "bun"
)

// TestReport is the structured result of a test run.
type TestReport struct {
	// Framework is the framework that ran: go, pytest, cargo, npm or bun.
	Framework string `json:"framework"`
	// Passed, Failed and Skipped count tests. Errors (pytest), build
	// failures and failed runs without a parsable result count as failed.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Failures describes failed tests, at most 50 of them.
	Failures []TestFailure `json:"failures"`
	// ExitCode is the test command's exit code (-1 if it was killed).
	ExitCode int `json:"exit_code"`
	// Output is the run's human-readable output, capped at the output
	// limit (WithOutputLimit) keeping head and tail.
	Output string `json:"output"`
}

// TestFailure is one failed test.
type TestFailure struct {
	// Name identifies the test, e.g. "example.com/pkg.TestFoo" or
	// "tests/test_x.py::test_y".
	Name string `json:"name"`
	// Output is the test's output, capped at 2,000 characters.
	Output string `json:"output"`
}

// RunTestsArgs are the arguments of the run_tests tool.
type RunTestsArgs struct {
	// Framework selects the test runner; empty means auto-detect.
	Framework string `json:"framework,omitempty" jsonschema:"enum=go,enum=pytest,enum=cargo,enum=npm,enum=bun" jsonschema_description:"Test framework. Default: detected from go.mod, pyproject.toml/pytest.ini/tests, Cargo.toml or package.json."`
	// Path is the directory (or file) to test; empty means the root.
	Path string `json:"path,omitempty" jsonschema_description:"Directory or test file to run, relative to the workspace root. Default: the whole workspace."`
}

// RunTestsTool returns the run_tests tool, which runs the project's tests
// (see RunTests) and returns the TestReport as JSON.
func RunTestsTool(ws *Workspace, opts ...Option) Tool {
	cfg := newConfig(opts)
	return New(
		"run_tests",
		"Run the project's tests and return a JSON report with the numbers of passed, failed and skipped tests, "+
			"the failing tests with their output, the exit code and the (truncated) output. "+
			"The framework (go, pytest, cargo, npm, bun) is detected automatically unless given. "+
			sandboxSentence(cfg),
		func(ctx context.Context, args RunTestsArgs) (string, error) {
			report, _, err := runTests(ctx, ws, cfg, args.Framework, args.Path, nil)
			if err != nil {
				return "", err
			}
			out, err := json.MarshalIndent(report, "", "  ")
			if err != nil {
				return "", fmt.Errorf("run_tests: %w", err)
			}
			return string(out), nil
		},
	)
}

// RunTests runs the tests of the project at the workspace root and parses
// the result.
//
// framework is one of FrameworkGo, FrameworkPytest, FrameworkCargo,
// FrameworkNpm or FrameworkBun, or empty to detect it: go.mod → go;
// pyproject.toml, pytest.ini, setup.py, conftest.py or a tests directory
// holding .py files → pytest; Cargo.toml → cargo; package.json → bun if
// bun.lock/bun.lockb is present, else npm. The commands are `go test -json
// ./...`, `pytest -rA` (with --json-report when the pytest-json-report
// plugin is installed), `cargo test`, `npm test` and `bun test`; npm and bun
// run with CI=true so that watchers stay off.
//
// Failing tests are a normal result. An error is returned when the runner
// cannot be started, and ctx.Err() when ctx is done. When the run exceeds
// WithTestTimeout (default 10 min) it is killed and reported as a failure.
//
// The tests are code a model may have written, so they run confined as
// bash_exec's commands are (WithSandbox, WithNetwork, WithReadOnlyPaths,
// WithWritablePaths apply): in the bubblewrap sandbox where the machine
// has one, seeing the workspace, the system directories, the runner's own
// installation (the directory below HOME holding it, such as ~/.cargo or
// ~/.pyenv, and rustup's toolchains for cargo), and Go's toolchain and
// module cache read-only (see WithGoCaches), with the writable build
// caches of the cache directory (see WithCacheDir), so that a second run
// of unchanged code reuses what the first compiled; with SandboxRequired and no
// sandbox nothing runs and the error wraps ErrSandboxUnavailable. Like
// bash_exec's commands they get an environment by allowlist (see
// BashExec; a variable a test needs is named with WithEnv) with a HOME of
// their own, and the values of this process's other variables are
// redacted from their output (see NewRedactor). A runner that needs the
// network to fetch dependencies needs WithNetwork.
func RunTests(ctx context.Context, ws *Workspace, framework string, opts ...Option) (*TestReport, error) {
	report, _, err := runTests(ctx, ws, newConfig(opts), framework, "", nil)
	return report, err
}

// testRun is what a framework runs.
type testRun struct {
	framework string
	dir       string   // working directory
	name      string   // executable
	args      []string // arguments
	env       []string // extra environment
	writable  []string // directories outside the workspace the run writes
	// newParser returns the parser of the run's stdout. If jsonStdout is
	// set, stdout is machine-readable and the parser writes the
	// human-readable output to human; otherwise human is nil.
	newParser  func(human io.Writer) testParser
	jsonStdout bool
	// parseStderr feeds stderr to the parser too (jest and bun report
	// there).
	parseStderr bool
}

// testParser consumes a run's stdout line by line.
type testParser interface {
	// line handles one stdout line, without its line terminator.
	line(s string)
	// finish completes r (counts, failures) after the run.
	finish(r *TestReport)
}

// runTests runs the tests at path (relative to the workspace root; empty
// for the whole workspace). With ro it also records each test's outcome
// (see RunTestsRecorded); without, the record is nil.
func runTests(ctx context.Context, ws *Workspace, cfg *config, framework, path string, ro *RecordOptions) (*TestReport, *TestRecord, error) {
	target, err := ws.Resolve(path)
	if err != nil {
		return nil, nil, fmt.Errorf("run_tests: %w", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil, nil, fmt.Errorf("run_tests: %w", err)
	}
	startDir := target
	if !fi.IsDir() {
		startDir = filepath.Dir(target)
	}
	framework = strings.ToLower(strings.TrimSpace(framework))
	var projectDir string
	if framework == "" {
		framework, projectDir = detectFramework(ws.Root(), startDir)
		if framework == "" {
			return nil, nil, fmt.Errorf("run_tests: cannot detect the test framework in %s (no go.mod, pyproject.toml, pytest.ini, Cargo.toml or package.json); pass framework", ws.rel(startDir))
		}
	} else {
		projectDir = findMarkerDir(ws.Root(), startDir, framework)
	}

	var run testRun
	switch framework {
	case FrameworkGo:
		pkgs := "./..."
		if !fi.IsDir() {
			pkgs = "."
		}
		run = testRun{dir: startDir, name: "go", args: []string{"test", "-json", pkgs}, jsonStdout: true,
			newParser: func(human io.Writer) testParser { return newGoTestParser(human) }}
	case FrameworkPytest:
		return runPytest(ctx, ws, cfg, projectDir, target, ro)
	case FrameworkCargo:
		run = testRun{dir: startDir, name: "cargo", args: []string{"test"}, newParser: newCargoParser}
	case FrameworkNpm:
		run = testRun{dir: projectDir, name: "npm", args: []string{"test"}, env: []string{"CI=true"}, newParser: newJSParser, parseStderr: true}
	case FrameworkBun:
		run = testRun{dir: projectDir, name: "bun", args: []string{"test"}, env: []string{"CI=true"}, newParser: newJSParser, parseStderr: true}
	default:
		return nil, nil, fmt.Errorf("run_tests: unknown framework %q (want go, pytest, cargo, npm or bun)", framework)
	}
	run.framework = framework
	record := func(*TestReport) *TestRecord { return nil }
	if ro != nil {
		record = recordRun(&run, *ro)
	}
	report, _, err := execTestRun(ctx, ws, cfg, run)
	if err != nil {
		return nil, nil, err
	}
	return report, record(report), nil
}

// execTestRun runs run and builds its report. It also returns the raw
// (capped) combined output for callers that need to inspect it.
func execTestRun(ctx context.Context, ws *Workspace, cfg *config, run testRun) (*TestReport, string, error) {
	// Never a runner planted in the project (see LookPathOutside).
	exe, err := LookPathOutside(os.Getenv("PATH"), ws.Root(), run.name)
	if err != nil {
		return nil, "", fmt.Errorf("run_tests: %s not found: %w", run.name, err)
	}
	capture := captureBytes(cfg.outputLimit)
	output := newCapBuffer(capture) // human-readable output
	// combined is the raw stdout+stderr; it differs from output only when
	// stdout is machine-readable.
	combined := output
	var parser testParser
	var stderr io.Writer = output
	if run.jsonStdout {
		combined = newCapBuffer(capture)
		parser = run.newParser(output)
		stderr = io.MultiWriter(output, combined)
	} else {
		parser = run.newParser(nil)
	}
	var mu sync.Mutex
	parse := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		parser.line(line)
	}
	lw := NewLineWriter(maxParsedLineBytes, parse)
	stdout := io.MultiWriter(lw, combined)
	var elw *LineWriter
	if run.parseStderr {
		elw = NewLineWriter(maxParsedLineBytes, parse)
		stderr = io.MultiWriter(elw, stderr)
	}
	// The tests are code the model may have written: they run as
	// bash_exec runs a command, in the sandbox where there is one, with
	// the runner's installation, go's toolchain and caches, and the run's
	// own files (such as pytest's report) visible, with bash_exec's
	// environment.
	sub := *cfg
	sub.goCaches = cfg.goCaches || run.framework == FrameworkGo
	dirs, env := runnerInstall(exe, run.framework) // exe is outside the workspace, as written and resolved
	// A directory holding the workspace would show its siblings.
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return within(d, ws.Root()) })
	sub.readOnlyPaths = slices.Concat(cfg.readOnlyPaths, dirs)
	sub.writablePaths = slices.Concat(cfg.writablePaths, run.writable)
	res, err := runCommand(ctx, ws, &sub, Command{
		Args:        append([]string{exe}, run.args...),
		ShowProgram: true,
		Dir:         run.dir,
		Env:         slices.Concat(env, run.env),
		Stdout:      stdout,
		Stderr:      stderr,
	}, cfg.testTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("run_tests: %w", err)
	}
	lw.Flush()
	if elw != nil {
		elw.Flush()
	}
	report := &TestReport{Framework: run.framework, ExitCode: res.ExitCode, Failures: []TestFailure{}}
	mu.Lock()
	parser.finish(report)
	mu.Unlock()
	raw := combined.String(maxFailureChars * 4)
	if res.Limit != "" {
		report.Failures = append([]TestFailure{{Name: "limit", Output: "the test run stopped: " + res.Limit + " (see WithLimits)"}}, report.Failures...)
	}
	if res.TimedOut {
		report.Failures = append([]TestFailure{{
			Name:   "timeout",
			Output: fmt.Sprintf("the test run was killed after %s (see WithTestTimeout)", cfg.testTimeout),
		}}, report.Failures...)
	} else if report.ExitCode != 0 && len(report.Failures) == 0 && !noTestsExit(run.framework, report) {
		report.Failures = append(report.Failures, TestFailure{
			Name:   run.framework + " test run",
			Output: tailChars(raw, maxFailureChars),
		})
	}
	capFailures(report)
	report.Output = output.String(cfg.outputLimit)
	return report, raw, nil
}

// capFailures counts every failure of r as failed, then keeps at most
// maxFailures of them, each with at most maxFailureChars of output.
func capFailures(r *TestReport) {
	r.Failed = max(r.Failed, len(r.Failures))
	if len(r.Failures) > maxFailures {
		r.Failures = r.Failures[:maxFailures]
	}
	for i := range r.Failures {
		r.Failures[i].Output = Truncate(r.Failures[i].Output, maxFailureChars)
	}
}

// noTestsExit reports a non-zero exit that only means "no tests".
func noTestsExit(framework string, r *TestReport) bool {
	return framework == FrameworkPytest && r.ExitCode == 5 && r.Passed+r.Failed+r.Skipped == 0
}

// tailChars returns the last n characters of s.
func tailChars(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}

// detectFramework looks for project markers from dir up to root and returns
// the framework and the directory holding the marker.
func detectFramework(root, dir string) (framework, projectDir string) {
	for d := dir; within(root, d); d = filepath.Dir(d) {
		if fw := frameworkIn(d); fw != "" {
			return fw, d
		}
		if d == root {
			break
		}
	}
	return "", ""
}

// frameworkIn detects the framework of the project in dir, if any.
func frameworkIn(dir string) string {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case exists("go.mod"):
		return FrameworkGo
	case exists("pyproject.toml"), exists("pytest.ini"), exists("setup.py"), exists("conftest.py"):
		return FrameworkPytest
	case exists("Cargo.toml"):
		return FrameworkCargo
	case exists("package.json"):
		if exists("bun.lock") || exists("bun.lockb") {
			return FrameworkBun
		}
		return FrameworkNpm
	case filetree.HasSuffix(filepath.Join(dir, "tests"), ".py"):
		return FrameworkPytest
	}
	return ""
}

// findMarkerDir returns the nearest directory from dir up to root holding a
// marker of framework, or dir if there is none.
func findMarkerDir(root, dir, framework string) string {
	for d := dir; within(root, d); d = filepath.Dir(d) {
		fw := frameworkIn(d)
		if fw == framework || (fw == FrameworkNpm && framework == FrameworkBun) || (fw == FrameworkBun && framework == FrameworkNpm) {
			return d
		}
		if d == root {
			break
		}
	}
	return dir
}

// LineWriter is an io.Writer that calls a function with each line written
// to it, without its terminator ("\n" or "\r\n"); Flush passes on a last
// unterminated line. Lines longer than the limit are cut to it. It is safe
// for concurrent use.
type LineWriter struct {
	mu      sync.Mutex
	buf     []byte
	maxLine int
	fn      func(line string)
}

// NewLineWriter returns a LineWriter calling fn with each line, cut at
// maxLine bytes.
func NewLineWriter(maxLine int, fn func(line string)) *LineWriter {
	return &LineWriter{maxLine: maxLine, fn: fn}
}

func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := w.maxLine - len(w.buf)
			w.buf = append(w.buf, p[:max(0, min(room, len(p)))]...)
			break
		}
		room := w.maxLine - len(w.buf)
		w.buf = append(w.buf, p[:max(0, min(room, i))]...)
		w.fn(strings.TrimSuffix(string(w.buf), "\r"))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush passes on a last unterminated line, if any.
func (w *LineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(strings.TrimSuffix(string(w.buf), "\r"))
		w.buf = w.buf[:0]
	}
}

// runPytest runs pytest in projectDir on target, with --json-report when
// the plugin is available. With ro it also records each test's outcome
// through the recording plugin (see RunTestsRecorded).
func runPytest(ctx context.Context, ws *Workspace, cfg *config, projectDir, target string, ro *RecordOptions) (*TestReport, *TestRecord, error) {
	tmp, err := os.MkdirTemp("", "agentgraph-pytest-*")
	if err != nil {
		return nil, nil, fmt.Errorf("run_tests: %w", err)
	}
	defer os.RemoveAll(tmp)
	reportPath := filepath.Join(tmp, "report.json") // pytest creates it; its presence means success

	name, baseArgs := "pytest", []string(nil)
	if _, err := LookPathOutside(os.Getenv("PATH"), ws.Root(), "pytest"); err != nil {
		for _, py := range []string{"python3", "python"} {
			if _, err := LookPathOutside(os.Getenv("PATH"), ws.Root(), py); err == nil {
				name, baseArgs = py, []string{"-m", "pytest"}
				break
			}
		}
	}
	run := testRun{framework: FrameworkPytest, dir: projectDir, name: name, newParser: newPytestParser, writable: []string{tmp}}
	args := append(baseArgs, "-rA")
	var recPath string
	if ro != nil {
		var recArgs []string
		if recPath, recArgs, err = recordPytest(&run, tmp, *ro); err != nil {
			return nil, nil, err
		}
		args = append(args, recArgs...)
	}
	if target != projectDir {
		rel, err := filepath.Rel(projectDir, target)
		if err == nil {
			args = append(args, rel)
		}
	}

	attempt := func(args []string) (*TestReport, string, error) {
		if recPath != "" {
			_ = os.Remove(recPath)
		}
		_ = os.Remove(reportPath)
		run.args = args
		return execTestRun(ctx, ws, cfg, run)
	}
	report, raw, err := attempt(append(slices.Clip(args), "--json-report", "--json-report-file="+reportPath))
	if err != nil {
		return nil, nil, err
	}
	if baseArgs != nil && strings.Contains(raw, "No module named pytest") {
		return nil, nil, fmt.Errorf("run_tests: pytest is not installed (%s -m pytest: No module named pytest)", name)
	}
	if report.ExitCode == 4 && strings.Contains(raw, "unrecognized arguments") && strings.Contains(raw, "--json-report") {
		// pytest-json-report is not installed: rely on the -rA summary.
		if report, _, err = attempt(args); err != nil {
			return nil, nil, err
		}
	} else if data, err := readRunFile(reportPath); err == nil {
		var jr pyJSONReport
		if json.Unmarshal(data, &jr) == nil && jr.Summary != nil {
			exit, out := report.ExitCode, report.Output
			*report = TestReport{Framework: FrameworkPytest, ExitCode: exit, Output: out}
			jr.apply(report)
			capFailures(report)
		}
	}
	var rec *TestRecord
	if recPath != "" {
		rec = readPytestRecord(recPath, report.ExitCode)
	}
	return report, rec, nil
}

// maxRunFileBytes bounds a file a test run writes for this process to
// read.
const maxRunFileBytes = 64 << 20

// openRunFile opens path, a file in a directory the (sandboxed) test run
// could write, for reading: through an os.Root on that directory, so that
// a symlink the tests left there naming a file outside it (/dev/zero, a
// FIFO, a secret of this machine) is refused; without blocking on a FIFO;
// and only if it is a regular file.
func openRunFile(path string) (*os.File, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.Base(path), os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}

// readRunFile reads at most maxRunFileBytes of the file openRunFile opens.
func readRunFile(path string) ([]byte, error) {
	f, err := openRunFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxRunFileBytes))
}

// runnerInstall returns the directories, besides the system ones, that a
// test runner at exe needs to see in the sandbox, read-only, and the
// variables that point it at them: the directory right below HOME that
// holds it when it is installed there (~/.cargo, ~/.pyenv, ~/.bun, …;
// of ~/.local only bin and lib), and for cargo the toolchains of rustup
// (CARGO_HOME and RUSTUP_HOME, ~/.cargo and ~/.rustup by default), since
// the run's HOME is not this user's.
func runnerInstall(exe, framework string) (dirs, env []string) {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return nil, nil
	}
	below := func(p string) []string {
		rel, err := filepath.Rel(home, p)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return nil
		}
		top := strings.Split(rel, string(filepath.Separator))[0]
		if top == ".local" {
			// pip's and pipx's programs and libraries, not the rest of
			// ~/.local (~/.local/share holds keyrings and tokens).
			return []string{filepath.Join(home, top, "bin"), filepath.Join(home, top, "lib")}
		}
		return []string{filepath.Join(home, top)}
	}
	for _, p := range []string{exe, evalSymlinks(exe)} {
		for _, d := range below(p) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	if framework == FrameworkCargo {
		for _, v := range []struct{ name, dflt string }{{"CARGO_HOME", ".cargo"}, {"RUSTUP_HOME", ".rustup"}} {
			dir := os.Getenv(v.name)
			if dir == "" {
				dir = filepath.Join(home, v.dflt)
			}
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
			env = append(env, v.name+"="+dir)
		}
	}
	return dirs, env
}

// evalSymlinks returns p with its symlinks resolved, or p.
func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
