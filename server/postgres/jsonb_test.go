package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A U+0000 in a run's input and metadata — which PostgreSQL's jsonb cannot
// hold — is stored as U+FFFD, and the run ends once: it is not refused with
// a 500, nor re-run at every lease because its bookkeeping fails.
func TestRunWithANulInItsStateFinishesOnce(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	var th threadJSON
	a.ok(t, "POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "a\u0000b"}}, &th)
	var out struct {
		Steps []string `json:"steps"`
	}
	a.ok(t, "POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent",
		"input": input(th.ThreadID, "x\u0000y", ""), "metadata": map[string]any{"note": "\u0000"}}, &out)
	require.Equal(t, []string{"x\ufffdy:first", "x\ufffdy:second"}, out.Steps, "the run's result shows it as U+FFFD")
	var st struct {
		Values struct {
			Steps []string `json:"steps"`
		} `json:"values"`
	}
	a.ok(t, "GET", "/threads/"+th.ThreadID+"/state", nil, &st)
	require.Equal(t, []string{"x\ufffdy:first", "x\ufffdy:second"}, st.Values.Steps, "the run's input was stored with U+FFFD")

	var runs []runJSON
	a.ok(t, "GET", "/threads/"+th.ThreadID+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	require.Equal(t, "success", runs[0].Status)
	var got threadJSON
	a.ok(t, "GET", "/threads/"+th.ThreadID, nil, &got)
	require.Equal(t, "idle", got.Status)
	require.Equal(t, []string{"x\ufffdy:first", "x\ufffdy:second"}, got.Values.Steps, "the thread's record shows it as U+FFFD")
}

// An assistant named with a U+0000 is stored, the character as U+FFFD,
// not refused with a 500.
func TestAssistantWithANulInItsNameIsStored(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	var as struct {
		Name string `json:"name"`
	}
	a.ok(t, "POST", "/assistants", map[string]any{"graph_id": "agent", "name": "a\u0000b"}, &as)
	require.Equal(t, "a\ufffdb", as.Name)
}
