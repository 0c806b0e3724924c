package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/store"
)

const token = "s3cret"

// AgentState is the state of the test graphs.
type AgentState struct {
	Topic  state.Value[string]  `json:"topic"`
	Log    state.Append[string] `json:"log"`
	Answer state.Value[string]  `json:"answer"`
	Count  state.Sum[int]       `json:"count"`
}

// agentGraph: plan (custom event) → ask (interrupt) → finish.
func agentGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("plan", func(ctx context.Context, s AgentState) (AgentState, error) {
		graph.StreamWriter(ctx)(map[string]any{"progress": "planning " + s.Topic.Get()})
		graph.MessageWriter(ctx)(graph.MessageChunk{MessageID: "m1", Text: "thinking"})
		s.Log.Append("plan:" + s.Topic.Get())
		s.Count.Add(1)
		return s, nil
	})
	b.AddNode("ask", func(ctx context.Context, s AgentState) (AgentState, error) {
		ans, err := graph.Interrupt(ctx, map[string]any{"question": "approve " + s.Topic.Get() + "?"})
		if err != nil {
			return s, err
		}
		s.Answer.Set(fmt.Sprint(ans))
		s.Log.Append("ask")
		return s, nil
	})
	b.AddNode("finish", func(ctx context.Context, s AgentState) (AgentState, error) {
		s.Log.Append("finish")
		return s, nil
	})
	b.AddEdge(graph.Start, "plan")
	b.AddEdge("plan", "ask")
	b.AddEdge("ask", "finish")
	b.AddEdge("finish", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// gate releases the steps of the slow graph one at a time.
type gate struct {
	started chan string   // a step sends its label when it starts
	release chan struct{} // the test sends to let one step finish
}

// slowGraph: one node "step" that logs its input topic once released.
func slowGraph(t *testing.T, saver checkpoint.Saver, gt *gate) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("step", func(ctx context.Context, s AgentState) (AgentState, error) {
		select {
		case gt.started <- s.Topic.Get():
		case <-ctx.Done():
			return s, ctx.Err()
		}
		select {
		case <-gt.release:
		case <-ctx.Done():
			return s, ctx.Err()
		}
		s.Log.Append("step:" + s.Topic.Get())
		return s, nil
	})
	b.AddEdge(graph.Start, "step")
	b.AddEdge("step", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func boomGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[AgentState] {
	b := graph.New[AgentState]()
	b.AddNode("boom", func(ctx context.Context, s AgentState) (AgentState, error) {
		return s, errors.New("kaboom")
	})
	b.AddEdge(graph.Start, "boom")
	b.AddEdge("boom", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// env is a running test server with its graphs.
type env struct {
	t    *testing.T
	srv  *httptest.Server
	gate *gate
}

func newEnv(t *testing.T, opts ...server.Option) *env {
	t.Helper()
	saver, shared := envSaver(t)
	gt := &gate{started: make(chan string), release: make(chan struct{})}
	all := append(append([]server.Option{
		server.Graph("agent", agentGraph(t, saver)),
		server.Graph("slow", slowGraph(t, saver, gt)),
		server.Graph("boom", boomGraph(t, saver)),
		server.WithCheckpointer(saver),
		server.WithStore(store.NewMemory()),
		server.WithAuthToken(token),
	}, shared...), opts...)
	s, err := server.New(all...)
	require.NoError(t, err)
	// The test harness's own routes let a client outside Go (the JS smoke
	// script) drive the slow graph's gate.
	mux := http.NewServeMux()
	mux.Handle("/", s)
	mux.HandleFunc("GET /__test/started", func(w http.ResponseWriter, r *http.Request) {
		select {
		case topic := <-gt.started:
			_ = json.NewEncoder(w).Encode(topic)
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("POST /__test/release", func(w http.ResponseWriter, r *http.Request) {
		select {
		case gt.release <- struct{}{}:
			_ = json.NewEncoder(w).Encode(true)
		case <-r.Context().Done():
		}
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		// A failed test may leave runs blocked on the gate and requests
		// waiting on them: end both before closing.
		require.NoError(t, s.Shutdown(context.Background()))
		hs.CloseClientConnections()
		hs.Close()
	})
	return &env{t: t, srv: hs, gate: gt}
}

// serve starts a test server with opts and the test token, shut down
// and closed when the test ends.
func serve(t *testing.T, opts ...server.Option) *env {
	t.Helper()
	s, err := server.New(append(opts, server.WithAuthToken(token))...)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(context.Background()))
		hs.Close()
	})
	return &env{t: t, srv: hs}
}

// resp is an HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

// do sends a request with the token; body is JSON-encoded unless it is a
// string (sent as is).
func (e *env) do(method, path string, body any) resp {
	e.t.Helper()
	return e.doCtx(context.Background(), method, path, body, nil)
}

func (e *env) doCtx(ctx context.Context, method, path string, body any, hdr map[string]string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// ok asserts a 2xx and decodes the body into v (when v is not nil).
func (e *env) ok(method, path string, body, v any) resp {
	e.t.Helper()
	r := e.do(method, path, body)
	require.True(e.t, r.status >= 200 && r.status < 300, "%s %s: %d %s", method, path, r.status, r.body)
	if v != nil {
		r.decode(e.t, v)
	}
	return r
}

func (e *env) newThread(metadata map[string]any) string {
	e.t.Helper()
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	e.ok("POST", "/threads", map[string]any{"metadata": metadata}, &th)
	return th.ThreadID
}

// event is one parsed SSE event.
type event struct {
	Name string
	Data json.RawMessage
	ID   int
}

// parseSSE reads an SSE body as the JS SDK does: event, data (concatenated),
// id lines; blank line ends an event; ":" lines are comments.
func parseSSE(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	cur := event{ID: -1}
	var data strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name != "" || data.Len() > 0 {
				cur.Data = json.RawMessage(data.String())
				require.True(t, json.Valid(cur.Data), "event %s data %q is not JSON", cur.Name, cur.Data)
				out = append(out, cur)
			}
			cur, data = event{ID: -1}, strings.Builder{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "id: "))
			require.NoError(t, err)
			cur.ID = n
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.Empty(t, data.String(), "unterminated event")
	return out
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}

// jsonOf decodes raw into a generic value for comparisons.
func jsonOf(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// newRequest sends a request and returns the response with its body
// unread, for streams the test abandons.
func newRequest(ctx context.Context, e *env, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	return res, err
}
