package goals

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTestCounterRecognisesRunnerSummaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		output  string
		counts  [3]int // passed, failed, skipped
		counted bool
	}{
		{"pytest", "collected 4 items\n\n==== 1 failed, 2 passed, 1 skipped, 1 xfailed in 0.12s ====\n", [3]int{2, 1, 2}, true},
		{"pytest without tests", "==== no tests ran in 0.01s ====\n", [3]int{}, true},
		{"cargo, two binaries", "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured\n", [3]int{3, 1, 1}, true},
		{"go test -v", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- SKIP: TestB/x (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\n", [3]int{1, 1, 1}, true},
		{"go test -json", `{"Action":"pass","Package":"m","Test":"TestA"}` + "\n" + `{"Action":"output","Package":"m","Test":"TestA","Output":"--- PASS: TestA\n"}` + "\n" + `{"Action":"pass","Package":"m"}` + "\n", [3]int{1, 0, 0}, true},
		{"jest", "Test Suites: 1 failed, 1 total\nTests:       1 failed, 2 passed, 3 total\n", [3]int{2, 1, 0}, true},
		{"vitest", " Tests  1 failed | 2 passed | 1 skipped (4)\n", [3]int{2, 1, 1}, true},
		{"bun", " 2 pass\n 1 skip\n 1 fail\nRan 4 tests across 1 files.\n", [3]int{2, 1, 1}, true},
		{"node's test runner", "# tests 3\n# pass 2\n# fail 0\n# skipped 1\n", [3]int{2, 0, 1}, true},
		{"mocha", "  3 passing (5ms)\n  1 failing\n  2 pending\n", [3]int{3, 1, 2}, true},
		{"plain line", "unit: 5 passed, 1 failed, 2 skipped\n", [3]int{5, 1, 2}, true},
		{"colours", "\x1b[32m 2 pass\x1b[0m\n", [3]int{2, 0, 0}, true},
		{"nothing recognised", "all good\nok  \texample.com/m\t0.01s\n", [3]int{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c testCounter
			for _, line := range strings.Split(strings.TrimSuffix(tt.output, "\n"), "\n") {
				c.line(line)
			}
			passed, failed, skipped, counted := c.counts()
			require.Equal(t, tt.counts, [3]int{passed, failed, skipped})
			require.Equal(t, tt.counted, counted)
		})
	}
}
