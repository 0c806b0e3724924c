package goals

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Lines of test runners' output that testCounter recognises.
var (
	ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// pytest: "==== 1 failed, 2 passed, 1 skipped in 0.12s ====", "==== no tests ran in 0.01s ===="
	countPytestRe = regexp.MustCompile(`^=+ (.*\bin [0-9.]+s\b.*?) =+$`)
	countPyItemRe = regexp.MustCompile(`(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b`)
	// cargo: "test result: ok. 2 passed; 0 failed; 1 ignored; ..."
	countCargoRe = regexp.MustCompile(`^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	// go test -v: "--- PASS: TestX (0.00s)", indented for subtests
	countGoRe = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): \S`)
	// jest "Tests: 1 failed, 2 passed, 3 total", vitest "Tests  1 failed | 2 passed (3)"
	countJestRe   = regexp.MustCompile(`^\s*Tests:?\s+(.*\d.*)$`)
	countJSItemRe = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|pending)\b`)
	// bun " 2 pass", mocha "  2 passing (3ms)"
	countBunRe = regexp.MustCompile(`^\s*(\d+) (pass|fail|skip|todo|passing|failing|pending)\b(?:\s*\(.*\))?\s*$`)
	// node:test "# pass 2" (TAP), "ℹ pass 2" (spec)
	countNodeRe = regexp.MustCompile(`^[#ℹ] (pass|fail|skipped|todo) (\d+)\s*$`)
	// "N passed, N failed[, N skipped]", optionally after one word and a colon
	countPlainRe = regexp.MustCompile(`^\s*(?:\w+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$`)
)

// testCounter adds up the test counts that the output lines of known test
// runners show: pytest, cargo test, go test -v and -json, jest, vitest,
// bun, node's test runner, mocha, and a plain "N passed, N failed" line.
// It serves make-test, whose target runs any of them. It is safe for
// concurrent use.
type testCounter struct {
	mu                      sync.Mutex
	passed, failed, skipped int
	counted                 bool
}

func (c *testCounter) add(kind string, n int) {
	c.counted = true
	switch kind {
	case "pass", "passed", "passing", "xpassed", "PASS":
		c.passed += n
	case "fail", "failed", "failing", "error", "errors", "FAIL":
		c.failed += n
	case "skip", "skipped", "ignored", "todo", "pending", "xfailed", "SKIP":
		c.skipped += n
	}
}

func (c *testCounter) line(s string) {
	s = strings.TrimRight(ansiRe.ReplaceAllString(s, ""), "\r")
	c.mu.Lock()
	defer c.mu.Unlock()
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if strings.HasPrefix(s, "{") {
		var ev struct{ Action, Test string }
		if json.Unmarshal([]byte(s), &ev) == nil {
			if ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
				c.add(ev.Action, 1)
			}
			return
		}
	}
	if m := countPytestRe.FindStringSubmatch(s); m != nil {
		c.counted = true // "no tests ran" counts zero
		for _, it := range countPyItemRe.FindAllStringSubmatch(m[1], -1) {
			c.add(it[2], atoi(it[1]))
		}
		return
	}
	if m := countCargoRe.FindStringSubmatch(s); m != nil {
		c.add("passed", atoi(m[1]))
		c.add("failed", atoi(m[2]))
		c.add("ignored", atoi(m[3]))
		return
	}
	if m := countGoRe.FindStringSubmatch(s); m != nil {
		c.add(m[1], 1)
		return
	}
	if m := countJestRe.FindStringSubmatch(s); m != nil {
		for _, it := range countJSItemRe.FindAllStringSubmatch(m[1], -1) {
			c.add(it[2], atoi(it[1]))
		}
		return
	}
	if m := countBunRe.FindStringSubmatch(s); m != nil {
		c.add(m[2], atoi(m[1]))
		return
	}
	if m := countNodeRe.FindStringSubmatch(s); m != nil {
		c.add(m[1], atoi(m[2]))
		return
	}
	if m := countPlainRe.FindStringSubmatch(s); m != nil {
		c.add("passed", atoi(m[1]))
		c.add("failed", atoi(m[2]))
		if m[3] != "" {
			c.add("skipped", atoi(m[3]))
		}
	}
}

// counts returns the totals and whether any line was recognised.
func (c *testCounter) counts() (passed, failed, skipped int, counted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passed, c.failed, c.skipped, c.counted
}
