package postgres_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

type assistantJSON struct {
	AssistantID string         `json:"assistant_id"`
	Name        string         `json:"name"`
	Version     int            `json:"version"`
	Metadata    map[string]any `json:"metadata"`
}

func TestAssistantCreatedOnOneProcessIsPatchedAndRunOnAnother(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	var made assistantJSON
	a.ok(t, "POST", "/assistants", map[string]any{"graph_id": "agent", "name": "Writer", "metadata": map[string]any{"team": "x"}}, &made)

	var found []assistantJSON
	b.ok(t, "POST", "/assistants/search", map[string]any{"name": "writ"}, &found)
	require.Equal(t, []assistantJSON{made}, found)
	tid := b.newThread(t)
	var out struct {
		Steps []string `json:"steps"`
	}
	b.ok(t, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": made.AssistantID, "input": input(tid, "r1", "")}, &out)
	require.Equal(t, []string{"r1:first", "r1:second"}, out.Steps)

	var patched assistantJSON
	b.ok(t, "PATCH", "/assistants/"+made.AssistantID, map[string]any{"name": "Editor"}, &patched)
	require.Equal(t, 2, patched.Version)
	var versions []assistantJSON
	a.ok(t, "POST", "/assistants/"+made.AssistantID+"/versions", map[string]any{}, &versions)
	require.Len(t, versions, 2)
	require.Equal(t, "Editor", versions[0].Name)
	require.Equal(t, "Writer", versions[1].Name)

	require.Equal(t, http.StatusNoContent, a.call(t, "DELETE", "/assistants/"+made.AssistantID, nil, nil))
	require.Equal(t, http.StatusNotFound, b.call(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": made.AssistantID, "input": input(tid, "r2", "")}, nil))
}
