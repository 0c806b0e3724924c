//go:build unix

package postgres_test

// Several processes on one PostgreSQL database: the tests of
// internal/durabilitytest, which re-execute this test binary as their
// child processes (TestProcessChild). Skipped unless
// AGENTGRAPH_TEST_POSTGRES_URL is set.

import (
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
)

// TestProcessChild is the child process of the tests below and of
// TestCrashResume; run on its own it is skipped.
func TestProcessChild(t *testing.T) { durabilitytest.Child(t, durabilitytest.Postgres) }

func TestProcessForkCollision(t *testing.T) {
	durabilitytest.ForkCollision(t, durabilitytest.Postgres)
}

func TestProcessOldFork(t *testing.T) { durabilitytest.OldProcessFork(t, durabilitytest.Postgres) }

func TestProcessAlternatingWriters(t *testing.T) {
	durabilitytest.AlternatingWriters(t, durabilitytest.Postgres)
}

func TestProcessLease(t *testing.T) { durabilitytest.Lease(t, durabilitytest.Postgres) }

func TestLeaseHolderKilled(t *testing.T) {
	durabilitytest.LeaseHolderKilled(t, durabilitytest.Postgres)
}

// TestLeaseChild is the child process of TestLeaseHolderKilled; run on its
// own it is skipped.
func TestLeaseChild(t *testing.T) { durabilitytest.LeaseChild(t, durabilitytest.Postgres) }

// TestPausedHolder: a holder SIGSTOPped past its lease is fenced once
// another process took its thread over (-pause.trials=50 for the measure).
func TestPausedHolder(t *testing.T) { durabilitytest.PausedHolder(t, durabilitytest.Postgres) }
