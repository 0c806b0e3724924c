package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A copy of a paused thread has its state, history and pending interrupt;
// resuming the copy leaves the source where it was.
func TestThreadCopyCarriesStateAndHistory(t *testing.T) {
	e := newEnv(t)
	src := e.newThread(map[string]any{"owner": "ann"})
	e.ok("POST", "/threads/"+src+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "cats"}}, nil)

	var cp map[string]any
	e.ok("POST", "/threads/"+src+"/copy", nil, &cp)
	dst := cp["thread_id"].(string)
	require.NotEqual(t, src, dst)
	var th map[string]any
	e.ok("GET", "/threads/"+src, nil, &th)
	want := th["metadata"].(map[string]any)
	want["thread_id"] = dst
	require.Equal(t, want, cp["metadata"])
	require.Equal(t, "ann", want["owner"])
	require.Equal(t, "interrupted", cp["status"])

	var before, copied map[string]any
	e.ok("GET", "/threads/"+src+"/state", nil, &before)
	e.ok("GET", "/threads/"+dst+"/state", nil, &copied)
	require.Equal(t, before["values"], copied["values"])
	require.Equal(t, before["next"], copied["next"])
	require.Equal(t, before["checkpoint"].(map[string]any)["checkpoint_id"], copied["checkpoint"].(map[string]any)["checkpoint_id"])
	require.Len(t, copied["interrupts"], 1)
	var hs, hd []any
	e.ok("POST", "/threads/"+src+"/history", map[string]any{}, &hs)
	e.ok("POST", "/threads/"+dst+"/history", map[string]any{}, &hd)
	require.Len(t, hd, len(hs))

	var out map[string]any
	e.ok("POST", "/threads/"+dst+"/runs/wait", map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": "yes"}}, &out)
	require.Equal(t, []any{"plan:cats", "ask", "finish"}, out["log"])
	e.ok("GET", "/threads/"+src+"/state", nil, &before)
	require.Equal(t, []any{"ask"}, before["next"], "the source still waits")
}

// Copying a thread that does not exist is a 404.
func TestThreadCopyOfAMissingThreadIsNotFound(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 404, e.do("POST", "/threads/00000000-0000-4000-8000-000000000000/copy", nil).status)
}

// A thread id names one thread however its hex digits are cased.
func TestThreadIDsIgnoreCase(t *testing.T) {
	e := newEnv(t)
	upper := "ABCDEF01-2345-4678-9ABC-DEF012345678"
	var th map[string]any
	e.ok("POST", "/threads", map[string]any{"thread_id": upper}, &th)
	require.Equal(t, "abcdef01-2345-4678-9abc-def012345678", th["thread_id"])
	e.ok("GET", "/threads/"+upper, nil, &th)
	e.ok("GET", "/threads/abcdef01-2345-4678-9abc-def012345678", nil, &th)
	var found []map[string]any
	e.ok("POST", "/threads/search", map[string]any{"ids": []string{upper}}, &found)
	require.Len(t, found, 1)
}

// A copy made while a run works on the source shows the state of the
// checkpoints it got, not the source's record from before the run.
func TestThreadCopyDuringARunShowsTheCopiedState(t *testing.T) {
	e := newEnv(t)
	src := e.newThread(nil)
	e.startSlow(src, "a", map[string]any{"input": map[string]any{"topic": "a", "log": []string{"a-input"}}})
	var cp map[string]any
	e.ok("POST", "/threads/"+src+"/copy", nil, &cp)
	e.gate.release <- struct{}{}
	dst := cp["thread_id"].(string)
	var st map[string]any
	e.ok("GET", "/threads/"+dst+"/state", nil, &st)
	require.Equal(t, st["values"], cp["values"])
	require.Equal(t, []any{"a-input"}, cp["values"].(map[string]any)["log"])
	require.Equal(t, "interrupted", cp["status"], "the copy has a step left to run")
}

// Assistant ids are matched ignoring the case of their hex digits, and the
// graphs' own ids (UUIDv5s of their names) cannot be taken by another.
func TestAssistantIDsIgnoreCaseAndVersion5IsReserved(t *testing.T) {
	e := newEnv(t)
	var own map[string]any
	e.ok("GET", "/assistants/agent", nil, &own)
	ownID := own["assistant_id"].(string)
	for _, id := range []string{ownID, strings.ToUpper(ownID), "11111111-2222-5333-8444-555555555555"} {
		r := e.do("POST", "/assistants", map[string]any{"graph_id": "agent", "assistant_id": id})
		require.Equal(t, 409, r.status, "%s: %s", id, r.body)
	}
	var a map[string]any
	e.ok("POST", "/assistants", map[string]any{"graph_id": "agent", "assistant_id": "ABCDEF01-2345-4678-9ABC-DEF012345678"}, &a)
	require.Equal(t, "abcdef01-2345-4678-9abc-def012345678", a["assistant_id"])
	e.ok("GET", "/assistants/ABCDEF01-2345-4678-9abc-def012345678", nil, &a)
	var n int
	e.ok("POST", "/assistants/count", map[string]any{"graph_id": "agent"}, &n)
	require.Equal(t, 2, n, "the graph's own and the one created")
}
