package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
)

// testServer is the server of `retrai serve` over a new database, on
// 127.0.0.1.
type testServer struct {
	*httptest.Server
	s     *server
	m     *runs.Manager
	token string
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	isolate(t)
	return newTestServerOn(t, runs.Options{DB: filepath.Join(t.TempDir(), "r.db")})
}

// newTestServerOn is the server of `retrai serve` with the manager options
// opts (and retrai's models).
func newTestServerOn(t *testing.T, opts runs.Options) *testServer {
	t.Helper()
	opts.Models = models
	m, err := runs.Open(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	token := rand.Text()
	s := newServer(m, token, io.Discard)
	hs := httptest.NewServer(s.handler())
	t.Cleanup(func() {
		s.shutdown()
		hs.Close()
		s.wait()
	})
	return &testServer{Server: hs, s: s, m: m, token: token}
}

// do sends a request with the token tok (none if empty) and returns the
// status and the body.
func (ts *testServer) do(t *testing.T, method, path, tok, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, r)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// api sends an authorized request, requires the status want and decodes
// the answer into out (if not nil).
func (ts *testServer) api(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	code, data := ts.do(t, method, path, ts.token, body)
	require.Equal(t, want, code, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(t, json.Unmarshal(data, out), "%s", data)
	}
}

// create creates and starts a run through the API.
func (ts *testServer) create(t *testing.T, body string) runs.Run {
	t.Helper()
	var run runs.Run
	ts.api(t, "POST", "/api/runs", body, http.StatusCreated, &run)
	require.NotEmpty(t, run.ID)
	return run
}

// wsMessage is a message of the events WebSocket: an event, or a "state"
// or "lost" message.
type wsMessage struct {
	Kind  string         `json:"kind"`
	RunID string         `json:"run_id"`
	Step  int            `json:"step"`
	Node  string         `json:"node"`
	Data  map[string]any `json:"data"`
	Run   *runs.Run      `json:"run"`
	N     int            `json:"n"`
}

// follow opens the events WebSocket of run id, with the token in the
// header or, with query, in the URL.
func (ts *testServer) follow(t *testing.T, id string, query bool) *websocket.Conn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/api/runs/" + id + "/events"
	opts := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ts.token}}}
	if query {
		u += "?token=" + ts.token
		opts = nil
	}
	c, resp, err := websocket.Dial(t.Context(), u, opts)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// readUntil reads messages of run id from c until it has had one of each
// kind, and returns them all; it fails if the server closes c first.
func readUntil(t *testing.T, c *websocket.Conn, id string, want ...string) []wsMessage {
	t.Helper()
	var got []wsMessage
	missing := map[string]bool{}
	for _, k := range want {
		missing[k] = true
	}
	for len(missing) > 0 {
		var msg wsMessage
		err := wsjson.Read(t.Context(), c, &msg)
		require.NoError(t, err, "waiting for %v after %v", want, kinds(got))
		require.Equal(t, id, msg.RunID, "%+v", msg)
		got = append(got, msg)
		delete(missing, msg.Kind)
	}
	return got
}

// requireClosed requires that the server closes c normally.
func requireClosed(t *testing.T, c *websocket.Conn, want websocket.StatusCode) {
	t.Helper()
	var msg wsMessage
	err := wsjson.Read(t.Context(), c, &msg)
	require.Error(t, err, "got %+v", msg)
	require.Equal(t, want, websocket.CloseStatus(err), "%v", err)
}

func kinds(msgs []wsMessage) []string {
	var ks []string
	for _, m := range msgs {
		ks = append(ks, m.Kind)
	}
	return ks
}

func find(msgs []wsMessage, kind string) (wsMessage, bool) {
	for _, m := range msgs {
		if m.Kind == kind {
			return m, true
		}
	}
	return wsMessage{}, false
}

func TestServeRequiresTheToken(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		name   string
		path   string
		header string // the Authorization header
		want   int
	}{
		{"no token", "/api/runs", "", http.StatusUnauthorized},
		{"a wrong token", "/api/runs", "Bearer nope", http.StatusUnauthorized},
		{"another scheme", "/api/runs", "Basic " + ts.token, http.StatusUnauthorized},
		{"the token in the query of the API", "/api/runs?token=" + ts.token, "", http.StatusUnauthorized},
		{"no token for a run", "/api/runs/some-id", "", http.StatusUnauthorized},
		{"no token for an unknown endpoint", "/api/nope", "", http.StatusUnauthorized},
		{"no token for the events", "/api/runs/some-id/events", "", http.StatusUnauthorized},
		{"a wrong token for the events", "/api/runs/some-id/events?token=nope", "", http.StatusUnauthorized},
		{"no token for the page", "/", "", http.StatusUnauthorized},
		{"a wrong token for the page", "/?token=nope", "", http.StatusUnauthorized},
		{"the token", "/api/runs", "Bearer " + ts.token, http.StatusOK},
		{"the token, any case", "/api/runs", "bearer " + ts.token, http.StatusOK},
		{"the token in the query of the page", "/?token=" + ts.token, "", http.StatusOK},
		{"the token in the header of the page", "/", "Bearer " + ts.token, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL+tt.path, nil)
			require.NoError(t, err)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.want, resp.StatusCode, "%s", body)
			if tt.want == http.StatusUnauthorized {
				require.Equal(t, `Bearer realm="retrai"`, resp.Header.Get("WWW-Authenticate"))
				var e errorBody
				require.NoError(t, json.Unmarshal(body, &e), "%s", body)
				require.Contains(t, e.Error, "token")
			}
		})
	}
	// The page is the dashboard.
	code, body := ts.do(t, "GET", "/?token="+ts.token, "", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "<title>retrai</title>")
}

func TestServeErrors(t *testing.T) {
	ts := newTestServer(t)
	shell := t.TempDir()
	require.NoError(t, samples.Copy(samples.Shell, shell))
	// A pending run: created, never started.
	pending, err := ts.m.Create(t.Context(), runs.Config{Cwd: shell, Model: demoPrefix + samples.Shell})
	require.NoError(t, err)

	tests := []struct {
		name      string
		method    string
		path      string
		body      string
		want      int
		wantError string
	}{
		{"bad JSON", "POST", "/api/runs", `{"goal":`, http.StatusBadRequest, "bad JSON body"},
		{"not an object", "POST", "/api/runs", `["shell"]`, http.StatusBadRequest, "bad JSON body"},
		{"an unknown field", "POST", "/api/runs", `{"goal":"shell","colour":"red"}`, http.StatusBadRequest, `unknown field "colour"`},
		{"a field of the wrong type", "POST", "/api/runs", `{"hitl":"yes"}`, http.StatusBadRequest, "bad JSON body"},
		{"data after the object", "POST", "/api/runs", `{} {}`, http.StatusBadRequest, "data after the JSON object"},
		{"no body", "POST", "/api/runs", ``, http.StatusBadRequest, "must be a JSON object"},
		{"negative iterations", "POST", "/api/runs", `{"max_iterations":-1}`, http.StatusBadRequest, "max_iterations"},
		{"a demo sample that does not exist", "POST", "/api/runs", `{"goal":"cargo-test"}`, http.StatusBadRequest, `no "cargo-test" sample`},
		{"a project without a model", "POST", "/api/runs", `{"cwd":"` + shell + `"}`, http.StatusBadRequest, "no model configured"},
		{"a project that does not exist", "POST", "/api/runs", `{"cwd":"/no/such/dir","model":"demo:shell"}`, http.StatusBadRequest, "no such file or directory"},
		{"an unknown model", "POST", "/api/runs", `{"cwd":"` + shell + `","model":"nosuch:model"}`, http.StatusBadRequest, `unknown provider "nosuch"`},
		{"an unknown run", "GET", "/api/runs/nope", ``, http.StatusNotFound, "run not found"},
		{"resume an unknown run", "POST", "/api/runs/nope/resume", `{"decision":"approve"}`, http.StatusNotFound, "run not found"},
		{"events of an unknown run", "GET", "/api/runs/nope/events", ``, http.StatusNotFound, "run not found"},
		{"a wrong decision", "POST", "/api/runs/" + pending.ID + "/resume", `{"decision":"maybe"}`, http.StatusBadRequest, `decision must be "approve" or "abort", not "maybe"`},
		{"a resume with bad JSON", "POST", "/api/runs/" + pending.ID + "/resume", `{"decision":`, http.StatusBadRequest, "bad JSON body"},
		{"a resume with an unknown field", "POST", "/api/runs/" + pending.ID + "/resume", `{"decision":"approve","why":"x"}`, http.StatusBadRequest, `unknown field "why"`},
		{"resume a run that does not wait", "POST", "/api/runs/" + pending.ID + "/resume", `{"decision":"approve"}`, http.StatusConflict, "is pending, not waiting for a human check"},
		{"a wrong method", "DELETE", "/api/runs/" + pending.ID, ``, http.StatusMethodNotAllowed, "method DELETE not allowed"},
		{"an unknown endpoint", "GET", "/api/nope", ``, http.StatusNotFound, "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.do(t, tt.method, tt.path, ts.token, tt.body)
			require.Equal(t, tt.want, code, "%s", body)
			var e errorBody
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			require.Contains(t, e.Error, tt.wantError)
		})
	}

	// None of these created a run.
	var list listResponse
	ts.api(t, "GET", "/api/runs", "", http.StatusOK, &list)
	require.Len(t, list.Runs, 1)
	require.Equal(t, pending.ID, list.Runs[0].ID)
	require.Equal(t, runs.StatusPending, list.Runs[0].Status)
}

func TestServeHumanChecks(t *testing.T) {
	tests := []struct {
		decision   string
		query      bool // the WebSocket's token in the URL
		wantStatus runs.Status
	}{
		{runs.DecisionApprove, false, runs.StatusAchieved},
		{runs.DecisionAbort, true, runs.StatusAborted},
	}
	for _, tt := range tests {
		t.Run(tt.decision, func(t *testing.T) {
			ts := newTestServer(t)
			run := ts.create(t, `{"goal":"shell","hitl":true}`)
			require.Equal(t, demoPrefix+samples.Shell, run.Model)
			require.True(t, run.HITL)
			require.Contains(t, filepath.Base(run.Cwd), "retrai-demo-shell-")
			require.FileExists(t, filepath.Join(run.Cwd, "greeting.txt"))

			// The events come up to the human check: those recorded
			// before the WebSocket opened, then the run's state, then
			// the live ones.
			c := ts.follow(t, run.ID, tt.query)
			got := readUntil(t, c, run.ID, "retrai.human_check", wsKindState)
			for _, kind := range []string{"node_started", "retrai.iteration_started", "model_call", "tool_call", "tool_result", "node_ended", "retrai.goal_check", "runs.progress", "interrupt"} {
				require.Contains(t, kinds(got), kind)
			}
			state, _ := find(got, wsKindState)
			require.NotNil(t, state.Run)
			require.Equal(t, run.ID, state.Run.ID)
			human, _ := find(got, "retrai.human_check")
			require.Contains(t, human.Data["question"], "Iteration 1 of 10 done")

			var waiting runs.Run
			ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &waiting)
			require.Equal(t, runs.StatusWaiting, waiting.Status)
			require.Equal(t, human.Data["question"], waiting.Question)
			require.Equal(t, 1, waiting.Iteration)

			var resumed runs.Run
			ts.api(t, "POST", "/api/runs/"+run.ID+"/resume", `{"decision":"`+tt.decision+`"}`, http.StatusAccepted, &resumed)
			require.NotEqual(t, runs.StatusWaiting, resumed.Status)

			// The rest of the run comes live, and the server closes the
			// WebSocket after its end.
			rest := readUntil(t, c, run.ID, "runs.ended")
			response, ok := find(rest, "retrai.human_decision")
			require.True(t, ok, "%v", kinds(rest))
			require.Equal(t, tt.decision == runs.DecisionApprove, response.Data["approved"])
			end := rest[len(rest)-1]
			require.Equal(t, string(tt.wantStatus), end.Data["status"])
			requireClosed(t, c, websocket.StatusNormalClosure)

			var final runs.Run
			ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &final)
			require.Equal(t, tt.wantStatus, final.Status)

			// The run no longer waits.
			code, body := ts.do(t, "POST", "/api/runs/"+run.ID+"/resume", ts.token, `{"decision":"approve"}`)
			require.Equal(t, http.StatusConflict, code, "%s", body)
			require.Contains(t, string(body), "is "+string(tt.wantStatus)+", not waiting")

			// Following the ended run replays its events and closes.
			c2 := ts.follow(t, run.ID, !tt.query)
			replay := readUntil(t, c2, run.ID, wsKindState)
			require.Equal(t, append(withoutState(kinds(got)), kinds(rest)...), withoutState(kinds(replay)))
			require.Equal(t, tt.wantStatus, replay[len(replay)-1].Run.Status)
			requireClosed(t, c2, websocket.StatusNormalClosure)
		})
	}
}

func withoutState(ks []string) []string {
	var out []string
	for _, k := range ks {
		if k != wsKindState {
			out = append(out, k)
		}
	}
	return out
}

func TestServeRunsTheDemoByDefault(t *testing.T) {
	ts := newTestServer(t)
	run := ts.create(t, `{}`)
	require.Equal(t, samples.GoTest, run.Goal)
	require.Equal(t, demoPrefix+samples.GoTest, run.Model)
	require.False(t, run.HITL)
	require.Equal(t, os.Getenv("TMPDIR"), filepath.Dir(run.Cwd))

	c := ts.follow(t, run.ID, false)
	got := readUntil(t, c, run.ID, "runs.ended")
	require.Equal(t, string(runs.StatusAchieved), got[len(got)-1].Data["status"])
	require.NotContains(t, kinds(got), "retrai.human_check")
	requireClosed(t, c, websocket.StatusNormalClosure)

	var list listResponse
	ts.api(t, "GET", "/api/runs", "", http.StatusOK, &list)
	require.Len(t, list.Runs, 1)
	require.Equal(t, run.ID, list.Runs[0].ID)
	require.Equal(t, runs.StatusAchieved, list.Runs[0].Status)
	require.Equal(t, 2, list.Runs[0].Iteration)
	require.Equal(t, 4950, list.Runs[0].TotalTokens)
	data, err := os.ReadFile(filepath.Join(run.Cwd, "calc.go"))
	require.NoError(t, err)
	require.Contains(t, string(data), "i <= b")
}

func TestServeClosesTheWebSocketsOnShutdown(t *testing.T) {
	ts := newTestServer(t)
	run := ts.create(t, `{"goal":"shell","hitl":true}`)
	c := ts.follow(t, run.ID, false)
	readUntil(t, c, run.ID, "retrai.human_check", "retrai.changes", wsKindState)
	// The run waits: the WebSocket stays open until the server shuts down.
	ts.s.shutdown()
	requireClosed(t, c, websocket.StatusGoingAway)
	ts.s.wait()
	// The run still waits, for a later server.
	got, err := ts.m.Get(t.Context(), run.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusWaiting, got.Status)
}

func TestServeCommand(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "r.db")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out lockedBuffer
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, strings.NewReader(""), &out, &errOut)
	}()

	m := out.waitFor(t, regexp.MustCompile(`dashboard: (http://127\.0\.0\.1:\d+)/\?token=(\S+)`))
	base, token := m[1], m[2]
	require.Len(t, token, 26) // rand.Text
	require.Contains(t, out.String(), "Authorization: Bearer "+token)
	for _, tt := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		req, err := http.NewRequestWithContext(t.Context(), "GET", base+"/api/runs", nil)
		require.NoError(t, err)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, tt.want, resp.StatusCode, "%s", body)
	}

	cancel() // as SIGINT would
	require.Equal(t, exitAchieved, <-done, "stderr: %s", errOut.String())
	require.Contains(t, out.String(), "retrai serve: shutting down")
	_, err := http.Get(base + "/api/runs")
	require.Error(t, err)
}

func TestServeUsage(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"serve", "-h"}, exitAchieved, "-addr"},
		{[]string{"serve", "now"}, exitUsage, "unexpected arguments"},
		{[]string{"serve", "--port", "1"}, exitUsage, "flag provided but not defined"},
		{[]string{"serve", "--addr", "256.0.0.1:0", "--db", "DB"}, exitNotDone, "retrai:"},
		{[]string{"serve", "--token", "short-token-15c", "--db", "DB"}, exitUsage, "--token must be at least 16 characters long"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			isolate(t)
			for i, a := range tt.args {
				if a == "DB" {
					tt.args[i] = filepath.Join(t.TempDir(), "r.db")
				}
			}
			code, _, errOut := runCLI(t, "", tt.args...)
			require.Equal(t, tt.wantCode, code, errOut)
			require.Contains(t, errOut, tt.wantErr)
		})
	}
	code, out, _ := runCLI(t, "", "help")
	require.Equal(t, exitAchieved, code)
	require.Contains(t, out, "retrai serve [--addr 127.0.0.1:8484]")
	require.Contains(t, out, "retrai tui [flags]")
}

func TestEventLog(t *testing.T) {
	publish := func(bus *events.Bus, run string, n int) {
		for i := range n {
			bus.Publish(events.Event{RunID: run, Step: i, Data: events.Custom{Value: i}})
		}
	}
	steps := func(evs []events.Event) []int {
		var its []int
		for _, ev := range evs {
			its = append(its, ev.Step)
		}
		return its
	}
	tests := []struct {
		name        string
		publish     func(*events.Bus)
		run         string
		wantHistory []int // the steps of the events
		wantDropped int
	}{
		{"a run", func(b *events.Bus) { publish(b, "a", 3) }, "a", []int{0, 1, 2}, 0},
		{"the latest events of a run", func(b *events.Bus) { publish(b, "a", 6) }, "a", []int{2, 3, 4, 5}, 2},
		{"runs are apart", func(b *events.Bus) { publish(b, "a", 2); publish(b, "b", 1) }, "b", []int{0}, 0},
		{"events of no run", func(b *events.Bus) { publish(b, "", 2) }, "", nil, 0},
		{"the oldest run is forgotten", func(b *events.Bus) { publish(b, "a", 1); publish(b, "b", 1); publish(b, "c", 1); publish(b, "d", 1) }, "a", nil, 0},
		{"the others are kept", func(b *events.Bus) { publish(b, "a", 1); publish(b, "b", 1); publish(b, "c", 1); publish(b, "d", 1) }, "b", []int{0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus()
			l := newEventLog(t.Context(), bus, nil)
			l.mu.Lock()
			l.maxRuns, l.maxEvents = 3, 4
			l.mu.Unlock()
			tt.publish(bus)
			bus.Close()
			<-l.done // the log has had every event
			hist, dropped, sub := l.follow(t.Context(), tt.run)
			require.Equal(t, tt.wantHistory, steps(hist))
			require.Equal(t, tt.wantDropped, dropped)
			for range sub.Events() {
				t.Fatal("the log is closed: no more events")
			}
		})
	}

	// Following gives what was recorded, then what comes next, once.
	bus := events.NewBus()
	l := newEventLog(t.Context(), bus, nil)
	_, _, first := l.follow(t.Context(), "a")
	publish(bus, "a", 2)
	n := 0
	for range first.Events() { // the log has recorded them once they come
		if n++; n == 2 {
			break
		}
	}
	first.Close()
	hist, _, sub := l.follow(t.Context(), "a")
	publish(bus, "b", 1)
	bus.Publish(events.Event{RunID: "a", Step: 2, Data: events.Custom{Value: 2}})
	bus.Close()
	var live []events.Event
	for ev, err := range sub.Events() {
		require.NoError(t, err)
		live = append(live, ev)
	}
	require.Equal(t, []int{0, 1}, steps(hist))
	require.Equal(t, []int{2}, steps(live))
}

// lockedBuffer is a buffer safe for concurrent use whose readers can wait
// for what they expect.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until re matches what was written, and returns the match.
func (l *lockedBuffer) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for {
		l.mu.Lock()
		m := re.FindStringSubmatch(l.b.String())
		if m == nil && l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatalf("%v never came; got:\n%s", re, l.String())
		}
	}
}

// interruptedRun runs a demo run on the shell sample and interrupts it at
// its first tool result, as Ctrl-C would; it returns the run once its
// execution has ended.
func (ts *testServer) interruptedRun(t *testing.T) runs.Run {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, samples.Copy(samples.Shell, dir))
	run, err := ts.m.Create(t.Context(), runs.Config{Cwd: dir, Model: demoPrefix + samples.Shell})
	require.NoError(t, err)
	sub := ts.m.Bus().Subscribe(t.Context(), events.FilterRunIDs(run.ID), events.QueueSize(1<<14))
	require.NoError(t, ts.m.Start(t.Context(), run.ID))
	for ev, err := range sub.Events() {
		require.NoError(t, err)
		if ev.Kind() == events.KindToolResult {
			_ = ts.m.Cancel(run.ID)
		}
		if ev.Kind() == runs.KindEnded {
			break
		}
	}
	sub.Close()
	return run
}

// TestServeResumesAnInterruptedRun: POST /api/runs/{id}/resume without a
// decision continues an interrupted run; a waiting run needs a decision,
// and the others take none.
func TestServeResumesAnInterruptedRun(t *testing.T) {
	ts := newTestServer(t)
	run := ts.interruptedRun(t)
	var shown apiRun
	ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &shown)
	require.Equal(t, runs.StatusInterrupted, shown.Status)
	require.True(t, shown.Resumable)

	code, body := ts.do(t, "POST", "/api/runs/"+run.ID+"/resume", ts.token, `{"decision":"approve"}`)
	require.Equal(t, http.StatusConflict, code, "%s", body)
	require.Contains(t, string(body), "is interrupted, not waiting for a human check: resume it without a decision")

	var resumed apiRun
	ts.api(t, "POST", "/api/runs/"+run.ID+"/resume", `{}`, http.StatusAccepted, &resumed)
	require.False(t, resumed.Resumable)
	// The WebSocket replays the first execution, up to its end, then the
	// second one.
	c := ts.follow(t, run.ID, false)
	got := readUntil(t, c, run.ID, "runs.ended")
	require.Equal(t, string(runs.StatusInterrupted), got[len(got)-1].Data["status"])
	got = readUntil(t, c, run.ID, "runs.ended")
	require.Equal(t, string(runs.StatusAchieved), got[len(got)-1].Data["status"])
	requireClosed(t, c, websocket.StatusNormalClosure)

	code, body = ts.do(t, "POST", "/api/runs/"+run.ID+"/resume", ts.token, `{}`)
	require.Equal(t, http.StatusConflict, code, "%s", body)
	require.Contains(t, string(body), "has ended (achieved): it cannot be resumed")

	// A waiting run needs a decision.
	waiting := ts.create(t, `{"goal":"shell","hitl":true}`)
	c = ts.follow(t, waiting.ID, false)
	readUntil(t, c, waiting.ID, "retrai.human_check")
	code, body = ts.do(t, "POST", "/api/runs/"+waiting.ID+"/resume", ts.token, `{}`)
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	require.Contains(t, string(body), "is waiting for a human check: the decision must be")
}
