package sqlite_test

// Claims from several operating-system processes on one file: the test
// binary re-executes itself as the claimers.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

// claimerEnv names the file a child claimer works on.
const claimerEnv = "SERVER_SQLITE_TEST_CLAIMER_DB"

// TestClaimerChild is the child process of
// TestClaimsFromSeveralProcessesHandEachRunToOne: it claims and finishes
// runs until none is left, printing each run it claimed. Run on its own
// it is skipped.
func TestClaimerChild(t *testing.T) {
	path := os.Getenv(claimerEnv)
	if path == "" {
		t.Skip("the child of TestClaimsFromSeveralProcessesHandEachRunToOne")
	}
	b, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	defer b.Close()
	holder := fmt.Sprintf("pid%d", os.Getpid())
	for {
		c, err := b.ClaimRun(t.Context(), holder, time.Minute, nil)
		require.NoError(t, err)
		if c == nil {
			return
		}
		fmt.Printf("claimed %s\n", c.Run.ID)
		require.NoError(t, b.FinishRun(t.Context(), c, server.RunResult{Status: "success", Thread: server.ThreadState{Status: "idle"}}))
	}
}

func TestClaimsFromSeveralProcessesHandEachRunToOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.db")
	b := open(t, path)
	var want []string
	for i := range 30 {
		tid := fmt.Sprintf("t%02d", i)
		_, err := b.CreateThread(t.Context(), server.ThreadRecord{ID: tid, CreatedAt: time.Now(), Status: "idle"}, "")
		require.NoError(t, err)
		for r := range 2 {
			id := fmt.Sprintf("%s-r%d", tid, r)
			_, err := b.CreateRun(t.Context(), server.RunRecord{ID: id, ThreadID: tid, AssistantID: "a", CreatedAt: time.Now(),
				MultitaskStrategy: "enqueue", GraphID: "g", Kwargs: json.RawMessage(`{}`)}, nil)
			require.NoError(t, err)
			want = append(want, id)
		}
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 3 {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClaimerChild$", "-test.v")
		cmd.Env = append(os.Environ(), claimerEnv+"="+path)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	claimed := map[string]int{}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), outs[i].String())
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if id, ok := strings.CutPrefix(line, "claimed "); ok {
				claimed[id]++
			}
		}
	}
	for _, id := range want {
		require.Equal(t, 1, claimed[id], "run %s claimed %d times", id, claimed[id])
	}
	require.Len(t, claimed, len(want))
	for _, id := range want {
		r, err := b.Run(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, "success", r.Status)
	}
}
