package tools

import (
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// failureCapture is how many bytes of one test's output are kept at each
// end while parsing.
const failureCapture = 4 * maxFailureChars

// ansiEscape matches terminal color sequences.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// ---- go test -json ----

// goEvent is one line of `go test -json` (cmd/test2json) output.
type goEvent struct {
	Action      string `json:"Action"`
	Package     string `json:"Package"`
	Test        string `json:"Test"`
	Output      string `json:"Output"`
	ImportPath  string `json:"ImportPath"`
	FailedBuild string `json:"FailedBuild"`
}

type goTest struct {
	pkg, name, action string
	out               *capBuffer
}

type goPkg struct {
	action      string
	failedBuild string
	out         *capBuffer
}

type goTestParser struct {
	human    io.Writer
	tests    map[string]*goTest
	order    []*goTest
	pkgs     map[string]*goPkg
	pkgOrder []string
	build    map[string]*capBuffer // build output by import path
}

func newGoTestParser(human io.Writer) *goTestParser {
	if human == nil {
		human = io.Discard
	}
	return &goTestParser{
		human: human,
		tests: make(map[string]*goTest),
		pkgs:  make(map[string]*goPkg),
		build: make(map[string]*capBuffer),
	}
}

func (p *goTestParser) pkg(name string) *goPkg {
	pk := p.pkgs[name]
	if pk == nil {
		pk = &goPkg{out: newCapBuffer(failureCapture)}
		p.pkgs[name] = pk
		p.pkgOrder = append(p.pkgOrder, name)
	}
	return pk
}

func (p *goTestParser) test(pkg, name string) *goTest {
	key := pkg + "\x00" + name
	t := p.tests[key]
	if t == nil {
		t = &goTest{pkg: pkg, name: name, out: newCapBuffer(failureCapture)}
		p.tests[key] = t
		p.order = append(p.order, t)
	}
	return t
}

// goNoise are output lines of passing progress left out of reports.
func goNoise(s string) bool {
	t := strings.TrimLeft(s, " \t")
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS:"} {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

func (p *goTestParser) line(s string) {
	var ev goEvent
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &ev) != nil {
		_, _ = io.WriteString(p.human, s+"\n")
		return
	}
	switch ev.Action {
	case "build-output":
		b := p.build[ev.ImportPath]
		if b == nil {
			b = newCapBuffer(failureCapture)
			p.build[ev.ImportPath] = b
		}
		_, _ = io.WriteString(b, ev.Output)
		_, _ = io.WriteString(p.human, ev.Output)
	case "output":
		if goNoise(ev.Output) {
			return
		}
		_, _ = io.WriteString(p.human, ev.Output)
		if ev.Test != "" {
			_, _ = io.WriteString(p.test(ev.Package, ev.Test).out, ev.Output)
		} else {
			_, _ = io.WriteString(p.pkg(ev.Package).out, ev.Output)
		}
	case "run":
		p.test(ev.Package, ev.Test)
	case "pass", "fail", "skip":
		if ev.Test != "" {
			p.test(ev.Package, ev.Test).action = ev.Action
			return
		}
		pk := p.pkg(ev.Package)
		pk.action = ev.Action
		if ev.FailedBuild != "" {
			pk.failedBuild = ev.FailedBuild
		}
	}
}

func (p *goTestParser) finish(r *TestReport) {
	// A test with subtests is counted through its subtests, unless it
	// failed on its own.
	parents := make(map[string]bool)
	failedBelow := make(map[string]bool)
	for _, t := range p.order {
		for i := range len(t.name) {
			if t.name[i] == '/' {
				key := t.pkg + "\x00" + t.name[:i]
				parents[key] = true
				if t.action == "fail" {
					failedBelow[key] = true
				}
			}
		}
	}
	failedPkgs := make(map[string]bool)
	for _, t := range p.order {
		key := t.pkg + "\x00" + t.name
		action := t.action
		if action == "" && p.pkg(t.pkg).action == "fail" {
			action = "fail" // the test binary died while this test ran
		}
		if parents[key] && (action != "fail" || failedBelow[key]) {
			continue
		}
		switch action {
		case "pass":
			r.Passed++
		case "skip":
			r.Skipped++
		case "fail":
			r.Failed++
			failedPkgs[t.pkg] = true
			r.Failures = append(r.Failures, TestFailure{
				Name:   t.pkg + "." + t.name,
				Output: t.out.String(maxFailureChars),
			})
		}
	}
	for _, name := range p.pkgOrder {
		pk := p.pkgs[name]
		if pk.action != "fail" || failedPkgs[name] {
			continue
		}
		out := pk.out.String(maxFailureChars)
		if b := p.build[pk.failedBuild]; b != nil {
			out = b.String(maxFailureChars) + out
		}
		r.Failures = append(r.Failures, TestFailure{Name: name, Output: out})
	}
}

// ---- pytest ----

var (
	pySectionRe = regexp.MustCompile(`^=+ (.*?) =+$`)
	pyFinalRe   = regexp.MustCompile(`\bin [0-9.]+s\b`)
	pyBlockRe   = regexp.MustCompile(`^_+ (.*?) _+$`)
	pyShortRe   = regexp.MustCompile(`^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.*)$`)
	pyCountRe   = regexp.MustCompile(`(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b`)
)

type pyBlock struct {
	title string
	out   *capBuffer
	used  bool
}

type pyShort struct {
	kind, nodeid string
}

// pytestParser parses pytest's terminal output run with -rA.
type pytestParser struct {
	section    string
	blocks     []*pyBlock
	cur        *pyBlock
	short      []pyShort
	counts     map[string]int
	haveCounts bool
}

func newPytestParser(io.Writer) testParser {
	return &pytestParser{counts: make(map[string]int)}
}

func (p *pytestParser) line(s string) {
	s = ansiEscape.ReplaceAllString(s, "")
	if m := pySectionRe.FindStringSubmatch(s); m != nil {
		p.cur = nil
		if pyFinalRe.MatchString(m[1]) {
			p.haveCounts = true
			for _, c := range pyCountRe.FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(c[1])
				p.counts[strings.TrimSuffix(c[2], "s")] += n
			}
			p.section = "summary"
			return
		}
		p.section = m[1]
		return
	}
	switch p.section {
	case "FAILURES", "ERRORS":
		if m := pyBlockRe.FindStringSubmatch(s); m != nil {
			p.cur = &pyBlock{title: m[1], out: newCapBuffer(failureCapture)}
			p.blocks = append(p.blocks, p.cur)
			return
		}
		if p.cur != nil {
			_, _ = io.WriteString(p.cur.out, s+"\n")
		}
	case "short test summary info":
		if m := pyShortRe.FindStringSubmatch(s); m != nil {
			nodeid := m[2]
			if i := strings.Index(nodeid, " - "); i >= 0 {
				nodeid = nodeid[:i]
			}
			p.short = append(p.short, pyShort{kind: m[1], nodeid: nodeid})
		}
	}
}

func (p *pytestParser) finish(r *TestReport) {
	if p.haveCounts {
		r.Passed += p.counts["passed"] + p.counts["xpassed"]
		r.Failed += p.counts["failed"] + p.counts["error"]
		r.Skipped += p.counts["skipped"] + p.counts["xfailed"]
	} else {
		for _, s := range p.short {
			switch s.kind {
			case "PASSED", "XPASS":
				r.Passed++
			case "FAILED", "ERROR":
				r.Failed++
			case "SKIPPED", "XFAIL":
				r.Skipped++
			}
		}
	}
	for _, s := range p.short {
		if s.kind != "FAILED" && s.kind != "ERROR" {
			continue
		}
		f := TestFailure{Name: s.nodeid}
		if b := p.findBlock(s.nodeid); b != nil {
			f.Output = b.out.String(maxFailureChars)
		}
		r.Failures = append(r.Failures, f)
	}
	if len(p.short) == 0 {
		for _, b := range p.blocks {
			r.Failures = append(r.Failures, TestFailure{Name: b.title, Output: b.out.String(maxFailureChars)})
		}
	}
}

// findBlock returns the unused FAILURES/ERRORS block of a node id such as
// "tests/test_a.py::TestX::test_y[1]", titled "TestX.test_y[1]",
// "ERROR at setup of TestX.test_y[1]" or "ERROR collecting tests/test_a.py".
func (p *pytestParser) findBlock(nodeid string) *pyBlock {
	dotted := nodeid
	if _, after, ok := strings.Cut(nodeid, "::"); ok {
		dotted = strings.ReplaceAll(after, "::", ".")
	}
	for _, match := range []func(title string) bool{
		func(t string) bool { return t == dotted },
		func(t string) bool { return strings.HasSuffix(t, " "+dotted) || strings.HasSuffix(t, " "+nodeid) },
	} {
		for _, b := range p.blocks {
			if !b.used && match(b.title) {
				b.used = true
				return b
			}
		}
	}
	return nil
}

// pyJSONReport is the part of a pytest-json-report file RunTests uses.
type pyJSONReport struct {
	Summary map[string]json.RawMessage `json:"summary"`
	Tests   []struct {
		NodeID   string       `json:"nodeid"`
		Outcome  string       `json:"outcome"`
		Setup    *pyJSONStage `json:"setup"`
		Call     *pyJSONStage `json:"call"`
		Teardown *pyJSONStage `json:"teardown"`
	} `json:"tests"`
	Collectors []struct {
		NodeID   string          `json:"nodeid"`
		Outcome  string          `json:"outcome"`
		Longrepr json.RawMessage `json:"longrepr"`
	} `json:"collectors"`
}

type pyJSONStage struct {
	Outcome  string          `json:"outcome"`
	Longrepr json.RawMessage `json:"longrepr"`
	Stdout   string          `json:"stdout"`
	Stderr   string          `json:"stderr"`
}

// longrepr renders a longrepr value, which is usually a string.
func longrepr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// apply sets r's counts and failures from the JSON report.
func (j *pyJSONReport) apply(r *TestReport) {
	count := func(key string) int {
		var n int
		_ = json.Unmarshal(j.Summary[key], &n)
		return n
	}
	r.Passed = count("passed") + count("xpassed")
	r.Failed = count("failed") + count("error")
	r.Skipped = count("skipped") + count("xfailed")
	r.Failures = []TestFailure{}
	for _, c := range j.Collectors {
		if c.Outcome == "failed" || c.Outcome == "error" {
			name := c.NodeID
			if name == "" {
				name = "collection"
			}
			r.Failures = append(r.Failures, TestFailure{Name: name, Output: longrepr(c.Longrepr)})
		}
	}
	for _, t := range j.Tests {
		if t.Outcome != "failed" && t.Outcome != "error" {
			continue
		}
		var out strings.Builder
		for _, st := range []*pyJSONStage{t.Setup, t.Call, t.Teardown} {
			if st == nil || (st.Outcome != "failed" && st.Outcome != "error") {
				continue
			}
			out.WriteString(longrepr(st.Longrepr))
			if st.Stdout != "" {
				out.WriteString("\n--- captured stdout ---\n" + st.Stdout)
			}
			if st.Stderr != "" {
				out.WriteString("\n--- captured stderr ---\n" + st.Stderr)
			}
		}
		r.Failures = append(r.Failures, TestFailure{Name: t.NodeID, Output: out.String()})
	}
}

// ---- cargo test ----

var (
	cargoTestRe   = regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored.*|bench:.*)$`)
	cargoResultRe = regexp.MustCompile(`^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	cargoBlockRe  = regexp.MustCompile(`^---- (.+?) stdout ----$`)
)

type cargoParser struct {
	passed, failed, ignored int // from "test ..." lines
	results                 [3]int
	haveResults             bool
	failedNames             []string
	blocks                  map[string]*capBuffer
	cur                     *capBuffer
}

func newCargoParser(io.Writer) testParser {
	return &cargoParser{blocks: make(map[string]*capBuffer)}
}

func (p *cargoParser) line(s string) {
	s = ansiEscape.ReplaceAllString(s, "")
	if m := cargoBlockRe.FindStringSubmatch(s); m != nil {
		p.cur = newCapBuffer(failureCapture)
		p.blocks[m[1]] = p.cur
		return
	}
	if s == "failures:" || s == "successes:" {
		p.cur = nil
		return
	}
	if m := cargoResultRe.FindStringSubmatch(s); m != nil {
		p.cur = nil
		p.haveResults = true
		for i := range 3 {
			n, _ := strconv.Atoi(m[i+1])
			p.results[i] += n
		}
		return
	}
	if p.cur != nil {
		_, _ = io.WriteString(p.cur, s+"\n")
		return
	}
	if m := cargoTestRe.FindStringSubmatch(s); m != nil {
		switch {
		case m[2] == "ok":
			p.passed++
		case m[2] == "FAILED":
			p.failed++
			p.failedNames = append(p.failedNames, m[1])
		case strings.HasPrefix(m[2], "ignored"):
			p.ignored++
		}
	}
}

func (p *cargoParser) finish(r *TestReport) {
	if p.haveResults {
		r.Passed, r.Failed, r.Skipped = p.results[0], p.results[1], p.results[2]
	} else {
		r.Passed, r.Failed, r.Skipped = p.passed, p.failed, p.ignored
	}
	for _, name := range p.failedNames {
		f := TestFailure{Name: name}
		if b := p.blocks[name]; b != nil {
			f.Output = strings.TrimRight(b.String(maxFailureChars), "\n")
		}
		r.Failures = append(r.Failures, f)
	}
}

// ---- npm test / bun test ----

var (
	// "3 pass" (bun), "ℹ pass 3" / "# pass 3" (node:test), "3 passing" (mocha)
	jsCountLineRe = regexp.MustCompile(`^\s*(?:(\d+) (pass|fail|skip|todo|passing|failing|pending)|[ℹ#] (pass|fail|skipped|todo) (\d+))\s*(?:\(.*\))?$`)
	// "Tests: 1 failed, 2 passed, 3 total" (jest), "Tests  1 failed | 2 passed (3)" (vitest)
	jsTestsLineRe = regexp.MustCompile(`^\s*Tests:?\s+(.*\d.*)$`)
	jsCountRe     = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|pending)\b`)
	// "(fail) name [1.00ms]" / "✗ name" (bun)
	jsBunFailRe = regexp.MustCompile(`^\s*(?:\(fail\)|✗) (.+?)(?: \[[0-9.]+m?s\])?$`)
	jsBunDoneRe = regexp.MustCompile(`^\s*(?:\((?:pass|skip|todo)\)|✓) `)
	// "● suite › name" (jest)
	jsJestFailRe = regexp.MustCompile(`^\s*● (.+)$`)
)

type jsParser struct {
	counts   map[string]int
	failures []TestFailure
	pending  []string   // bun: lines since the last test result
	block    *capBuffer // jest: output of the current ● block
}

func newJSParser(io.Writer) testParser {
	return &jsParser{counts: make(map[string]int)}
}

func (p *jsParser) add(kind string, n int) {
	switch kind {
	case "pass", "passed", "passing":
		p.counts["pass"] += n
	case "fail", "failed", "failing":
		p.counts["fail"] += n
	case "skip", "skipped", "pending", "todo":
		p.counts["skip"] += n
	}
}

func (p *jsParser) closeBlock() {
	if p.block != nil {
		p.failures[len(p.failures)-1].Output = strings.TrimSpace(p.block.String(maxFailureChars))
		p.block = nil
	}
}

func (p *jsParser) line(s string) {
	s = ansiEscape.ReplaceAllString(s, "")
	if m := jsCountLineRe.FindStringSubmatch(s); m != nil {
		if m[1] != "" {
			n, _ := strconv.Atoi(m[1])
			p.add(m[2], n)
		} else {
			n, _ := strconv.Atoi(m[4])
			p.add(m[3], n)
		}
		return
	}
	if m := jsTestsLineRe.FindStringSubmatch(s); m != nil {
		p.closeBlock()
		for _, c := range jsCountRe.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(c[1])
			p.add(c[2], n)
		}
		return
	}
	if m := jsBunFailRe.FindStringSubmatch(s); m != nil {
		p.closeBlock()
		p.failures = append(p.failures, TestFailure{Name: m[1], Output: strings.TrimSpace(strings.Join(p.pending, "\n"))})
		p.pending = p.pending[:0]
		return
	}
	if jsBunDoneRe.MatchString(s) {
		p.pending = p.pending[:0]
		return
	}
	if m := jsJestFailRe.FindStringSubmatch(s); m != nil && !strings.HasPrefix(m[1], "Console") {
		p.closeBlock()
		p.failures = append(p.failures, TestFailure{Name: m[1]})
		p.block = newCapBuffer(failureCapture)
		return
	}
	if strings.HasPrefix(strings.TrimSpace(s), "Test Suites:") {
		p.closeBlock()
		return
	}
	if p.block != nil {
		_, _ = io.WriteString(p.block, s+"\n")
	}
	if len(p.pending) >= 200 {
		p.pending = p.pending[:copy(p.pending, p.pending[1:])]
	}
	p.pending = append(p.pending, s)
}

func (p *jsParser) finish(r *TestReport) {
	p.closeBlock()
	r.Passed, r.Failed, r.Skipped = p.counts["pass"], p.counts["fail"], p.counts["skip"]
	r.Failures = append(r.Failures, p.failures...)
}
