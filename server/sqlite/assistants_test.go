package sqlite_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
)

type assistantJSON struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Version     int            `json:"version"`
	Config      map[string]any `json:"config"`
	Context     any            `json:"context"`
	Metadata    map[string]any `json:"metadata"`
}

func TestAnAssistantCreatedOnOneServerIsServedByAnother(t *testing.T) {
	f := newFile(t)
	a, b := startProc(t, f, "a"), startProc(t, f, "b")
	var made assistantJSON
	a.ok(t, "POST", "/assistants", map[string]any{"graph_id": "agent", "name": "Writer", "config": map[string]any{"configurable": map[string]any{"model": "m1"}},
		"context": map[string]any{"tone": "dry"}, "metadata": map[string]any{"team": "x"}}, &made)
	require.Equal(t, 1, made.Version)

	var got assistantJSON
	b.ok(t, "GET", "/assistants/"+made.AssistantID, nil, &got)
	require.Equal(t, made, got)
	var found []assistantJSON
	b.ok(t, "POST", "/assistants/search", map[string]any{"metadata": map[string]any{"team": "x"}}, &found)
	require.Equal(t, []assistantJSON{made}, found)
	var n int
	b.ok(t, "POST", "/assistants/count", map[string]any{"graph_id": "agent"}, &n)
	require.Equal(t, 2, n, "the graph's own assistant and the one created on a")

	tid := b.newThread(t)
	var out struct {
		Steps []string `json:"steps"`
	}
	b.ok(t, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": made.AssistantID, "input": map[string]any{"tag": "r1"}}, &out)
	require.Equal(t, []string{"r1:first", "r1:second"}, out.Steps)
	var runs []struct {
		AssistantID string `json:"assistant_id"`
		Status      string `json:"status"`
	}
	a.ok(t, "GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	require.Equal(t, made.AssistantID, runs[0].AssistantID)
	require.Equal(t, "success", runs[0].Status)

	var patched assistantJSON
	b.ok(t, "PATCH", "/assistants/"+made.AssistantID, map[string]any{"name": "Editor", "metadata": map[string]any{"rev": 2}}, &patched)
	require.Equal(t, 2, patched.Version)
	a.ok(t, "GET", "/assistants/"+made.AssistantID, nil, &got)
	require.Equal(t, "Editor", got.Name)
	require.Equal(t, map[string]any{"team": "x", "rev": float64(2)}, got.Metadata)
	var versions []assistantJSON
	a.ok(t, "POST", "/assistants/"+made.AssistantID+"/versions", map[string]any{}, &versions)
	require.Len(t, versions, 2)
	require.Equal(t, []int{2, 1}, []int{versions[0].Version, versions[1].Version})
	require.Equal(t, "Writer", versions[1].Name)
	a.ok(t, "POST", "/assistants/"+made.AssistantID+"/latest", map[string]any{"version": 1}, &got)
	b.ok(t, "GET", "/assistants/"+made.AssistantID, nil, &got)
	require.Equal(t, 1, got.Version)
	require.Equal(t, "Writer", got.Name)

	require.Equal(t, 204, b.call(t, "DELETE", "/assistants/"+made.AssistantID, nil, nil))
	require.Equal(t, 404, a.call(t, "GET", "/assistants/"+made.AssistantID, nil, nil))
	require.Equal(t, 404, a.call(t, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": made.AssistantID, "input": map[string]any{"tag": "r2"}}, nil),
		"a run naming a deleted assistant is refused on every server")
}

func TestTheGraphsOwnAssistantStaysComputedAndUnchangeable(t *testing.T) {
	f := newFile(t)
	a, b := startProc(t, f, "a"), startProc(t, f, "b")
	var sys []assistantJSON
	a.ok(t, "POST", "/assistants/search", map[string]any{"metadata": map[string]any{"created_by": "system"}}, &sys)
	require.Len(t, sys, 1)
	id := sys[0].AssistantID
	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"create with its id", "POST", "/assistants", map[string]any{"graph_id": "agent", "assistant_id": id}, 409},
		{"patch", "PATCH", "/assistants/" + id, map[string]any{"name": "mine"}, 409},
		{"delete", "DELETE", "/assistants/" + id, nil, 409},
		{"delete by graph name", "DELETE", "/assistants/agent", nil, 409},
		{"create of an unserved graph", "POST", "/assistants", map[string]any{"graph_id": "other"}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, b.call(t, tt.method, tt.path, tt.body, nil))
		})
	}
	var n int
	a.ok(t, "POST", "/assistants/count", map[string]any{}, &n)
	require.Equal(t, 1, n, "nothing of the system assistant was stored")
}

func TestAStoredAssistantOfAGraphThisServerDoesNotServeIsNotRun(t *testing.T) {
	f := newFile(t)
	p := startProc(t, f, "a")
	_, err := p.backend.CreateAssistant(t.Context(), server.AssistantRecord{ID: "00000000-0000-4000-8000-000000000001", GraphID: "elsewhere",
		Name: "foreign"}, "")
	require.NoError(t, err)
	var got assistantJSON
	p.ok(t, "GET", "/assistants/00000000-0000-4000-8000-000000000001", nil, &got)
	require.Equal(t, "elsewhere", got.GraphID)
	tid := p.newThread(t)
	require.Equal(t, 409, p.call(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": got.AssistantID, "input": map[string]any{"tag": "x"}}, nil))
	require.Equal(t, 409, p.call(t, "GET", "/assistants/"+got.AssistantID+"/graph", nil, nil))
}

func TestOpenUpgradesAVersion1FileWithItsThreads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db := rawDB(t, path)
	for _, stmt := range sqlite.MigrationsForTest()[0] {
		_, err := db.ExecContext(t.Context(), stmt)
		require.NoError(t, err)
	}
	_, err := db.ExecContext(t.Context(), `CREATE TABLE agentgraph_server_schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO agentgraph_server_schema_migrations (version, applied_at) VALUES (1, 0)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO agentgraph_server_threads (thread_id, created_at, updated_at, metadata, status, config, vals, interrupts)
		VALUES ('t1', 0, 0, '{"old":true}', 'idle', '{}', 'null', '{}')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	b, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	th, err := b.Thread(t.Context(), "t1")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"old": true}, th.Metadata)
	a, err := b.CreateAssistant(t.Context(), server.AssistantRecord{ID: "a1", GraphID: "agent", Name: "new", Context: json.RawMessage(`{}`)}, "")
	require.NoError(t, err)
	require.Equal(t, 1, a.Version)
	var v int
	require.NoError(t, rawDB(t, path).QueryRowContext(t.Context(), `SELECT MAX(version) FROM agentgraph_server_schema_migrations`).Scan(&v))
	require.Equal(t, sqlite.SchemaVersion(), v)
}
