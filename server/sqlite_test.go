package server_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/server"
	storesqlite "github.com/agentgraph/agentgraph/store/sqlite"
)

func TestServesAGraphOnSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	saver, err := ckptsqlite.Open(ctx, filepath.Join(dir, "ckpt.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = saver.Close() })
	st, err := storesqlite.Open(ctx, filepath.Join(dir, "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := server.New(server.Graph("agent", agentGraph(t, saver)), server.WithCheckpointer(saver), server.WithStore(st), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	e := &env{t: t, srv: hs}

	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "sql"}}, &out)
	require.Contains(t, out, "__interrupt__")
	var final map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": "ok"}}, &final)
	require.Equal(t, []any{"plan:sql", "ask", "finish"}, final["log"])
	var hist []any
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{}, &hist)
	require.Len(t, hist, 5)

	require.Equal(t, 204, e.do("PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": map[string]any{"v": 1}}).status)
	var it map[string]any
	e.ok("GET", "/store/items?namespace=a&key=k", nil, &it)
	require.Equal(t, map[string]any{"v": float64(1)}, it["value"])

	require.Equal(t, 204, e.do("DELETE", "/threads/"+tid, nil).status)
	e.ok("POST", "/threads", map[string]any{"thread_id": tid, "metadata": map[string]any{"graph_id": "agent"}}, nil)
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{}, &hist)
	require.Empty(t, hist, "deleting the thread deleted its SQLite checkpoints")
}
