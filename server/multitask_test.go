package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// startSlow creates a background run of the slow graph with topic and
// returns its id once its step has started.
func (e *env) startSlow(tid, topic string, extra map[string]any) string {
	e.t.Helper()
	body := map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": topic}}
	for k, v := range extra {
		body[k] = v
	}
	r := e.do("POST", "/threads/"+tid+"/runs", body)
	require.Equal(e.t, 200, r.status, "%s", r.body)
	require.Equal(e.t, topic, <-e.gate.started)
	return runID(e.t, r)
}

func (e *env) runStatus(tid, rid string) string {
	e.t.Helper()
	var rn struct {
		Status string `json:"status"`
	}
	e.ok("GET", "/threads/"+tid+"/runs/"+rid, nil, &rn)
	return rn.Status
}

func TestBackgroundRunIsListedAndJoined(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "a"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	rid := runID(t, r)
	require.Equal(t, "/threads/"+tid+"/runs/"+rid, r.header.Get("Content-Location"))
	var created map[string]any
	r.decode(t, &created)
	require.Equal(t, "pending", created["status"], "the answer is the run as created")
	require.Equal(t, "a", <-e.gate.started)
	require.Equal(t, "running", e.runStatus(tid, rid))
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "busy", th["status"])

	var list []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &list)
	require.Len(t, list, 1)
	require.Equal(t, rid, list[0]["run_id"])

	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil, &out)
	require.Equal(t, []any{"step:a"}, out["log"])
	require.Equal(t, "success", e.runStatus(tid, rid))
	e.ok("GET", "/threads/"+tid+"/runs?status=success", nil, &list)
	require.Len(t, list, 1)
	e.ok("GET", "/threads/"+tid+"/runs?status=error", nil, &list)
	require.Empty(t, list)

	require.Equal(t, 204, e.do("DELETE", "/threads/"+tid+"/runs/"+rid, nil).status)
	require.Equal(t, 404, e.do("GET", "/threads/"+tid+"/runs/"+rid, nil).status)
	e.ok("GET", "/threads/"+tid+"/runs", nil, &list)
	require.Empty(t, list)
}

func TestDeletingALiveRunIsRefused(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", nil)
	require.Equal(t, 409, e.do("DELETE", "/threads/"+tid+"/runs/"+rid, nil).status)
	e.gate.release <- struct{}{}
	e.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil, nil)
	require.Equal(t, 204, e.do("DELETE", "/threads/"+tid+"/runs/"+rid, nil).status)
}

func TestRejectStrategyRefusesASecondRunWith409(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", nil)
	for _, path := range []string{"/runs", "/runs/stream", "/runs/wait"} {
		r := e.do("POST", "/threads/"+tid+path, map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "b"}})
		require.Equal(t, 409, r.status, "%s: %s", path, r.body)
		require.Contains(t, string(r.body), `"detail"`)
	}
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil, &out)
	require.Equal(t, []any{"step:a"}, out["log"], "the refused runs left no trace")
	var list []any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &list)
	require.Len(t, list, 1)
}

func TestEnqueueStrategyRunsAfterTheCurrentRun(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	first := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "b"}, "multitask_strategy": "enqueue"})
	require.Equal(t, 200, r.status, "%s", r.body)
	second := runID(t, r)
	require.Equal(t, "pending", e.runStatus(tid, second))

	e.gate.release <- struct{}{}
	require.Equal(t, "b", <-e.gate.started, "the queued run starts once the first ended")
	require.Equal(t, "success", e.runStatus(tid, first))
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+second+"/join", nil, &out)
	require.Equal(t, []any{"step:a", "step:b"}, out["log"], "the second run saw the first's state")
}

func TestEnqueuedRunsOfConcurrentClientsRunOneAtATime(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	const n = 8
	var wg sync.WaitGroup
	answers := make(chan resp, n)
	for range n {
		wg.Go(func() {
			answers <- e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "x"}, "multitask_strategy": "enqueue"})
		})
	}
	// Each run's step starts only after the previous one was released: a
	// second concurrent step would block on the unbuffered gate.
	for range n {
		require.Equal(t, "x", <-e.gate.started)
		e.gate.release <- struct{}{}
	}
	wg.Wait()
	close(answers)
	for r := range answers {
		require.Equal(t, 200, r.status, "%s", r.body)
		id := runID(t, r)
		e.ok("GET", "/threads/"+tid+"/runs/"+id+"/join", nil, nil)
		require.Equal(t, "success", e.runStatus(tid, id))
	}
	var st struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Len(t, st.Values["log"], n)
}

func TestInterruptStrategyCancelsTheCurrentRun(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	first := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "b"}, "multitask_strategy": "interrupt"})
	require.Equal(t, 200, r.status, "%s", r.body)
	second := runID(t, r)
	require.Equal(t, "b", <-e.gate.started)
	require.Equal(t, "interrupted", e.runStatus(tid, first))
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+second+"/join", nil, &out)
	require.Equal(t, []any{"step:b"}, out["log"])
}

func TestRollbackStrategyForgetsTheCurrentRunAndItsState(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	first := e.startSlow(tid, "a", nil)
	e.gate.release <- struct{}{}
	e.ok("GET", "/threads/"+tid+"/runs/"+first+"/join", nil, nil)

	// The second run's input is checkpointed before its step blocks.
	second := e.startSlow(tid, "b", map[string]any{"input": map[string]any{"topic": "b", "log": []string{"b-input"}}})
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "c"}, "multitask_strategy": "rollback"})
	require.Equal(t, 200, r.status, "%s", r.body)
	third := runID(t, r)
	require.Equal(t, "c", <-e.gate.started)
	require.Equal(t, 404, e.do("GET", "/threads/"+tid+"/runs/"+second, nil).status, "a rolled-back run is deleted")
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+third+"/join", nil, &out)
	require.Equal(t, []any{"step:a", "step:c"}, out["log"], "nothing of the rolled-back run is left in the state")
}

func TestRollbackOfAThreadsFirstRunStartsFromNothing(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.startSlow(tid, "b", map[string]any{"input": map[string]any{"topic": "b", "log": []string{"b-input"}}})
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "c"}, "multitask_strategy": "rollback"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, "c", <-e.gate.started)
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+runID(t, r)+"/join", nil, &out)
	require.Equal(t, []any{"step:c"}, out["log"])
	var list []any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &list)
	require.Len(t, list, 1)
}

func TestCancelStopsARunningRun(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	require.Equal(t, 204, r.status, "%s", r.body)
	require.Equal(t, "interrupted", e.runStatus(tid, rid))
	// The thread takes a new run.
	rid2 := e.startSlow(tid, "c", nil)
	e.gate.release <- struct{}{}
	e.ok("GET", "/threads/"+tid+"/runs/"+rid2+"/join", nil, nil)
	require.Equal(t, "success", e.runStatus(tid, rid2))
}

func TestCancelTakesAPendingRunOffTheQueue(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	first := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "b"}, "multitask_strategy": "enqueue"})
	second := runID(t, r)
	r = e.do("POST", "/threads/"+tid+"/runs/"+second+"/cancel?wait=0", nil)
	require.Equal(t, 202, r.status)
	require.Equal(t, "interrupted", e.runStatus(tid, second))
	e.gate.release <- struct{}{}
	var out map[string]any
	e.ok("GET", "/threads/"+tid+"/runs/"+first+"/join", nil, &out)
	require.Equal(t, []any{"step:a"}, out["log"])
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "idle", th["status"])
}

func TestJoinStreamFollowsALiveRunAndReplaysFromLastEventID(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", map[string]any{"stream_mode": []string{"values", "updates"}, "stream_resumable": true})
	got := make(chan resp, 1)
	go func() { got <- e.doCtx(context.Background(), "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, nil) }()
	e.gate.release <- struct{}{}
	r := <-got
	require.Equal(t, 200, r.status)
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "values", "updates", "values", "end"}, names(evs))
	require.JSONEq(t, `{"step":{"log":["step:a"]}}`, string(evs[2].Data))

	r = e.doCtx(context.Background(), "GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, map[string]string{"Last-Event-ID": "2"})
	evs = parseSSE(t, r.body)
	require.Equal(t, []string{"values", "end"}, names(evs))
	require.Equal(t, 3, evs[0].ID)
}

func TestStreamClientDisconnectCancelsWhenAsked(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "a"}, "on_disconnect": "cancel"}
		b, _ := json.Marshal(req)
		r, err := newRequest(ctx, e, "POST", "/threads/"+tid+"/runs/stream", b)
		if err == nil {
			r.Body.Close()
		}
	}()
	require.Equal(t, "a", <-e.gate.started)
	var list []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &list)
	require.Len(t, list, 1)
	rid := list[0]["run_id"].(string)
	cancel()
	<-done
	e.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil, nil)
	require.Equal(t, "interrupted", e.runStatus(tid, rid))
}

func TestShutdownCancelsRunsAndRefusesNewOnes(t *testing.T) {
	saver := checkpoint.NewMemory()
	gt := &gate{started: make(chan string), release: make(chan struct{})}
	s, err := server.New(server.Graph("slow", slowGraph(t, saver, gt)), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	defer hs.Close()
	e := &env{t: t, srv: hs, gate: gt}
	tid := e.newThread(nil)
	running := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "b"}, "multitask_strategy": "enqueue"})
	pending := runID(t, r)

	require.NoError(t, s.Shutdown(context.Background()))
	require.Equal(t, "interrupted", e.runStatus(tid, running))
	require.Equal(t, "interrupted", e.runStatus(tid, pending))
	r = e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "c"}})
	require.Equal(t, 503, r.status)
}

func TestConcurrentMixedStrategiesNeverFailTheServer(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	strategies := []string{"reject", "enqueue", "interrupt", "rollback"}
	var wg sync.WaitGroup
	statuses := make(chan int, 64)
	for i := range 32 {
		wg.Go(func() {
			path := []string{"/runs", "/runs/wait", "/runs/stream"}[i%3]
			r := e.doCtx(context.Background(), "POST", "/threads/"+tid+path, map[string]any{
				"assistant_id": "agent", "input": map[string]any{"topic": "x"}, "multitask_strategy": strategies[i%4],
			}, nil)
			statuses <- r.status
			if i%5 == 0 {
				e.doCtx(context.Background(), "GET", "/threads/"+tid+"/state", nil, nil)
			}
		})
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		require.Contains(t, []int{200, 409}, st)
	}
	// Every run ends; the thread ends idle or interrupted, never busy.
	var list []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs?limit=100", nil, &list)
	for _, rn := range list {
		// A run that a later rollback cancelled is deleted once it ended:
		// listed while it ran, it may be gone (404) by its join.
		r := e.do("GET", "/threads/"+tid+"/runs/"+rn["run_id"].(string)+"/join", nil)
		require.Contains(t, []int{200, 404}, r.status, "%s", r.body)
	}
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Contains(t, []string{"idle", "interrupted"}, th["status"])
}

// A run cancelled by the interrupt strategy leaves a node that ignores
// its context running; the thread's next run waits for it, so that one
// thread's runs never overlap, however many arrive.
func TestRunsOfAThreadNeverOverlapEvenWhenANodeIgnoresCancellation(t *testing.T) {
	saver := checkpoint.NewMemory()
	var cur, most atomic.Int32
	type st struct {
		N state.Value[int] `json:"n"`
	}
	b := graph.New[st]()
	b.AddNode("n", func(ctx context.Context, s st) (st, error) {
		c := cur.Add(1)
		for m := most.Load(); c > m && !most.CompareAndSwap(m, c); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond) // ignores ctx
		cur.Add(-1)
		return s, nil
	})
	b.AddEdge(graph.Start, "n")
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	s, err := server.New(server.Graph("g", g), server.WithCheckpointer(saver), server.WithAuthToken(token))
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		hs.Close()
	})
	tid := "11111111-1111-4111-8111-111111111111"
	var last string
	for range 8 {
		req, err := http.NewRequest("POST", hs.URL+"/threads/"+tid+"/runs",
			strings.NewReader(`{"assistant_id":"g","input":{},"if_not_exists":"create","multitask_strategy":"interrupt"}`))
		require.NoError(t, err)
		req.Header.Set("x-api-key", token)
		req.Header.Set("Content-Type", "application/json")
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		var rn struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&rn))
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		last = rn.RunID
		time.Sleep(5 * time.Millisecond)
	}
	req, err := http.NewRequest("GET", hs.URL+"/threads/"+tid+"/runs/"+last+"/join", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", token)
	res, err := hs.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, int32(1), most.Load(), "two runs of one thread ran the node at once")
}

// A run made with interrupt or rollback ends the thread's pending runs
// too, as LangGraph does: cancelled, or deleted for a rollback.
func TestInterruptAndRollbackEndThePendingRuns(t *testing.T) {
	for _, strategy := range []string{"interrupt", "rollback"} {
		t.Run(strategy, func(t *testing.T) {
			e := newEnv(t)
			tid := e.newThread(nil)
			e.startSlow(tid, "a", nil)
			r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "queued"}, "multitask_strategy": "enqueue"})
			require.Equal(t, 200, r.status, "%s", r.body)
			queued := runID(t, r)
			r = e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{"topic": "last"}, "multitask_strategy": strategy})
			require.Equal(t, 200, r.status, "%s", r.body)
			last := runID(t, r)
			require.Equal(t, "last", <-e.gate.started, "the pending run never starts")
			if strategy == "interrupt" {
				require.Equal(t, "interrupted", e.runStatus(tid, queued))
			} else {
				require.Equal(t, 404, e.do("GET", "/threads/"+tid+"/runs/"+queued, nil).status)
			}
			e.gate.release <- struct{}{}
			e.ok("GET", "/threads/"+tid+"/runs/"+last+"/join", nil, nil)
			require.Equal(t, "success", e.runStatus(tid, last))
		})
	}
}
