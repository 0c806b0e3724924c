//go:build unix

package sqlite_test

// Several processes on one SQLite file: the tests of
// internal/durabilitytest, which re-execute this test binary as their
// child processes (TestProcessChild).

import (
	"testing"

	"github.com/agentgraph/agentgraph/internal/durabilitytest"
)

// TestProcessChild is the child process of the tests below and of
// TestCrashResume; run on its own it is skipped.
func TestProcessChild(t *testing.T) { durabilitytest.Child(t, durabilitytest.SQLite) }

func TestProcessForkCollision(t *testing.T) {
	durabilitytest.ForkCollision(t, durabilitytest.SQLite)
}

func TestProcessOldFork(t *testing.T) { durabilitytest.OldProcessFork(t, durabilitytest.SQLite) }

func TestProcessAlternatingWriters(t *testing.T) {
	durabilitytest.AlternatingWriters(t, durabilitytest.SQLite)
}

func TestProcessLease(t *testing.T) { durabilitytest.Lease(t, durabilitytest.SQLite) }

func TestLeaseHolderKilled(t *testing.T) { durabilitytest.LeaseHolderKilled(t, durabilitytest.SQLite) }

// TestLeaseChild is the child process of TestLeaseHolderKilled; run on its
// own it is skipped.
func TestLeaseChild(t *testing.T) { durabilitytest.LeaseChild(t, durabilitytest.SQLite) }

// TestPausedHolder: a holder SIGSTOPped past its lease is fenced once
// another process took its thread over (-pause.trials=50 for the measure).
func TestPausedHolder(t *testing.T) {
	durabilitytest.PausedHolder(t, durabilitytest.SQLite)
}
