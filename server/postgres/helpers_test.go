package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	pgsaver "github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/internal/pgdb/pgdbtest"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/server/postgres"
	"github.com/agentgraph/agentgraph/state"
)

// State is the test graph's state: each node appends its name, tagged
// with the run's Tag.
type State struct {
	Thread state.Value[string]  `json:"thread"` // set by each run's input
	Tag    state.Value[string]  `json:"tag"`
	Gate   state.Value[string]  `json:"gate"` // the node "second" waits on this gate
	Steps  state.Append[string] `json:"steps"`
}

// db is one test database schema that several processes share.
type db struct {
	url, schema string
	execs       *executions
	gates       *gates
}

func newDB(t *testing.T) *db {
	t.Helper()
	url := pgdbtest.URL(t)
	d := &db{url: url, schema: pgdbtest.FreshSchema(t, "srv_test"), execs: &executions{inflight: map[string]int{}}, gates: &gates{m: map[string]chan struct{}{}}}
	return d
}

// executions records every execution of a node, by process, and whether
// two executions of one thread's nodes ever overlapped.
type executions struct {
	mu       sync.Mutex
	log      []execution
	inflight map[string]int // by thread
	overlaps []string
}

type execution struct {
	process, thread, node, tag string
	err                        error
}

func (e *executions) start(thread string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inflight[thread]++
	if e.inflight[thread] > 1 {
		e.overlaps = append(e.overlaps, thread)
	}
}

func (e *executions) end(x execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inflight[x.thread]--
	e.log = append(e.log, x)
}

// count returns how many executions of node by process ("" any) of
// thread ended, with an error or without.
func (e *executions) count(thread, node, process string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, x := range e.log {
		if x.thread == thread && x.node == node && (process == "" || x.process == process) {
			n++
		}
	}
	return n
}

// gates hold the node "second" of the runs whose Gate names them until
// opened; entered is signalled when a node waits at it.
type gates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
	// entered receives the process name each time a node starts waiting.
	entered sync.Map // gate → chan string
}

func (g *gates) gate(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.m[name]
	if !ok {
		c = make(chan struct{})
		g.m[name] = c
	}
	return c
}

func (g *gates) enteredChan(name string) chan string {
	c, _ := g.entered.LoadOrStore(name, make(chan string, 16))
	return c.(chan string)
}

func (g *gates) open(name string) { close(g.gate(name)) }

// process is one graph server "process": its own pools, saver, graph and
// server, on the shared schema.
type process struct {
	name   string
	srv    *server.Server
	http   *httptest.Server
	pool   *pgxpool.Pool
	b      *postgres.Backend
	killed *atomic.Bool
}

// startProcess starts a server named name on d. Its pool refuses every
// connection once killed is set, as a process that died would.
func startProcess(t *testing.T, d *db, name string, opts ...server.Option) *process {
	t.Helper()
	return startProcessWith(t, d, name, nil, opts...)
}

// startProcessWith starts a server named name on d, its Backend made with
// bopts.
func startProcessWith(t *testing.T, d *db, name string, bopts []postgres.Option, opts ...server.Option) *process {
	t.Helper()
	ctx := t.Context()
	saver, err := pgsaver.Open(ctx, d.url, pgsaver.WithSchema(d.schema), pgsaver.WithMaxConns(8))
	require.NoError(t, err)
	killed := &atomic.Bool{}
	cfg, err := pgxpool.ParseConfig(d.url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{d.schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = "srvtest-" + d.schema + "-" + name
	cfg.MaxConns = 16
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		if killed.Load() {
			return false, errors.New("process killed")
		}
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	b, err := postgres.New(ctx, pool, bopts...)
	require.NoError(t, err)

	gb := graph.New[State]()
	node := func(n string) func(context.Context, State) (State, error) {
		return func(ctx context.Context, s State) (State, error) {
			thread := s.Thread.Get()
			d.execs.start(thread)
			x := execution{process: name, thread: thread, node: n, tag: s.Tag.Get()}
			defer func() { d.execs.end(x) }()
			if g := s.Gate.Get(); n == "second" && g != "" {
				select {
				case d.gates.enteredChan(g) <- name:
				default:
				}
				select {
				case <-d.gates.gate(g):
				case <-ctx.Done():
					x.err = ctx.Err()
					return State{}, ctx.Err()
				}
			}
			return State{Steps: state.Items(s.Tag.Get() + ":" + n)}, nil
		}
	}
	gb.AddNode("first", node("first"))
	gb.AddNode("second", node("second"))
	gb.AddEdge(graph.Start, "first")
	gb.AddEdge("first", "second")
	gb.AddEdge("second", graph.End)
	g, err := gb.Compile(graph.WithCheckpointer(saver), graph.WithLeaseTTL(time.Second))
	require.NoError(t, err)

	srv, err := server.New(append([]server.Option{server.Graph("agent", g), server.WithCheckpointer(saver), server.WithBackend(b),
		server.WithoutAuthLoopbackOnly(), server.WithHolder(name), server.WithRunLeaseTTL(time.Second),
		server.WithPollInterval(20 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	p := &process{name: name, srv: srv, http: httptest.NewServer(srv), pool: pool, b: b, killed: killed}
	t.Cleanup(func() {
		p.http.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		b.Close()
		pool.Close()
		require.NoError(t, saver.Close())
	})
	return p
}

// kill makes the process's pool refuse connections and ends the ones it
// has, so that it can neither renew its leases nor finish its runs: a
// process that died, as far as the database can tell.
func (p *process) kill(t *testing.T, d *db) {
	t.Helper()
	p.killed.Store(true)
	conn, err := pgx.Connect(t.Context(), d.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
		"srvtest-"+d.schema+"-"+p.name)
	require.NoError(t, err)
}

// call sends a JSON request and decodes the JSON answer into out (when
// not nil); it returns the status.
func (p *process) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.http.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode < 300 && len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, out), "answer %s", b)
	}
	return resp.StatusCode
}

// ok is call, requiring a 2xx answer.
func (p *process) ok(t *testing.T, method, path string, body, out any) {
	t.Helper()
	st := p.call(t, method, path, body, out)
	require.Less(t, st, 300, "%s %s answered %d", method, path, st)
}

// sse reads a whole event stream: the events' names and data.
func (p *process) sse(t *testing.T, method, path string, body any) []sseEvent {
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
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev.Name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				ev.Data = v
			}
		}
		out = append(out, ev)
	}
	return out
}

type sseEvent struct{ Name, Data string }

func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}

// newThread creates a thread through p and returns its id.
func (p *process) newThread(t *testing.T) string {
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

// startRun creates a background run through p.
func (p *process) startRun(t *testing.T, tid string, input map[string]any, strategy string) runJSON {
	t.Helper()
	var rn runJSON
	p.ok(t, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": input, "multitask_strategy": strategy}, &rn)
	return rn
}

// eventually waits for cond, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
