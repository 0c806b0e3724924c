package goals

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentgraph/agentgraph/tools"
)

// Baseliner is implemented by the goals that record the project's tests at
// the start of a run, so that a later check can tell a fix from a test
// that was deleted, renamed or skipped: the test goals (go-test, pytest,
// cargo-test, npm-test, bun-test and make-test).
//
// Take the baseline once per run, before the agent changes anything; keep
// it with the run (a Baseline encodes to JSON, for the run's checkpointed
// state, so that it survives a crash and resume); and pass it back in
// State.Baseline at every Check.
//
// A test goal that gets no Baseline in State takes one from its first check
// of a run (State.RunID, not empty, and the directory) and keeps it in
// memory: that still catches what the agent does after the first check,
// but not what it did before it, nor anything after the process restarts.
type Baseliner interface {
	// Baseline runs the project's tests in cwd and records them. Its
	// errors are those of Check.
	Baseline(ctx context.Context, cwd string) (*Baseline, error)
}

// Baseline records a project's tests at the start of a run. It is data,
// JSON-encodable; read its fields for display only, as their meaning may
// grow.
type Baseline struct {
	// Goal is the name of the goal that took it.
	Goal string `json:"goal"`
	// Named reports that the runner named its tests (go-test, pytest,
	// cargo-test): Tests and SkippedTests are then set. The other goals
	// record counts only.
	Named bool `json:"named,omitempty"`
	// Tests are the tests that ran (passed or failed), by unit (the Go
	// package, the pytest file; "" for cargo), each list sorted. Cargo
	// names may repeat (one test name in several test binaries). For a Go
	// package that failed (whose later tests may not have started, or
	// which did not build), they include the Test and Fuzz functions of
	// its test files, read from the source.
	Tests map[string][]string `json:"tests,omitempty"`
	// SkippedTests are the tests that were skipped, sorted; they may stay
	// skipped.
	SkippedTests []string `json:"skipped_tests,omitempty"`
	// Broken are the units some of whose tests could not run (see
	// tools.TestRecord); "" stands for the whole run.
	Broken []string `json:"broken,omitempty"`
	// Counted reports that the runner's output showed test counts. It is
	// false only for make-test, when the output of make test has no
	// counts the goal recognises.
	Counted bool `json:"counted,omitempty"`
	// Ran and Skipped count the tests that ran (passed or failed) and the
	// skipped ones.
	Ran     int `json:"ran"`
	Skipped int `json:"skipped"`
	// Files maps each test file (slash-separated, relative to the
	// project) to the SHA-256 of its content, hex-encoded. It is not
	// recorded with Config.AllowTestEdits.
	Files map[string]string `json:"files,omitempty"`
	// Summary is the Reason of the baseline's test run, such as
	// "go-test: 1 of 3 tests failed: example.com/m.TestSum".
	Summary string `json:"summary,omitempty"`
}

// NumTests returns the number of named tests that ran at the baseline.
func (b *Baseline) NumTests() int {
	n := 0
	for _, ids := range b.Tests {
		n += len(ids)
	}
	return n
}

// observation is what one run of a test goal's command showed.
type observation struct {
	framework string
	// record names each test (go, pytest, cargo); nil otherwise.
	record *tools.TestRecord
	// counted reports that ran and skipped are known.
	counted      bool
	ran, skipped int
	// passed reports a run that reached the goal by its own criteria:
	// exit 0, no failure.
	passed bool
	reason string // the run's own Reason, for Baseline.Summary
}

// newBaseline records o (and the hashes of the test files, when files is
// not nil) as goal's baseline of the project in cwd.
func newBaseline(goal, cwd string, o *observation, files map[string]string) *Baseline {
	b := &Baseline{Goal: goal, Counted: o.counted, Ran: o.ran, Skipped: o.skipped, Files: files, Summary: o.reason}
	if o.record == nil {
		return b
	}
	b.Named = true
	b.Tests = map[string][]string{}
	for _, t := range o.record.Tests {
		switch t.Outcome {
		case tools.RecordPassed, tools.RecordFailed:
			b.Tests[t.Unit] = append(b.Tests[t.Unit], t.ID)
		case tools.RecordSkipped:
			b.SkippedTests = append(b.SkippedTests, t.ID)
		}
	}
	for _, u := range o.record.Broken {
		if !slices.Contains(b.Broken, u) {
			b.Broken = append(b.Broken, u)
		}
	}
	if o.framework == tools.FrameworkGo {
		// The tests of a package that failed may not have run (it did
		// not build, its test binary died): read their names from its
		// source too.
		for _, pkg := range b.Broken {
			if pkg == "" {
				continue
			}
			for _, name := range goTestFuncs(cwd, pkg) {
				if id := pkg + "." + name; !slices.Contains(b.Tests[pkg], id) {
					b.Tests[pkg] = append(b.Tests[pkg], id)
				}
			}
		}
	}
	for u := range b.Tests {
		slices.Sort(b.Tests[u])
	}
	slices.Sort(b.SkippedTests)
	return b
}

// integrity lists how a run falls short of the baseline.
type integrity struct {
	// zero reports that no test ran (with skipped tests skipped).
	zero    bool
	skipped int
	// missing and skippedTests are tests of the baseline that did not
	// run and that were skipped.
	missing, skippedTests []string
	// silent are units that could not run at the baseline and none of
	// whose tests ran now.
	silent []string
	// changed and deleted are protected test files.
	changed, deleted []string
	// notes are other findings, as sentences.
	notes []string
}

func (in *integrity) ok() bool {
	return !in.zero && len(in.missing)+len(in.skippedTests)+len(in.silent)+len(in.changed)+len(in.deleted)+len(in.notes) == 0
}

// checkIntegrity compares the run o, and the test files now (when
// protected), with the baseline b (nil: none).
func checkIntegrity(b *Baseline, o *observation, files map[string]string) *integrity {
	in := &integrity{zero: o.counted && o.ran == 0, skipped: o.skipped}
	if b == nil {
		return in
	}
	if b.Files != nil && files != nil {
		for _, name := range sortedKeys(b.Files) {
			switch now, ok := files[name]; {
			case !ok:
				in.deleted = append(in.deleted, name)
			case now != b.Files[name]:
				in.changed = append(in.changed, name)
			}
		}
	}
	switch {
	case b.Named && o.record != nil:
		in.compareNamed(b, o)
	case b.Named && o.passed:
		in.notes = append(in.notes, "the test run no longer records which tests ran (it did at the baseline)")
		fallthrough
	case o.passed && b.Counted:
		// Runs that failed have their failures to show; counts of a
		// failing run may be low for that reason alone.
		switch {
		case !o.counted:
			in.notes = append(in.notes, "the output no longer shows test counts (it did at the baseline)")
		case o.ran < b.Ran:
			in.notes = append(in.notes, fmt.Sprintf("%s ran, %d at the baseline (tests deleted or no longer run?)", plural(o.ran, "test"), b.Ran))
		}
		if o.counted && o.skipped > b.Skipped {
			in.notes = append(in.notes, fmt.Sprintf("%s skipped, %d at the baseline", plural(o.skipped, "test"), b.Skipped))
		}
	}
	return in
}

// compareNamed finds the tests of the baseline that did not run in o.
func (in *integrity) compareNamed(b *Baseline, o *observation) {
	pytest := o.framework == tools.FrameworkPytest
	ran, skipped := map[string]int{}, map[string]int{}
	var units []string // units in which a test ran
	for _, t := range o.record.Tests {
		switch t.Outcome {
		case tools.RecordPassed, tools.RecordFailed:
			ran[t.ID]++
			units = append(units, t.Unit)
		case tools.RecordSkipped:
			skipped[t.ID]++
		}
	}
	wasSkipped := map[string]int{}
	for _, id := range b.SkippedTests {
		wasSkipped[id]++
	}
	broken := func(unit string) bool {
		return slices.ContainsFunc(o.record.Broken, func(u string) bool { return inUnit(unit, u, pytest) })
	}
	for _, unit := range sortedKeys(b.Tests) {
		if broken(unit) {
			continue // its failure is reported; its tests are checked once it runs
		}
		want := map[string]int{}
		for _, id := range b.Tests[unit] {
			want[id]++
		}
		for _, id := range sortedKeys(want) {
			if ran[id] >= want[id] {
				continue
			}
			if skipped[id] > wasSkipped[id] {
				in.skippedTests = append(in.skippedTests, id)
			} else {
				in.missing = append(in.missing, id)
			}
		}
	}
	for _, u := range b.Broken {
		if u == "" || len(b.Tests[u]) > 0 || broken(u) {
			continue
		}
		if !slices.ContainsFunc(units, func(unit string) bool { return inUnit(unit, u, pytest) }) {
			in.silent = append(in.silent, u)
		}
	}
}

// inUnit reports whether unit is u or, for pytest, lies in the directory
// u; "" stands for every unit.
func inUnit(unit, u string, pytest bool) bool {
	return u == "" || unit == u || (pytest && strings.HasPrefix(unit, u+"/"))
}

// failures describes the findings as Failures.
func (in *integrity) failures() []Failure {
	var fs []Failure
	for _, id := range in.missing {
		fs = append(fs, Failure{Name: id, Output: "in the baseline but did not run (deleted or renamed?)"})
	}
	for _, id := range in.skippedTests {
		fs = append(fs, Failure{Name: id, Output: "skipped; it ran at the baseline"})
	}
	for _, u := range in.silent {
		fs = append(fs, Failure{Name: u, Output: "its tests could not run at the baseline, and none of them ran now (tests deleted?)"})
	}
	for _, f := range in.changed {
		fs = append(fs, Failure{Name: f, Output: "protected test file changed since the run started. Test files are protected: " +
			"a changed expected value, assertion or test body no longer checks what the test checked, so it cannot count as a fix. " +
			"Restore the file to its content at the start of the run and fix the code under test instead."})
	}
	for _, f := range in.deleted {
		fs = append(fs, Failure{Name: f, Output: "protected test file deleted since the run started. Test files are protected: " +
			"restore the file and fix the code under test instead."})
	}
	for _, n := range in.notes {
		fs = append(fs, Failure{Name: "baseline", Output: n})
	}
	return fs
}

// reason summarises the findings in one line, without the goal's name.
func (in *integrity) reason() string {
	var parts []string
	if in.zero {
		s := "no test ran"
		if in.skipped > 0 {
			s += fmt.Sprintf(" (%d skipped)", in.skipped)
		}
		parts = append(parts, s+", and a run without tests never reaches the goal")
	}
	group := func(names []string, one, many string) {
		switch len(names) {
		case 0:
		case 1:
			parts = append(parts, fmt.Sprintf(one, names[0]))
		default:
			parts = append(parts, fmt.Sprintf(many, len(names), shortList(names)))
		}
	}
	group(in.missing, "%s was in the baseline but did not run (deleted or renamed?)",
		"%d tests of the baseline did not run (deleted or renamed?): %s")
	group(in.skippedTests, "%s was skipped (it ran at the baseline)",
		"%d tests of the baseline were skipped: %s")
	group(in.silent, "%s could not run its tests at the baseline, and none of them ran now (tests deleted?)",
		"%d units could not run their tests at the baseline, and none of them ran now (tests deleted?): %s")
	group(in.changed, "protected test file %s was changed", "%d protected test files were changed: %s")
	group(in.deleted, "protected test file %s was deleted", "%d protected test files were deleted: %s")
	if len(in.changed)+len(in.deleted) > 0 {
		parts[len(parts)-1] += " (test files may not be changed: restore them and fix the code under test)"
	}
	parts = append(parts, in.notes...)
	return strings.Join(parts, "; ")
}

// shortList renders up to five names, then how many more there are.
func shortList(names []string) string {
	fs := make([]Failure, len(names))
	for i, n := range names {
		fs[i] = Failure{Name: n}
	}
	return nameList(fs, len(names))
}

// plural renders "1 test" or "n tests".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxCachedBaselines bounds the baselines a goal keeps for callers that
// pass none in State.
const maxCachedBaselines = 64

// baselineCache holds the baselines taken at the first check of runs, by
// run ID and directory.
type baselineCache struct {
	mu    sync.Mutex
	m     map[string]*Baseline
	order []string
}

func cacheKey(runID, cwd string) string {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	return runID + "\x00" + filepath.Clean(cwd)
}

// baseline returns the baseline to check a run against: st.Baseline, else
// the one cached for the run, else nil. It fails if st.Baseline was taken
// by another goal.
func (c *baselineCache) baseline(goal string, st State, cwd string) (*Baseline, error) {
	if st.Baseline != nil {
		if st.Baseline.Goal != goal {
			return nil, &SettingError{Goal: goal, Setting: "State.Baseline", Problem: fmt.Sprintf("was taken by the goal %q", st.Baseline.Goal)}
		}
		return st.Baseline, nil
	}
	if st.RunID == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[cacheKey(st.RunID, cwd)], nil
}

// keep caches b as the baseline of the run st.RunID in cwd, if the run has
// an ID and State carries no baseline.
func (c *baselineCache) keep(st State, cwd string, b *Baseline) {
	if st.Baseline != nil || st.RunID == "" {
		return
	}
	key := cacheKey(st.RunID, cwd)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*Baseline{}
	}
	if _, ok := c.m[key]; ok {
		return
	}
	if len(c.order) == maxCachedBaselines {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = b
	c.order = append(c.order, key)
}

// testRun runs a test goal's tests once and returns what they showed and
// the Result of the run on its own; baseline is set for the run that
// records the baseline.
type testRun func(ctx context.Context, cwd string, baseline bool) (*observation, Result, error)

// baselined holds a test goal's runs to their baseline: it records the
// baseline (Baseliner) and checks each run against it. The test goals
// embed it.
type baselined struct {
	goal    string
	protect bool // !Config.AllowTestEdits
	cache   baselineCache
}

// record records the test files (unless Config.AllowTestEdits), then runs the
// tests and records what they showed.
func (b *baselined) record(ctx context.Context, cwd string, run testRun) (*Baseline, error) {
	files, err := b.testFiles(cwd)
	if err != nil {
		return nil, err
	}
	o, _, err := run(ctx, cwd, true)
	if err != nil {
		return nil, err
	}
	return newBaseline(b.goal, cwd, o, files), nil
}

// check runs the tests and holds the run to the baseline of st (taken
// from this run when there is none). It also returns what the run showed.
func (b *baselined) check(ctx context.Context, st State, cwd string, run testRun) (Result, *observation, error) {
	base, err := b.cache.baseline(b.goal, st, cwd)
	if err != nil {
		return Result{}, nil, err
	}
	files, err := b.testFiles(cwd)
	if err != nil {
		return Result{}, nil, err
	}
	o, res, err := run(ctx, cwd, false)
	if err != nil {
		return Result{}, nil, err
	}
	if base == nil {
		base = newBaseline(b.goal, cwd, o, files)
		b.cache.keep(st, cwd, base)
	}
	return withIntegrity(b.goal, res, checkIntegrity(base, o, files)), o, nil
}

// testFiles hashes the project's test files when they are protected (not
// Config.AllowTestEdits), and returns nil otherwise.
func (b *baselined) testFiles(cwd string) (map[string]string, error) {
	if !b.protect {
		return nil, nil
	}
	return hashTestFiles(cwd)
}
