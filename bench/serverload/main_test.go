package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// TestMain makes the test binary a server process when the driver starts
// it as one.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(serveEnv); cfg != "" {
		if err := serve(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "serverload serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestEveryRunFinishesOnceWhenAProcessIsKilled is the load run, small
// enough for CI: 20 threads × 2 runs through 3 processes, one killed with
// SIGKILL once a third of the runs ended.
func TestEveryRunFinishesOnceWhenAProcessIsKilled(t *testing.T) {
	url := pgdbtest.URL(t)
	r, err := Run(t.Context(), Config{URL: url, Threads: 20, Runs: 2, Procs: 3, Workers: 4, Clients: 10,
		NodeDelay: 20 * time.Millisecond, LeaseTTL: time.Second, KillAt: 0.3, childBinary: os.Args[0]})
	require.NoError(t, err, "report: %+v", r)
	require.True(t, r.Killed)
	require.Equal(t, 40, r.Succeeded)
	require.Zero(t, r.Lost)
	require.Empty(t, r.BadThreads)
	require.Empty(t, r.Overlaps)
}
