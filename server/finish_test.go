package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

// refusingResults is a real Backend whose FinishRun refuses every
// successful result, as a database refuses a value it cannot hold.
type refusingResults struct {
	server.Backend
	refused atomic.Int32
}

func (b *refusingResults) FinishRun(ctx context.Context, c *server.Claim, res server.RunResult) error {
	if res.Status == "success" {
		b.refused.Add(1)
		return errors.New("value too large to store")
	}
	return b.Backend.FinishRun(ctx, c, res)
}

// A run whose result cannot be recorded ends once, failed, saying why:
// it is not claimed and run again at every lease.
func TestRunWhoseResultCannotBeRecordedFailsOnce(t *testing.T) {
	saver, b := sqliteEnv(t)
	rb := &refusingResults{Backend: b}
	s, err := server.New(server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver),
		server.WithBackend(rb), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(context.Background()))
		hs.Close()
	})
	e := &env{t: t, srv: hs}
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, &out)
	require.Equal(t, "StorageError", out["__error__"].(map[string]any)["error"])
	require.Contains(t, out["__error__"].(map[string]any)["message"], "value too large to store")
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	require.Equal(t, "error", runs[0]["status"])
	require.Equal(t, int32(1), rb.refused.Load(), "the run was not run again")
}
