package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server"
)

func TestStreamPausesAtInterruptAndResumesWithCommand(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)

	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "agent", "input": map[string]any{"topic": "cats"},
		"stream_mode": []string{"values", "updates", "custom"},
	})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
	require.Regexp(t, "^/threads/"+tid+"/runs/[0-9a-f-]{36}$", r.header.Get("Content-Location"))
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "values", "custom", "updates", "values", "updates", "values", "end"}, names(evs))
	for i, ev := range evs {
		require.Equal(t, i, ev.ID, "ids count from 0")
	}
	var md map[string]any
	require.NoError(t, json.Unmarshal(evs[0].Data, &md))
	require.Equal(t, float64(1), md["attempt"])
	require.NotEmpty(t, md["run_id"])
	want := []string{
		``,
		`{"topic":"cats","log":[],"answer":null,"count":0}`,
		`{"progress":"planning cats"}`,
		`{"plan":{"count":1,"log":["plan:cats"]}}`,
		`{"topic":"cats","log":["plan:cats"],"answer":null,"count":1}`,
		`{"__interrupt__":[{"id":"ID","value":{"question":"approve cats?"}}]}`,
		`{"__interrupt__":[{"id":"ID","value":{"question":"approve cats?"}}]}`,
		`null`,
	}
	for i := 1; i < len(evs); i++ {
		got := jsonOf(t, evs[i].Data)
		scrubInterruptIDs(got)
		require.Empty(t, cmp.Diff(jsonOf(t, []byte(want[i])), got), "event %d (%s)", i, evs[i].Name)
	}

	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "interrupted", th["status"])
	require.Equal(t, "agent", th["metadata"].(map[string]any)["graph_id"])

	var st struct {
		Values map[string]any `json:"values"`
		Next   []string       `json:"next"`
		Tasks  []struct {
			Name       string `json:"name"`
			Interrupts []struct {
				ID    string `json:"id"`
				Value any    `json:"value"`
			} `json:"interrupts"`
		} `json:"tasks"`
		Checkpoint struct {
			ThreadID     string `json:"thread_id"`
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, []string{"ask"}, st.Next)
	require.Len(t, st.Tasks, 1)
	require.Equal(t, map[string]any{"question": "approve cats?"}, st.Tasks[0].Interrupts[0].Value)
	require.Equal(t, tid, st.Checkpoint.ThreadID)

	r = e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "agent", "command": map[string]any{"resume": "yes"}, "stream_mode": "updates",
	})
	require.Equal(t, 200, r.status, "%s", r.body)
	evs = parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "updates", "updates", "end"}, names(evs))
	require.JSONEq(t, `{"ask":{"answer":"yes","log":["ask"]}}`, string(evs[1].Data))
	require.JSONEq(t, `{"finish":{"log":["finish"]}}`, string(evs[2].Data))

	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Empty(t, st.Next)
	require.Equal(t, map[string]any{"topic": "cats", "log": []any{"plan:cats", "ask", "finish"}, "answer": "yes", "count": float64(1)}, st.Values)
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "idle", th["status"])

	var hist []struct {
		Next     []string       `json:"next"`
		Metadata map[string]any `json:"metadata"`
	}
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}, &hist)
	var steps []float64
	for _, h := range hist {
		steps = append(steps, h.Metadata["step"].(float64))
	}
	require.Equal(t, []float64{3, 2, 1, 0, -1}, steps, "history is newest first")
	require.Equal(t, []string{"__start__"}, hist[len(hist)-1].Next)
}

// scrubInterruptIDs replaces interrupt ids (random) with "ID".
func scrubInterruptIDs(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	list, _ := m["__interrupt__"].([]any)
	for _, x := range list {
		if im, ok := x.(map[string]any); ok && im["id"] != nil {
			im["id"] = "ID"
		}
	}
}

// runID returns the run_id of a Run answer.
func runID(t *testing.T, r resp) string {
	t.Helper()
	var rn struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	r.decode(t, &rn)
	require.NotEmpty(t, rn.RunID)
	return rn.RunID
}

func TestWaitAnswersTheLastValues(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "dogs"}}, &out)
	scrubInterruptIDs(out)
	require.Equal(t, map[string]any{"__interrupt__": []any{map[string]any{"id": "ID", "value": map[string]any{"question": "approve dogs?"}}}}, out)

	var final map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": "ok"}}, &final)
	require.Equal(t, map[string]any{"topic": "dogs", "log": []any{"plan:dogs", "ask", "finish"}, "answer": "ok", "count": float64(1)}, final)
}

func TestFailingRunStreamsErrorAndWaitAnswersIt(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "boom", "input": map[string]any{"topic": "x"}})
	require.Equal(t, 200, r.status)
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "values", "error", "end"}, names(evs))
	var ed struct{ Error, Message string }
	require.NoError(t, json.Unmarshal(evs[2].Data, &ed))
	require.Equal(t, "Error", ed.Error)
	require.Contains(t, ed.Message, "kaboom")

	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "error", th["status"])

	tid2 := e.newThread(nil)
	var out map[string]map[string]any
	e.ok("POST", "/threads/"+tid2+"/runs/wait", map[string]any{"assistant_id": "boom", "input": map[string]any{}}, &out)
	require.Contains(t, out["__error__"]["message"], "kaboom")
}

func TestInterruptBeforePausesAndNullInputContinues(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "agent", "input": map[string]any{"topic": "owls"},
		"stream_mode": "updates", "interrupt_before": []string{"ask"},
	})
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "updates", "updates", "end"}, names(evs))
	require.JSONEq(t, `{"__interrupt__":[]}`, string(evs[2].Data))
	var st struct {
		Next []string `json:"next"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, []string{"ask"}, st.Next)

	// Continuing runs ask, which interrupts dynamically.
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": nil}, &out)
	require.Contains(t, out, "__interrupt__")
}

func TestUpdateStateAsNodeMovesTheThreadOn(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "bees"}}, nil)

	var up struct {
		Checkpoint struct {
			ThreadID     string `json:"thread_id"`
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	e.ok("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"answer": "no", "log": []string{"manual"}}, "as_node": "ask"}, &up)
	require.Equal(t, tid, up.Checkpoint.ThreadID)
	require.NotEmpty(t, up.Checkpoint.CheckpointID)

	var st struct {
		Values     map[string]any `json:"values"`
		Next       []string       `json:"next"`
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, []string{"finish"}, st.Next)
	require.Equal(t, "no", st.Values["answer"])
	require.Equal(t, []any{"plan:bees", "manual"}, st.Values["log"], "an Append field takes the update through its reducer")
	require.Equal(t, up.Checkpoint.CheckpointID, st.Checkpoint.CheckpointID)

	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent"}, &out)
	require.Equal(t, []any{"plan:bees", "manual", "finish"}, out["log"])

	// An update as a node the graph lacks is refused.
	r := e.do("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"answer": "x"}, "as_node": "nope"})
	require.Equal(t, 400, r.status, "%s", r.body)
	// The state at the update's checkpoint is still readable.
	e.ok("GET", "/threads/"+tid+"/state/"+up.Checkpoint.CheckpointID, nil, &st)
	require.Equal(t, []string{"finish"}, st.Next)
}

func TestRunFromCheckpointForksTheThread(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "fox"}}, nil)
	var hist []struct {
		Metadata   map[string]any `json:"metadata"`
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{}, &hist)
	var first string
	for _, h := range hist {
		if h.Metadata["step"] == float64(-1) {
			first = h.Checkpoint.CheckpointID
		}
	}
	require.NotEmpty(t, first)
	// Replaying from the input checkpoint runs plan again: count reaches 1
	// again, not 2, and log holds one plan entry.
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "checkpoint_id": first}, &out)
	require.Contains(t, out, "__interrupt__")
	var st struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, []any{"plan:fox"}, st.Values["log"])
	require.Equal(t, float64(1), st.Values["count"])
}

func TestMessagesTupleStreamsTokens(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "agent", "input": map[string]any{"topic": "cats"}, "stream_mode": []string{"messages-tuple"},
	})
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "messages", "end"}, names(evs))
	var tuple []map[string]any
	require.NoError(t, json.Unmarshal(evs[1].Data, &tuple))
	require.Len(t, tuple, 2)
	require.Equal(t, "thinking", tuple[0]["content"])
	require.Equal(t, "m1", tuple[0]["id"])
	require.Equal(t, "AIMessageChunk", tuple[0]["type"])
	require.Equal(t, "plan", tuple[1]["langgraph_node"])
}

func TestDeletingAThreadCancelsItsRun(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", nil)
	require.Equal(t, 204, e.do("DELETE", "/threads/"+tid, nil).status)
	require.Equal(t, 404, e.do("GET", "/threads/"+tid+"/runs/"+rid, nil).status)
	var st map[string]any
	e.ok("POST", "/threads", map[string]any{"thread_id": tid, "metadata": map[string]any{"graph_id": "slow"}}, nil)
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Nil(t, st["checkpoint"], "no checkpoint of the cancelled run survived")
}

func TestUpdateStateWhileARunIsActiveIs409(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	rid := e.startSlow(tid, "a", nil)
	r := e.do("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"topic": "b"}})
	require.Equal(t, 409, r.status, "%s", r.body)
	e.gate.release <- struct{}{}
	e.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil, nil)
	e.ok("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"topic": "b"}}, nil)
}

func TestStatelessRunsUseATemporaryThread(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}, "stream_mode": "updates"})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Regexp(t, "^/runs/[0-9a-f-]{36}$", r.header.Get("Content-Location"))
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "updates", "updates", "end"}, names(evs))

	var rn map[string]any
	e.ok("GET", r.header.Get("Content-Location"), nil, &rn)
	require.Equal(t, "success", rn["status"])
	tid := rn["thread_id"].(string)
	require.Equal(t, 404, e.do("GET", "/threads/"+tid, nil).status, "on_completion delete is the default")

	var out map[string]any
	r = e.ok("POST", "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "y"}, "on_completion": "keep"}, &out)
	require.Contains(t, out, "__interrupt__")
	e.ok("GET", r.header.Get("Content-Location"), nil, &rn)
	var st struct {
		Next []string `json:"next"`
	}
	e.ok("GET", "/threads/"+rn["thread_id"].(string)+"/state", nil, &st)
	require.Equal(t, []string{"ask"}, st.Next, "a kept thread keeps its state")
}

func TestCommandUpdateAndGotoRunANodeAgain(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "t"}}, nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "command": map[string]any{"resume": "y"}}, nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent",
		"command": map[string]any{"update": [][]any{{"answer", "re"}, {"count", 5}}, "goto": "finish"}}, &out)
	require.Equal(t, "re", out["answer"])
	require.Equal(t, float64(6), out["count"], "a Sum field adds the update")
	require.Equal(t, []any{"plan:t", "ask", "finish", "finish"}, out["log"])
}

func TestRunCanCreateItsThread(t *testing.T) {
	e := newEnv(t)
	tid := "6f9619ff-8b86-4d01-b42d-00c04fc964ff"
	r := e.do("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "n"}})
	require.Equal(t, 404, r.status, "if_not_exists defaults to reject")
	r = e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "n"}, "if_not_exists": "create", "stream_resumable": true})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, r.header.Get("Content-Location")+"/stream", r.header.Get("Location"), "resumable streams tell the SDK where to reconnect")
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "interrupted", th["status"])
}

func TestHistoryFiltersByCheckpointMetadata(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "h"}}, nil)
	var hist []struct {
		Metadata map[string]any `json:"metadata"`
	}
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{"metadata": map[string]any{"source": "input"}}, &hist)
	require.Len(t, hist, 1)
	require.Equal(t, float64(-1), hist[0].Metadata["step"])
	require.Equal(t, "agent", hist[0].Metadata["graph_id"], "runs tag their checkpoints")
	e.ok("GET", "/threads/"+tid+"/history?limit=2", nil, &hist)
	require.Len(t, hist, 2)
}

func TestDebugTasksAndCheckpointsModes(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "agent", "input": map[string]any{"topic": "d"}, "stream_mode": []string{"tasks", "checkpoints", "debug"},
	})
	require.Equal(t, 200, r.status, "%s", r.body)
	evs := parseSSE(t, r.body)
	var tasks, checkpoints []map[string]any
	var debugTypes []string
	for _, ev := range evs {
		var m map[string]any
		_ = json.Unmarshal(ev.Data, &m)
		switch ev.Name {
		case "tasks":
			tasks = append(tasks, m)
		case "checkpoints":
			checkpoints = append(checkpoints, m)
		case "debug":
			debugTypes = append(debugTypes, m["type"].(string))
		}
	}
	// plan starts and ends; ask starts and ends interrupted.
	require.Len(t, tasks, 4)
	require.Equal(t, "plan", tasks[0]["name"])
	require.Equal(t, map[string]any{"count": float64(1), "log": []any{"plan:d"}}, tasks[1]["result"])
	require.Equal(t, "ask", tasks[3]["name"])
	require.NotEmpty(t, tasks[3]["interrupts"])
	// The input checkpoint, the one after __start__ and the one after plan.
	require.Len(t, checkpoints, 3)
	require.Equal(t, []any{"__start__"}, checkpoints[0]["next"])
	require.Equal(t, []any{"plan"}, checkpoints[1]["next"])
	require.Equal(t, []any{"ask"}, checkpoints[2]["next"])
	require.Equal(t, checkpoints[1]["parent_config"], checkpoints[0]["config"])
	require.Equal(t, []string{"checkpoint", "checkpoint", "task", "task_result", "checkpoint", "task", "task_result"}, debugTypes)
}

// Joining the stream of a run that ended, and whose events were not kept
// (it was not stream_resumable), still says that it ended.
func TestJoiningTheStreamOfAFinishedRunSaysItEnded(t *testing.T) {
	memoryOnly(t, "a backend keeps the events of ended runs: a join replays the whole stream")
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, nil)
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.NotEmpty(t, runs)
	rn := runs[0]
	r := e.do("GET", "/threads/"+tid+"/runs/"+rn["run_id"].(string)+"/stream", nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, []string{"end"}, names(parseSSE(t, r.body)))
}

func TestARunFromACheckpointTheThreadDoesNotHaveIs404(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}, "checkpoint_id": "zzz"})
	require.Equal(t, 404, r.status, "%s", r.body)
	require.Contains(t, string(r.body), `no checkpoint \"zzz\"`)
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Empty(t, runs, "no run was made")
}

// A server remembers a bounded number of ended runs: the oldest are
// forgotten (404), and leave their thread's run list.
func TestTheOldestEndedRunsAreForgotten(t *testing.T) {
	memoryOnly(t, "a backend keeps every run (WithKeptRuns does not apply)")
	e := newEnv(t, server.WithKeptRuns(2))
	tid := e.newThread(nil)
	var ids []string
	for range 4 {
		r := e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}, nil)
		ids = append(ids, r.header.Get("Content-Location"))
	}
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 2)
	require.Equal(t, 404, e.do("GET", ids[0], nil).status)
	require.Equal(t, 200, e.do("GET", ids[3], nil).status)
}

// The events ended resumable runs keep are bounded in bytes: past
// WithKeptEventBytes the runs that ended first lose theirs, and a join of
// their stream gets an error event that says so; the run and its thread
// stay.
func TestEndedResumableRunsKeepEventsUpToTheirBound(t *testing.T) {
	memoryOnly(t, "a backend keeps events in its store")
	// streamed runs a resumable stream on a new thread and returns the
	// joinable path of its run and the bytes of its events.
	streamed := func(e *env) (string, int) {
		tid := e.newThread(nil)
		r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "b"}, "stream_resumable": true})
		require.Equal(t, 200, r.status, "%s", r.body)
		n := 0
		for _, ev := range parseSSE(t, r.body) {
			n += len(ev.Name) + len(ev.Data)
		}
		return r.header.Get("Location"), n
	}
	joined := func(e *env, path string) []event {
		r := e.do("GET", path, nil)
		require.Equal(t, 200, r.status, "%s", r.body)
		return parseSSE(t, r.body)
	}

	_, size := streamed(newEnv(t))
	e := newEnv(t, server.WithKeptEventBytes(int64(size*3/2)))
	first, _ := streamed(e)
	require.Equal(t, "end", names(joined(e, first))[len(joined(e, first))-1], "kept while within the bound")
	second, _ := streamed(e)

	evs := joined(e, first)
	require.Equal(t, []string{"error"}, names(evs), "the first run's events were dropped for the second's")
	var why map[string]string
	require.NoError(t, json.Unmarshal(evs[0].Data, &why))
	require.Equal(t, "EventsDropped", why["error"])
	require.Contains(t, why["message"], "server.WithKeptEventBytes")
	evs = joined(e, second)
	require.Equal(t, "metadata", evs[0].Name, "the newest run's events are whole")
	require.Equal(t, "end", evs[len(evs)-1].Name)

	runPath := strings.TrimSuffix(first, "/stream")
	var rn map[string]any
	e.ok("GET", runPath, nil, &rn)
	require.Equal(t, "success", rn["status"], "the run itself stays")
}

// A stream that reads a stream_resumable run while it ends gets every
// event and its "end", however far past WithKeptEventBytes the run's
// events are: the bound drops the events of ended runs no stream reads,
// as for a run that was not resumable.
func TestAStreamReadingAResumableRunGetsItsEndPastTheEventBound(t *testing.T) {
	memoryOnly(t, "a backend keeps events in its store")
	for _, tc := range []struct {
		name  string
		bound int64
	}{
		{"no bytes kept", 0},
		{"fewer bytes than the run's", 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, server.WithKeptEventBytes(tc.bound))
			tid := e.newThread(nil)
			r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "b"},
				"stream_mode": []string{"values", "updates"}, "stream_resumable": true})
			require.Equal(t, 200, r.status, "%s", r.body)
			evs := parseSSE(t, r.body)
			require.NotContains(t, names(evs), "error", "%s", r.body)
			require.Equal(t, "metadata", evs[0].Name)
			require.Equal(t, "end", evs[len(evs)-1].Name, "%s", r.body)

			// Once the stream let go, a join finds them dropped.
			joined := e.do("GET", r.header.Get("Location"), nil)
			require.Equal(t, 200, joined.status, "%s", joined.body)
			require.Equal(t, []string{"error"}, names(parseSSE(t, joined.body)))
		})
	}
}

// A join of the stream of a run that was not stream_resumable, once the
// run ended and no stream reads it, gets how it ended: its "error", then
// its "end" (its other events are dropped).
func TestAJoinOfAFailedRunThatWasNotResumableGetsItsError(t *testing.T) {
	memoryOnly(t, "a backend keeps events in its store")
	e := newEnv(t)
	tid := e.newThread(nil)
	r := e.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "boom", "input": map[string]any{"topic": "x"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"error", "end"}, names(evs)[len(evs)-2:], "%s", r.body)
	var runs []map[string]any
	e.ok("GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)

	joined := e.do("GET", "/threads/"+tid+"/runs/"+runs[0]["run_id"].(string)+"/stream", nil)
	require.Equal(t, 200, joined.status, "%s", joined.body)
	got := parseSSE(t, joined.body)
	require.Equal(t, []string{"error", "end"}, names(got))
	require.Equal(t, string(evs[len(evs)-2].Data), string(got[0].Data), "the same error")
}
