package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Outcomes of a RecordedTest.
const (
	RecordPassed  = "passed"
	RecordFailed  = "failed"
	RecordSkipped = "skipped"
)

// RecordedTest is one test of a recorded run.
type RecordedTest struct {
	// ID identifies the test from one run to the next:
	// "example.com/m.TestSum/negative" (go: package, test and subtest),
	// "tests/test_x.py::TestC::test_y[1]" (pytest: the node ID) or
	// "tests::it_works" (cargo). A Rust doc-test is named without its
	// line number ("src/lib.rs - add"), which moves whenever the file is
	// edited above it. Cargo IDs are not unique: the same name may run in
	// several test binaries.
	ID string `json:"id"`
	// Unit is what the test belongs to: the Go package, the pytest file;
	// empty for cargo.
	Unit string `json:"unit,omitempty"`
	// Outcome is RecordPassed, RecordFailed or RecordSkipped. A pytest
	// xfail counts as skipped, a non-strict xpass as passed.
	Outcome string `json:"outcome"`
}

// TestRecord is what each test of a run did.
type TestRecord struct {
	// Tests are the tests that ran or were skipped, in the order they
	// were reported.
	Tests []RecordedTest `json:"tests"`
	// Broken are the units some of whose tests may not have run: Go
	// packages that failed (a failed test may have ended the test binary
	// before later tests started, and so do build failures and crashes),
	// pytest files or directories that failed to collect. "" stands for
	// the whole run: a run that was killed, a cargo run that failed (cargo
	// stops at the first failing test binary), a pytest session that was
	// interrupted or stopped early (-x, --maxfail).
	Broken []string `json:"broken,omitempty"`
}

// RecordOptions adjusts a recorded run.
type RecordOptions struct {
	// KeepGoing runs every test even when some fail, for a complete
	// record: cargo test --no-fail-fast, pytest
	// --continue-on-collection-errors. go test runs every package anyway.
	KeepGoing bool
}

// RunTestsRecorded runs the tests of the whole workspace like RunTests and
// also records the outcome of each test. It records go (from the events
// of go test -json), pytest (through a small plugin loaded with -p, which
// writes each test report's node ID and outcome to a file) and cargo (from
// the "test NAME ... ok" lines); for npm and bun, whose output does not
// reliably name every test, the record is nil.
//
// The record is nil too when pytest did not load the plugin (a runner
// replaced by a script, say). The commands are those of RunTests, with
// ro's additions and, for pytest, -p and two environment variables
// (PYTHONPATH and AGENTGRAPH_TEST_RECORD).
func RunTestsRecorded(ctx context.Context, ws *Workspace, framework string, ro RecordOptions, opts ...Option) (*TestReport, *TestRecord, error) {
	return runTests(ctx, ws, newConfig(opts), framework, "", &ro)
}

// recordRun makes run (of go or cargo) record its tests as its output goes
// by, with ro's additions to its command, and returns the function that
// gives the record once the run is over. For other frameworks, run is
// unchanged and the record is nil.
func recordRun(run *testRun, ro RecordOptions) func(*TestReport) *TestRecord {
	var line func(string)
	var done func(*TestReport) *TestRecord
	switch run.framework {
	case FrameworkGo:
		rec := &goRecorder{seen: map[string]int{}, pkgFailed: map[string]bool{}}
		line, done = rec.line, rec.record
	case FrameworkCargo:
		rec := &TestRecord{Tests: []RecordedTest{}}
		if ro.KeepGoing {
			run.args = append(run.args, "--no-fail-fast")
		}
		line = rec.cargoLine
		done = func(report *TestReport) *TestRecord {
			if report.ExitCode != 0 {
				rec.Broken = []string{""}
			}
			return rec
		}
	default:
		return func(*TestReport) *TestRecord { return nil }
	}
	newParser := run.newParser
	run.newParser = func(human io.Writer) testParser { return &teeParser{newParser(human), line} }
	return done
}

// teeParser feeds each line to a report parser and to a recorder.
type teeParser struct {
	testParser
	record func(line string)
}

func (t *teeParser) line(s string) {
	t.testParser.line(s)
	t.record(s)
}

// ---- go ----

type goRecorder struct {
	tests     []RecordedTest
	seen      map[string]int // pkg + "\x00" + test → index in tests
	pkgFailed map[string]bool
	pkgs      []string // failed packages, in order
}

func (r *goRecorder) line(s string) {
	var ev struct{ Action, Package, Test string }
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &ev) != nil || ev.Package == "" {
		return
	}
	if ev.Test == "" {
		if ev.Action == "fail" && !r.pkgFailed[ev.Package] {
			r.pkgFailed[ev.Package] = true
			r.pkgs = append(r.pkgs, ev.Package)
		}
		return
	}
	key := ev.Package + "\x00" + ev.Test
	i, ok := r.seen[key]
	if !ok {
		if ev.Action != "run" && ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip" {
			return
		}
		i = len(r.tests)
		r.seen[key] = i
		r.tests = append(r.tests, RecordedTest{ID: ev.Package + "." + ev.Test, Unit: ev.Package})
	}
	switch ev.Action {
	case "pass":
		r.tests[i].Outcome = RecordPassed
	case "fail":
		r.tests[i].Outcome = RecordFailed
	case "skip":
		r.tests[i].Outcome = RecordSkipped
	}
}

func (r *goRecorder) record(report *TestReport) *TestRecord {
	rec := &TestRecord{Tests: r.tests, Broken: r.pkgs}
	if rec.Tests == nil {
		rec.Tests = []RecordedTest{}
	}
	for i := range rec.Tests {
		if rec.Tests[i].Outcome == "" { // started but never ended: the binary died
			rec.Tests[i].Outcome = RecordFailed
		}
	}
	if report.ExitCode < 0 {
		rec.Broken = append(rec.Broken, "")
	}
	return rec
}

// ---- cargo ----

var (
	cargoRecordRe  = regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored\b.*)$`)
	cargoDocLineRe = regexp.MustCompile(` \(line \d+\)`)
)

func (r *TestRecord) cargoLine(s string) {
	m := cargoRecordRe.FindStringSubmatch(ansiEscape.ReplaceAllString(s, ""))
	if m == nil {
		return
	}
	outcome := RecordPassed
	switch {
	case m[2] == "FAILED":
		outcome = RecordFailed
	case strings.HasPrefix(m[2], "ignored"):
		outcome = RecordSkipped
	}
	r.Tests = append(r.Tests, RecordedTest{ID: cargoDocLineRe.ReplaceAllString(m[1], ""), Outcome: outcome})
}

// ---- pytest ----

// pytestRecordPlugin is loaded into pytest with -p; it appends one JSON
// array per line to $AGENTGRAPH_TEST_RECORD: [outcome, node ID] for each
// test, ["broken", node ID] for each collector that failed, and
// ["stopped", ""] when the session stopped early. It stays off in
// pytest-xdist workers, whose reports reach the controller.
const pytestRecordPlugin = `import json
import os

_path = os.environ.get("AGENTGRAPH_TEST_RECORD", "")
_on = False


def _write(kind, nodeid):
    with open(_path, "a", encoding="utf-8") as f:
        f.write(json.dumps([kind, nodeid]) + "\n")


def pytest_configure(config):
    global _on
    _on = bool(_path) and not hasattr(config, "workerinput")
    if _on:
        _write("started", "")


def pytest_collectreport(report):
    if _on and report.failed:
        _write("broken", report.nodeid)


def pytest_runtest_logreport(report):
    if not _on:
        return
    if hasattr(report, "wasxfail"):
        kind = "skipped" if report.skipped else ("failed" if report.failed else "passed")
    elif report.failed:
        kind = "failed"
    elif report.skipped:
        kind = "skipped"
    elif report.when == "call":
        kind = "passed"
    else:
        return
    _write(kind, report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if _on and (session.shouldstop or session.shouldfail):
        _write("stopped", "")
`

const pytestRecordModule = "_agentgraph_record"

// recordPytest makes run load the recording plugin, which it writes to
// dir, and returns the file the plugin writes to (read it with
// readPytestRecord) and the arguments to add to pytest's.
func recordPytest(run *testRun, dir string, ro RecordOptions) (recPath string, args []string, err error) {
	if err := os.WriteFile(filepath.Join(dir, pytestRecordModule+".py"), []byte(pytestRecordPlugin), 0o644); err != nil {
		return "", nil, fmt.Errorf("run_tests: %w", err)
	}
	recPath = filepath.Join(dir, "record.jsonl")
	args = []string{"-p", pytestRecordModule}
	if ro.KeepGoing {
		args = append(args, "--continue-on-collection-errors")
	}
	pythonPath := dir
	if old := os.Getenv("PYTHONPATH"); old != "" {
		pythonPath += string(os.PathListSeparator) + old
	}
	run.env = append(run.env, "PYTHONPATH="+pythonPath, "AGENTGRAPH_TEST_RECORD="+recPath)
	return recPath, args, nil
}

// readPytestRecord reads the plugin's file; nil if the plugin did not run.
func readPytestRecord(path string, exitCode int) *TestRecord {
	f, err := openRunFile(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rec := &TestRecord{Tests: []RecordedTest{}}
	index := map[string]int{}
	started := false
	sc := bufio.NewScanner(io.LimitReader(f, maxRunFileBytes))
	sc.Buffer(make([]byte, 64*1024), maxParsedLineBytes)
	for sc.Scan() {
		var entry [2]string
		if json.Unmarshal(sc.Bytes(), &entry) != nil {
			continue
		}
		kind, nodeid := entry[0], entry[1]
		switch kind {
		case "started":
			started = true
		case "broken":
			rec.Broken = append(rec.Broken, nodeid)
		case "stopped":
			rec.Broken = append(rec.Broken, "")
		case RecordPassed, RecordFailed, RecordSkipped:
			// A test reports its setup, call and teardown: keep the worst.
			i, ok := index[nodeid]
			if !ok {
				unit, _, _ := strings.Cut(nodeid, "::")
				index[nodeid] = len(rec.Tests)
				rec.Tests = append(rec.Tests, RecordedTest{ID: nodeid, Unit: unit, Outcome: kind})
				continue
			}
			if recordRank(kind) > recordRank(rec.Tests[i].Outcome) {
				rec.Tests[i].Outcome = kind
			}
		}
	}
	if !started {
		return nil
	}
	// 0 all passed, 1 some failed, 5 none collected; anything else
	// (interrupted, internal error, usage error, killed) cut the run short.
	if exitCode != 0 && exitCode != 1 && exitCode != 5 {
		rec.Broken = append(rec.Broken, "")
	}
	return rec
}

func recordRank(outcome string) int {
	switch outcome {
	case RecordFailed:
		return 2
	case RecordSkipped:
		return 1
	}
	return 0
}
