//go:build unix

package postgres_test

// Crash test on PostgreSQL: internal/durabilitytest (crash.go) holds the
// test, which checkpoint/sqlite/crash_test.go runs on SQLite; see there
// for the flags and the command that runs 500 trials over both backends.
// Skipped unless AGENTGRAPH_TEST_POSTGRES_URL is set.

import (
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
)

func TestCrashResume(t *testing.T) {
	durabilitytest.CrashResume(t, durabilitytest.Postgres, durabilitytest.CrashFlags())
}
