package sqlite_test

// Graph servers sharing one SQLite file, as processes on one machine
// would: each with its own Backend and saver on the file.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ckptsqlite "github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/sqlite"
	"github.com/agentgraph/agentgraph/state"
)

// State is the test graph's state: each node appends its name, tagged
// with the run's Tag.
type State struct {
	Tag   state.Value[string]  `json:"tag"`
	Gate  state.Value[string]  `json:"gate"` // the node "second" waits on this gate
	Steps state.Append[string] `json:"steps"`
}

// file is one SQLite file several servers share, with the gates of its
// graphs and a log of the nodes they executed.
type file struct {
	path    string
	mu      sync.Mutex
	gates   map[string]chan struct{}
	entered chan string // the process whose node waits at a gate
	ran     []string    // process:tag:node, of the nodes that returned
}

func newFile(t *testing.T) *file {
	return &file{path: filepath.Join(t.TempDir(), "server.db"), gates: map[string]chan struct{}{}, entered: make(chan string, 16)}
}

func (f *file) gate(name string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gates[name] == nil {
		f.gates[name] = make(chan struct{})
	}
	return f.gates[name]
}

func (f *file) ranNodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// proc is one server "process" on the file.
type proc struct {
	srv     *server.Server
	http    *httptest.Server
	backend *sqlite.Backend
	saver   *ckptsqlite.Saver
}

// startProc starts a server on f whose graph is compiled with a one-second
// thread lease, unless threadLease says otherwise.
func startProc(t *testing.T, f *file, name string, threadLease ...time.Duration) *proc {
	t.Helper()
	leaseTTL := time.Second
	if len(threadLease) > 0 {
		leaseTTL = threadLease[0]
	}
	ctx := t.Context()
	saver, err := ckptsqlite.Open(ctx, f.path)
	require.NoError(t, err)
	b, err := sqlite.Open(ctx, f.path)
	require.NoError(t, err)
	node := func(n string) func(context.Context, State) (State, error) {
		return func(ctx context.Context, s State) (State, error) {
			if g := s.Gate.Get(); n == "second" && g != "" {
				f.entered <- name
				select {
				case <-f.gate(g):
				case <-ctx.Done():
					return State{}, ctx.Err()
				}
			}
			f.mu.Lock()
			f.ran = append(f.ran, name+":"+s.Tag.Get()+":"+n)
			f.mu.Unlock()
			return State{Steps: state.Items(s.Tag.Get() + ":" + n)}, nil
		}
	}
	gb := graph.New[State]()
	gb.AddNode("first", node("first"))
	gb.AddNode("second", node("second"))
	gb.AddEdge(graph.Start, "first")
	gb.AddEdge("first", "second")
	gb.AddEdge("second", graph.End)
	g, err := gb.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(leaseTTL))
	require.NoError(t, err)
	srv, err := server.New(server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(b),
		server.WithoutAuthLoopbackOnly(), server.WithHolder(name), server.WithRunLeaseTTL(time.Second),
		server.WithPollInterval(20*time.Millisecond))
	require.NoError(t, err)
	p := &proc{srv: srv, http: httptest.NewServer(srv), backend: b, saver: saver}
	t.Cleanup(func() {
		p.http.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, b.Close())
		require.NoError(t, saver.Close())
	})
	return p
}

// call sends a JSON request and decodes the JSON answer into out (when
// not nil); it returns the status.
func (p *proc) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.http.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(b, out), "answer %s", b)
	}
	return resp.StatusCode
}

func (p *proc) ok(t *testing.T, method, path string, body, out any) {
	t.Helper()
	st := p.call(t, method, path, body, out)
	require.Less(t, st, 300, "%s %s answered %d", method, path, st)
}

func (p *proc) newThread(t *testing.T) string {
	t.Helper()
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	p.ok(t, "POST", "/threads", map[string]any{}, &th)
	return th.ThreadID
}

type runJSON struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	Status   string `json:"status"`
}

func (p *proc) startRun(t *testing.T, tid, tag, gate, strategy string) runJSON {
	t.Helper()
	var rn runJSON
	p.ok(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent",
		"input": map[string]any{"tag": tag, "gate": gate}, "multitask_strategy": strategy}, &rn)
	return rn
}

type threadJSON struct {
	Status string `json:"status"`
	Values struct {
		Steps []string `json:"steps"`
	} `json:"values"`
}

func TestAThreadCreatedOnOneServerIsRunOnAnother(t *testing.T) {
	f := newFile(t)
	a, b := startProc(t, f, "a"), startProc(t, f, "b")
	tid := a.newThread(t)
	var out struct {
		Steps []string `json:"steps"`
	}
	b.ok(t, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"tag": "r1"}}, &out)
	require.Equal(t, []string{"r1:first", "r1:second"}, out.Steps)
	var th threadJSON
	a.ok(t, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "idle", th.Status)
	require.Equal(t, []string{"r1:first", "r1:second"}, th.Values.Steps)
	var runs []runJSON
	a.ok(t, "GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	require.Equal(t, "success", runs[0].Status)
}

func TestARunOfAServerThatStoppedRenewingIsTakenOverAndResumed(t *testing.T) {
	f := newFile(t)
	a := startProc(t, f, "a")
	tid := a.newThread(t)
	rn := a.startRun(t, tid, "r1", "g", "")
	require.Equal(t, "a", <-f.entered, "a executes the run, after its first node's checkpoint")
	// a can no longer reach the run records: it cannot renew its lease,
	// as a process that hangs or died.
	require.NoError(t, a.backend.Close())
	b := startProc(t, f, "b")
	require.Equal(t, "b", <-f.entered, "b took the run over")
	close(f.gate("g"))
	var got runJSON
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "success", got.Status)
	require.Equal(t, []string{"a:r1:first", "b:r1:second"}, f.ranNodes(), "the first node is not run again; a's second node never returned")
}

// A claimed run holds its thread's lease for its run lease's time, not
// the graph's: the thread of a process that died is free when its run is
// taken over, though the graph was compiled with an hour's lease.
func TestATakenOverRunDoesNotWaitForTheGraphsThreadLease(t *testing.T) {
	f := newFile(t)
	a := startProc(t, f, "a", time.Hour)
	tid := a.newThread(t)
	rn := a.startRun(t, tid, "r1", "g", "")
	require.Equal(t, "a", <-f.entered)
	// a renews neither its run lease nor its thread lease: as a process
	// that died.
	require.NoError(t, a.backend.Close())
	require.NoError(t, a.saver.Close())
	b := startProc(t, f, "b", time.Hour)
	select {
	case who := <-f.entered:
		require.Equal(t, "b", who)
	case <-time.After(time.Minute):
		t.Fatal("b did not take the run over within a minute: the dead run's thread lease still holds the thread")
	}
	close(f.gate("g"))
	var got runJSON
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
	b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
	require.Equal(t, "success", got.Status)
}

func TestEnqueuedRunsOfTwoServersRunInCreationOrder(t *testing.T) {
	f := newFile(t)
	a, b := startProc(t, f, "a"), startProc(t, f, "b")
	tid := a.newThread(t)
	first := a.startRun(t, tid, "r0", "g", "")
	<-f.entered
	var runs []runJSON
	for i, p := range []*proc{b, a, b} {
		runs = append(runs, p.startRun(t, tid, []string{"r1", "r2", "r3"}[i], "", "enqueue"))
	}
	require.Equal(t, http.StatusConflict, b.call(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": map[string]any{"tag": "x"}}, nil),
		"reject is the default")
	close(f.gate("g"))
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+first.RunID+"/join", nil, nil)
	for _, rn := range runs {
		b.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
	}
	var th threadJSON
	b.ok(t, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, []string{"r0:first", "r0:second", "r1:first", "r1:second", "r2:first", "r2:second", "r3:first", "r3:second"}, th.Values.Steps)
}

func TestARunWithKwargsOfTheWrongShapeFailsClearlyWithoutBlockingTheQueue(t *testing.T) {
	f := newFile(t)
	a := startProc(t, f, "a")
	tid := a.newThread(t)
	held := a.startRun(t, tid, "held", "g", "")
	<-f.entered
	bad := a.startRun(t, tid, "bad", "", "enqueue")
	good := a.startRun(t, tid, "good", "", "enqueue")
	_, err := rawDB(t, f.path).ExecContext(t.Context(), `UPDATE agentgraph_server_runs SET kwargs = '{"stream_mode": 42}' WHERE run_id = ?`, bad.RunID)
	require.NoError(t, err)
	close(f.gate("g"))
	for _, rn := range []runJSON{held, good} {
		var got runJSON
		a.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID+"/join", nil, nil)
		a.ok(t, "GET", "/threads/"+tid+"/runs/"+rn.RunID, nil, &got)
		require.Equal(t, "success", got.Status, rn.RunID)
	}
	var res map[string]map[string]string
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+bad.RunID+"/join", nil, &res)
	require.Contains(t, res["__error__"]["message"], "kwargs that do not decode")
	var got runJSON
	a.ok(t, "GET", "/threads/"+tid+"/runs/"+bad.RunID, nil, &got)
	require.Equal(t, "error", got.Status)
}
