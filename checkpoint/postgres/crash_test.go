//go:build unix

package postgres_test

// Crash test on PostgreSQL: internal/durabilitytest (crash.go) holds the
// test, which checkpoint/sqlite/crash_test.go runs on SQLite; see there
// for the flags and the command that runs 500 trials over both backends.
// Skipped unless AGENTGRAPH_TEST_POSTGRES_URL is set.

import (
	"flag"
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
)

var (
	crashTrials = flag.Int("crash.trials", 9, "SIGKILL trials of TestCrashResume with DurabilitySync (async and exit get a quarter as many each, at least 3)")
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestCrashResume's kill moments (0: random, logged)")
)

func TestCrashResume(t *testing.T) {
	durabilitytest.CrashResume(t, durabilitytest.Postgres, durabilitytest.CrashOptions{Trials: *crashTrials, Seed: *crashSeed})
}
