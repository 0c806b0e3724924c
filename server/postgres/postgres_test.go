package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
)

type threadJSON struct {
	ThreadID string         `json:"thread_id"`
	Status   string         `json:"status"`
	Metadata map[string]any `json:"metadata"`
	Values   struct {
		Steps []string `json:"steps"`
	} `json:"values"`
}

func input(tid, tag, gate string) map[string]any {
	return map[string]any{"thread": tid, "tag": tag, "gate": gate}
}

func TestThreadCreatedOnOneProcessIsReadSearchedAndRunOnAnother(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	var th threadJSON
	a.ok(t, "POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "ann"}}, &th)

	var got threadJSON
	b.ok(t, "GET", "/threads/"+th.ThreadID, nil, &got)
	require.Equal(t, "ann", got.Metadata["owner"])
	var found []threadJSON
	b.ok(t, "POST", "/threads/search", map[string]any{"metadata": map[string]any{"owner": "ann"}}, &found)
	require.Len(t, found, 1)
	require.Equal(t, th.ThreadID, found[0].ThreadID)

	var out struct {
		Steps []string `json:"steps"`
	}
	b.ok(t, "POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "agent", "input": input(th.ThreadID, "r1", "")}, &out)
	require.Equal(t, []string{"r1:first", "r1:second"}, out.Steps)

	a.ok(t, "GET", "/threads/"+th.ThreadID, nil, &got)
	require.Equal(t, "idle", got.Status)
	require.Equal(t, []string{"r1:first", "r1:second"}, got.Values.Steps)
	var st struct {
		Values struct {
			Steps []string `json:"steps"`
		} `json:"values"`
	}
	a.ok(t, "GET", "/threads/"+th.ThreadID+"/state", nil, &st)
	require.Equal(t, []string{"r1:first", "r1:second"}, st.Values.Steps)
}

func TestStreamOfARunIsServedByAProcessThatDoesNotExecuteIt(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, input(tid, "r1", "g"), "")
	require.Equal(t, "a", <-d.gates.enteredChan("g"))
	b := startProcess(t, d, "b", server.WithWorkers(1))
	done := make(chan []sseEvent)
	go func() { done <- b.sse(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/stream", nil) }()
	d.gates.open("g")
	evs := <-done
	require.Equal(t, "metadata", evs[0].Name)
	require.Equal(t, "end", evs[len(evs)-1].Name)
	require.Contains(t, names(evs), "values")
	require.Contains(t, evs[len(evs)-2].Data, "r1:second")
}

func TestTwoProcessesClaimingConcurrentlyNeverRunOneThreadTwice(t *testing.T) {
	d := newDB(t)
	procs := []*process{startProcess(t, d, "a", server.WithWorkers(8)), startProcess(t, d, "b", server.WithWorkers(8))}
	const threads, runs = 12, 3
	tids := make([]string, threads)
	var all []runJSON
	for i := range tids {
		tids[i] = procs[i%2].newThread(t)
	}
	// Every run of a thread is created while the others may run, through
	// alternating processes, with the enqueue strategy.
	for r := range runs {
		for i, tid := range tids {
			all = append(all, procs[(i+r)%2].startRun(t, tid, input(tid, fmt.Sprintf("r%d", r), ""), "enqueue"))
		}
	}
	for i, rn := range all {
		var got runJSON
		procs[i%2].ok(t, "GET", "/threads/"+rn.ThreadID+"/runs/"+rn.RunID+"/join", nil, nil)
		procs[(i+1)%2].ok(t, "GET", "/threads/"+rn.ThreadID+"/runs/"+rn.RunID, nil, &got)
		require.Equal(t, "success", got.Status)
	}
	d.execs.mu.Lock()
	require.Empty(t, d.execs.overlaps, "threads whose nodes ran twice at once")
	d.execs.mu.Unlock()
	for _, tid := range tids {
		var th threadJSON
		procs[0].ok(t, "GET", "/threads/"+tid, nil, &th)
		require.Equal(t, []string{"r0:first", "r0:second", "r1:first", "r1:second", "r2:first", "r2:second"}, th.Values.Steps)
		require.Equal(t, runs, d.execs.count(tid, "second", ""), "each run's last node ran once")
	}
}

func TestKilledProcessRunIsTakenOverAndResumedFromItsLastCheckpoint(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, input(tid, "r1", "g"), "")
	require.Equal(t, "a", <-d.gates.enteredChan("g"), "a executes the run, after its first node's checkpoint")
	a.kill(t, d)
	b := startProcess(t, d, "b")
	require.Equal(t, "b", <-d.gates.enteredChan("g"), "b took the run over")
	d.gates.open("g")

	var out struct {
		Steps []string `json:"steps"`
	}
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, &out)
	require.Equal(t, []string{"r1:first", "r1:second"}, out.Steps)
	var got runJSON
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "success", got.Status)
	require.Equal(t, 1, d.execs.count(tid, "first", ""), "the first node is not run again")
	eventually(t, "a's cancelled node returned", func() bool { return d.execs.count(tid, "second", "a") == 1 })
	require.Equal(t, 1, d.execs.count(tid, "second", "b"))
	d.execs.mu.Lock()
	require.Empty(t, d.execs.overlaps, "a's node ran on while b's did")
	d.execs.mu.Unlock()
}

func TestEnqueuedRunsRunInCreationOrderAcrossProcesses(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	tid := a.newThread(t)
	first := a.startRun(t, tid, input(tid, "r0", "g"), "")
	<-d.gates.enteredChan("g")
	var runs []runJSON
	for i := 1; i <= 4; i++ {
		p := []*process{a, b}[i%2]
		runs = append(runs, p.startRun(t, tid, input(tid, fmt.Sprintf("r%d", i), ""), "enqueue"))
	}
	d.gates.open("g")
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+first.RunID+"/join", nil, nil)
	for _, rn := range runs {
		b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
	}
	var th threadJSON
	b.ok(t, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, []string{"r0:first", "r0:second", "r1:first", "r1:second", "r2:first", "r2:second",
		"r3:first", "r3:second", "r4:first", "r4:second"}, th.Values.Steps)
}

func TestRejectAndInterruptAcrossProcesses(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	tid := a.newThread(t)
	first := a.startRun(t, tid, input(tid, "r0", "g"), "")
	<-d.gates.enteredChan("g")

	st := b.call(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": input(tid, "r1", "")}, nil)
	require.Equal(t, http.StatusConflict, st, "reject is the default")

	second := b.startRun(t, tid, input(tid, "r2", ""), "interrupt")
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+second.RunID+"/join", nil, nil)
	var got runJSON
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+first.RunID, nil, &got)
	require.Equal(t, "interrupted", got.Status)
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+second.RunID, nil, &got)
	require.Equal(t, "success", got.Status)
	var th threadJSON
	a.ok(t, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, []string{"r0:first", "r2:first", "r2:second"}, th.Values.Steps)
}

func TestRollbackAcrossProcessesDeletesTheRunAndRestartsFromItsStart(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	tid := a.newThread(t)
	var out map[string]any
	a.ok(t, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": input(tid, "r0", "")}, &out)
	first := a.startRun(t, tid, input(tid, "r1", "g"), "")
	<-d.gates.enteredChan("g")
	second := b.startRun(t, tid, input(tid, "r2", ""), "rollback")
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+second.RunID+"/join", nil, nil)
	require.Equal(t, http.StatusNotFound, a.call(t, "GET", "/threads/"+tid+"/runs/"+first.RunID, nil, nil), "the rolled-back run is deleted")
	var th threadJSON
	a.ok(t, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, []string{"r0:first", "r0:second", "r2:first", "r2:second"}, th.Values.Steps)
}

func TestCancelFromAnotherProcessReachesTheRun(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, input(tid, "r0", "g"), "")
	require.Equal(t, "a", <-d.gates.enteredChan("g"))
	b := startProcess(t, d, "b", server.WithWorkers(1))
	require.Equal(t, http.StatusNoContent, b.call(t, "POST", "/threads/"+tid+"/runs/"+rn.RunID+"/cancel?wait=1", nil, nil))
	var got runJSON
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "interrupted", got.Status)
	require.Equal(t, 1, d.execs.count(tid, "second", "a"))
}

func TestCorruptRunFailsClearlyWithoutBlockingTheQueue(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a", server.WithWorkers(1))
	tid, other := a.newThread(t), a.newThread(t)
	bad := a.startRun(t, tid, input(tid, "bad", "g"), "")
	<-d.gates.enteredChan("g")
	// Queued behind it: a run whose kwargs a bad write corrupted, and a
	// good run after it.
	corrupt := a.startRun(t, tid, input(tid, "corrupt", ""), "enqueue")
	good := a.startRun(t, tid, input(tid, "good", ""), "enqueue")
	conn, err := pgx.Connect(t.Context(), d.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{d.schema, "agentgraph_server_runs"}.Sanitize()+
		` SET kwargs = '{"stream_mode": 42}' WHERE run_id = $1`, corrupt.RunID)
	require.NoError(t, err)
	elsewhere := a.startRun(t, other, input(other, "elsewhere", ""), "")
	d.gates.open("g")
	for _, rn := range []runJSON{bad, good, elsewhere} {
		var got runJSON
		a.ok(t, "GET", "/threads/"+rn.ThreadID+"/runs/"+rn.RunID+"/join", nil, nil)
		a.ok(t, "GET", "/threads/"+rn.ThreadID+"/runs/"+rn.RunID, nil, &got)
		require.Equal(t, "success", got.Status, rn.RunID)
	}
	var res map[string]map[string]string
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+corrupt.RunID+"/join", nil, &res)
	require.Contains(t, res["__error__"]["message"], "kwargs that do not decode")
	var got runJSON
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+corrupt.RunID, nil, &got)
	require.Equal(t, "error", got.Status)
}

func TestNewRefusesANilPool(t *testing.T) {
	_, err := postgres.New(t.Context(), nil)
	require.ErrorContains(t, err, "nil pool")
}

func TestStatelessRunOnAProcessDropsItsThread(t *testing.T) {
	d := newDB(t)
	a, b := startProcess(t, d, "a"), startProcess(t, d, "b")
	var out struct {
		Steps []string `json:"steps"`
	}
	a.ok(t, "POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": input("stateless", "r0", "")}, &out)
	require.Equal(t, []string{"r0:first", "r0:second"}, out.Steps)
	var found []threadJSON
	b.ok(t, "POST", "/threads/search", map[string]any{}, &found)
	require.Empty(t, found, "the run's thread is deleted when it ends")
}

func TestDeletingAThreadOnOneProcessCancelsItsRunOnAnother(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, input(tid, "r0", "g"), "")
	require.Equal(t, "a", <-d.gates.enteredChan("g"))
	b := startProcess(t, d, "b", server.WithWorkers(1))
	require.Equal(t, http.StatusNoContent, b.call(t, "DELETE", "/threads/"+tid, nil, nil))
	require.Equal(t, http.StatusNotFound, a.call(t, "GET", "/threads/"+tid, nil, nil))
	require.Equal(t, http.StatusNotFound, a.call(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, nil))
	require.Equal(t, 1, d.execs.count(tid, "second", "a"), "a's node saw its context cancelled and returned")
}

func TestNewRefusesASchemaFromANewerVersion(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a", server.WithWorkers(1))
	_, err := a.pool.Exec(t.Context(), `INSERT INTO agentgraph_server_schema_migrations (version) VALUES ($1)`, postgres.SchemaVersion()+1)
	require.NoError(t, err)
	_, err = postgres.New(t.Context(), a.pool)
	var sv *postgres.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, postgres.SchemaVersion()+1, sv.Found)
}

func TestServerWithABackendNeedsTheSharedSaver(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a", server.WithWorkers(1))
	b, err := postgres.New(t.Context(), a.pool)
	require.NoError(t, err)
	_, err = server.New(server.WithoutAuthLoopbackOnly(), server.WithBackend(b))
	require.ErrorContains(t, err, "WithBackend needs WithCheckpointer")
}

func TestShutdownGivesItsRunToAnotherProcessWhichResumesIt(t *testing.T) {
	d := newDB(t)
	a := startProcess(t, d, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, input(tid, "r1", "g"), "")
	require.Equal(t, "a", <-d.gates.enteredChan("g"))
	require.NoError(t, a.srv.Shutdown(t.Context()))
	var got runJSON
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "running", got.Status, "released, not ended")

	b := startProcess(t, d, "b")
	require.Equal(t, "b", <-d.gates.enteredChan("g"))
	d.gates.open("g")
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "success", got.Status)
	require.Equal(t, 1, d.execs.count(tid, "first", ""))
	require.Equal(t, 1, d.execs.count(tid, "second", "b"))
}
