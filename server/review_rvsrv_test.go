package server_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// failedRun runs the boom graph on a new thread, its stream read to its
// end, and returns the thread, the run and the events its stream carried.
func failedRun(t *testing.T, e *env) (tid, rid string, evs []event) {
	t.Helper()
	tid = e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "boom", "input": map[string]any{"topic": "x"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	evs = parseSSE(t, r.body)
	require.Equal(t, []string{"error", "end"}, names(evs)[len(evs)-2:], "%s", r.body)
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	return tid, runs[0]["run_id"].(string), evs
}

// A join of a failed run's stream with Last-Event-ID naming its "error"
// gets its "end" alone, with the id the run's own stream gave it, on
// every backend.
func TestAJoinPastAFailedRunsErrorGetsItsEndAlone(t *testing.T) {
	e := newEnv(t)
	tid, rid, evs := failedRun(t, e)
	errEv, end := evs[len(evs)-2], evs[len(evs)-1]

	r := e.doCtx(context.Background(), "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, map[string]string{"Last-Event-ID": strconv.Itoa(errEv.ID)})
	require.Equal(t, 200, r.status, "%s", r.body)
	got := parseSSE(t, r.body)
	require.Equal(t, []string{"end"}, names(got))
	require.Equal(t, end.ID, got[0].ID)
}

// A join of a failed run's stream with Last-Event-ID naming the event
// before its "error" gets the error (with its id) and the end.
func TestAJoinJustBeforeAFailedRunsErrorGetsItAndTheEnd(t *testing.T) {
	e := newEnv(t)
	tid, rid, evs := failedRun(t, e)
	errEv, end := evs[len(evs)-2], evs[len(evs)-1]

	r := e.doCtx(context.Background(), "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, map[string]string{"Last-Event-ID": strconv.Itoa(errEv.ID - 1)})
	require.Equal(t, 200, r.status, "%s", r.body)
	got := parseSSE(t, r.body)
	require.Equal(t, []string{"error", "end"}, names(got))
	require.Equal(t, []int{errEv.ID, end.ID}, []int{got[0].ID, got[1].ID})
	require.JSONEq(t, string(errEv.Data), string(got[0].Data))
}

// A join of a failed run's stream with Last-Event-ID naming its "end"
// gets nothing more.
func TestAJoinPastAFailedRunsEndGetsNothing(t *testing.T) {
	e := newEnv(t)
	tid, rid, evs := failedRun(t, e)
	end := evs[len(evs)-1]

	r := e.doCtx(context.Background(), "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, map[string]string{"Last-Event-ID": strconv.Itoa(end.ID)})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Empty(t, parseSSE(t, r.body))
}
