//go:build unix

package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
)

// TestGroupCommitCrashLosesNoAcknowledgedWrite SIGKILLs a child process
// (TestGroupCommitCrashChild) while many of its threads checkpoint on one
// schema through group commit, so that the kill lands among batches in
// flight, and checks that every Put the child saw succeed (it prints each
// one, after Put returned) is stored, every thread still a chain.
func TestGroupCommitCrashLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	pgdbtest.URL(t)
	for trial := range 3 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			schema := freshSchema(t)
			open(t, schema) // migrates before the child starts
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestGroupCommitCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CHECKPOINT_POSTGRES_GROUP_CRASH="+schema)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			acked := map[string][]string{} // thread → acknowledged IDs, in order
			n, killAt := 0, 300+100*trial
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				thread, id, ok := strings.Cut(sc.Text(), " ")
				require.True(t, ok, "child wrote %q", sc.Text())
				acked[thread] = append(acked[thread], id)
				if n++; n == killAt {
					require.NoError(t, cmd.Process.Kill()) // SIGKILL
				}
			}
			require.Error(t, cmd.Wait(), "the child was to be killed")
			require.GreaterOrEqual(t, n, killAt, "the child died before it was killed")

			s := open(t, schema)
			for thread, ids := range acked {
				var chain []string // newest first
				parent := ""
				for tup, err := range s.List(t.Context(), thread, checkpoint.ListOptions{}) {
					require.NoError(t, err)
					if parent != "" {
						require.Equal(t, tup.ID, parent, "thread %s: a checkpoint's parent is the one before it", thread)
					}
					chain, parent = append(chain, tup.ID), tup.ParentID
				}
				require.Empty(t, parent, "thread %s: its first checkpoint has no parent", thread)
				require.GreaterOrEqual(t, len(chain), len(ids), "thread %s lost acknowledged checkpoints", thread)
				for i, id := range ids {
					require.Equal(t, id, chain[len(chain)-1-i], "thread %s: acknowledged checkpoint %d", thread, i)
				}
			}
		})
	}
}

// TestGroupCommitCrashChild is the child process of
// TestGroupCommitCrashLosesNoAcknowledgedWrite; run on its own it is
// skipped. It writes until it is killed.
func TestGroupCommitCrashChild(t *testing.T) {
	schema := os.Getenv("CHECKPOINT_POSTGRES_GROUP_CRASH")
	if schema == "" {
		t.Skip("child process of TestGroupCommitCrashLosesNoAcknowledgedWrite")
	}
	s, err := postgres.Open(context.Background(), pgdbtest.URL(t), postgres.WithSchema(schema))
	require.NoError(t, err)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			thread := fmt.Sprintf("k%d", i)
			parent := ""
			for step := 1; ; step++ {
				id := fmt.Sprintf("%08d", step)
				if err := s.Put(context.Background(), cpOf(thread, id, parent, int64(step), fmt.Sprint(step))); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				_, err := fmt.Fprintf(os.Stdout, "%s %s\n", thread, id)
				mu.Unlock()
				if err != nil {
					return
				}
				parent = id
			}
		})
	}
	wg.Wait()
}
