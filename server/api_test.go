package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
)

func TestNewNeedsAnAuthChoice(t *testing.T) {
	_, err := server.New(server.Graph("agent", agentGraph(t, checkpoint.NewMemory())))
	require.ErrorContains(t, err, "WithAuthToken")
	_, err = server.New(server.WithAuthToken("x"), server.WithoutAuthLoopbackOnly())
	require.ErrorContains(t, err, "exclude each other")
	_, err = server.New(server.WithAuthToken(""))
	require.ErrorContains(t, err, "empty token")
	g := agentGraph(t, checkpoint.NewMemory())
	_, err = server.New(server.WithAuthToken("x"), server.Graph("a", g), server.Graph("a", g))
	require.ErrorContains(t, err, "registered twice")
	b := graph.New[AgentState]()
	b.AddNode("n", func(ctx context.Context, s AgentState) (AgentState, error) { return s, nil })
	b.AddEdge(graph.Start, "n")
	noSaver, err := b.Compile()
	require.NoError(t, err)
	_, err = server.New(server.WithAuthToken("x"), server.Graph("a", noSaver))
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
}

func TestAuthRefusesMissingAndWrongCredentials(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"none", nil, 401},
		{"wrong bearer", map[string]string{"Authorization": "Bearer nope"}, 403},
		{"basic scheme", map[string]string{"Authorization": "Basic " + token}, 401},
		{"wrong api key", map[string]string{"X-Api-Key": "nope"}, 403},
		{"bearer", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"api key", map[string]string{"X-Api-Key": token}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", e.srv.URL+"/assistants/search", strings.NewReader(`{}`))
			require.NoError(t, err)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			res, err := e.srv.Client().Do(req)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, tc.status, res.StatusCode)
		})
	}
}

func TestLoopbackOnlyRefusesRemoteClients(t *testing.T) {
	s, err := server.New(server.WithoutAuthLoopbackOnly(), server.Graph("agent", agentGraph(t, checkpoint.NewMemory())))
	require.NoError(t, err)
	for addr, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "203.0.113.7:5000": 403, "10.0.0.1:1": 403} {
		req := httptest.NewRequest("GET", "/assistants/agent", nil)
		req.RemoteAddr, req.Host = addr, "localhost:2024"
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		require.Equal(t, want, rec.Code, addr)
	}
}

// Without a token, a loopback address is not enough: a web page the
// developer visits can reach localhost (cross-site requests, DNS
// rebinding), and a proxy on the same host forwards anyone.
func TestLoopbackOnlyRefusesWhatABrowserOrAProxySends(t *testing.T) {
	s, err := server.New(server.WithoutAuthLoopbackOnly(), server.Graph("agent", agentGraph(t, checkpoint.NewMemory())))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		host   string
		header map[string]string
		body   string
		want   int
	}{
		{"a plain local client", "127.0.0.1:2024", nil, "", 200},
		{"a local page", "localhost:2024", map[string]string{"Origin": "http://localhost:3000"}, "", 200},
		{"a foreign Host (DNS rebinding)", "evil.example:2024", nil, "", 403},
		{"a foreign Origin", "127.0.0.1:2024", map[string]string{"Origin": "http://evil.example"}, "", 403},
		{"a proxied request", "127.0.0.1:2024", map[string]string{"X-Forwarded-For": "203.0.113.9"}, "", 403},
		{"a Forwarded header", "127.0.0.1:2024", map[string]string{"Forwarded": "for=203.0.113.9"}, "", 403},
		{"a text/plain body (no preflight)", "127.0.0.1:2024", map[string]string{"Content-Type": "text/plain"}, `{"limit":1}`, 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, path := "GET", "/assistants/agent"
			var body io.Reader
			if tc.body != "" {
				method, path, body = "POST", "/assistants/search", strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(method, path, body)
			req.RemoteAddr, req.Host = "127.0.0.1:5000", tc.host
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			require.Equal(t, tc.want, rec.Code, rec.Body.String())
		})
	}
}

func TestBadRequestsGetClear4xxInTheErrorShape(t *testing.T) {
	e := newEnv(t, server.WithMaxBodyBytes(4096))
	tid := e.newThread(nil)
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		detail             string
	}{
		{"malformed JSON", "POST", "/threads", `{"metadata": `, 400, "malformed JSON"},
		{"trailing data", "POST", "/threads", `{} {}`, 400, "trailing data"},
		{"wrong type", "POST", "/threads", `{"metadata": 3}`, 400, "malformed JSON"},
		{"body too large", "POST", "/threads", `{"metadata":{"x":"` + strings.Repeat("a", 5000) + `"}}`, 413, "larger than 4096"},
		{"thread id not a UUID", "GET", "/threads/nope", nil, 422, "not a UUID"},
		{"missing thread", "GET", "/threads/00000000-0000-4000-8000-000000000000", nil, 404, "not found"},
		{"unknown assistant", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "nope"}, 404, "No assistant"},
		{"unknown state field", "POST", "/threads/" + tid + "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"Topics": "x"}}, 400, `no state field "Topics"`},
		{"input not an object", "POST", "/threads/" + tid + "/runs/wait", map[string]any{"assistant_id": "agent", "input": []int{1}}, 400, "JSON object"},
		{"append field not a list", "POST", "/threads/" + tid + "/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"log": "x"}}, 400, "JSON array"},
		{"unsupported stream mode", "POST", "/threads/" + tid + "/runs/stream", map[string]any{"assistant_id": "agent", "stream_mode": "events"}, 422, "astream_events) is not supported"},
		{"recursion limit zero", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "config": map[string]any{"recursion_limit": 0}}, 422, "recursion_limit must be at least 1"},
		{"recursion limit negative", "POST", "/runs/wait", map[string]any{"assistant_id": "agent", "config": map[string]any{"recursion_limit": -2}}, 422, "recursion_limit must be at least 1"},
		{"bad strategy", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "multitask_strategy": "yolo"}, 422, "multitask_strategy"},
		{"input and command", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "input": map[string]any{}, "command": map[string]any{"resume": 1}}, 422, "not both"},
		{"unknown route", "GET", "/nope", nil, 404, "no route"},
		{"breakpoint on an unknown node", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "interrupt_before": []string{"nope"}}, 422, `no node "nope"`},
		{"breakpoint not a list", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "interrupt_after": "ask"}, 422, "interrupt_after"},
		{"bad goto", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "command": map[string]any{"goto": map[string]any{"node": "x"}}}, 400, "goto"},
		{"patch thread to an unknown graph", "PATCH", "/threads/" + tid, map[string]any{"metadata": map[string]any{"graph_id": "nope"}}, 404, "no graph"},
		{"negative offset", "POST", "/assistants/search", map[string]any{"offset": -1}, 400, "offset"},
		{"store value not an object", "PUT", "/store/items", map[string]any{"namespace": []string{"a"}, "key": "k", "value": 3}, 422, "JSON object"},
		{"store namespace with a period", "PUT", "/store/items", map[string]any{"namespace": []string{"a.b"}, "key": "k", "value": map[string]any{}}, 422, "periods"},
		{"limit out of range", "POST", "/threads/search", map[string]any{"limit": 0}, 400, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			var body struct {
				Detail string `json:"detail"`
			}
			r.decode(t, &body)
			require.Contains(t, body.Detail, tc.detail)
		})
	}
	// A refused run left the thread untouched.
	var th map[string]any
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "idle", th["status"])
}

func TestRunOnThreadOfAnotherGraphIsRefused(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(map[string]any{"graph_id": "agent"})
	r := e.do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "slow", "input": map[string]any{}})
	require.Equal(t, 409, r.status, "%s", r.body)
}

func TestAssistantsOnePerGraphWithTheLangGraphID(t *testing.T) {
	e := newEnv(t)
	var a map[string]any
	e.ok("GET", "/assistants/agent", nil, &a)
	require.Equal(t, "fe096781-5601-53d2-b2f6-0d3403f7e9ca", a["assistant_id"], "uuid5 of the graph id, as LangGraph servers compute it")
	require.Equal(t, "agent", a["graph_id"])
	require.Equal(t, map[string]any{"created_by": "system"}, a["metadata"])
	e.ok("GET", "/assistants/fe096781-5601-53d2-b2f6-0d3403f7e9ca", nil, &a)
	require.Equal(t, "agent", a["name"])

	var list []map[string]any
	r := e.ok("POST", "/assistants/search", map[string]any{"limit": 2}, &list)
	require.Len(t, list, 2)
	require.Equal(t, "3", r.header.Get("X-Pagination-Total"))
	require.Equal(t, "2", r.header.Get("X-Pagination-Next"))

	var created map[string]any
	e.ok("POST", "/assistants", map[string]any{"graph_id": "agent", "name": "Helper", "metadata": map[string]any{"team": "x"}}, &created)
	require.Equal(t, "Helper", created["name"])
	e.ok("POST", "/assistants/search", map[string]any{"metadata": map[string]any{"team": "x"}}, &list)
	require.Len(t, list, 1)
	require.Equal(t, created["assistant_id"], list[0]["assistant_id"])
	e.ok("POST", "/assistants/search", map[string]any{"graph_id": "agent"}, &list)
	require.Len(t, list, 2)

	// A run can name the created assistant.
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": created["assistant_id"], "input": map[string]any{"topic": "t"}}, &out)
	require.Contains(t, out, "__interrupt__")

	id := created["assistant_id"].(string)
	r = e.do("POST", "/assistants", map[string]any{"graph_id": "agent", "assistant_id": id})
	require.Equal(t, 409, r.status)
	e.ok("POST", "/assistants", map[string]any{"graph_id": "agent", "assistant_id": id, "if_exists": "do_nothing"}, &a)
	require.Equal(t, "Helper", a["name"])
	r = e.do("POST", "/assistants", map[string]any{"graph_id": "nope"})
	require.Equal(t, 404, r.status)
}

func TestAssistantGraphIsTheDrawing(t *testing.T) {
	e := newEnv(t)
	var d struct {
		Nodes []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"nodes"`
		Edges []struct {
			Source      string `json:"source"`
			Target      string `json:"target"`
			Conditional bool   `json:"conditional"`
		} `json:"edges"`
	}
	e.ok("GET", "/assistants/agent/graph", nil, &d)
	var nodes []string
	for _, n := range d.Nodes {
		nodes = append(nodes, n.ID+":"+n.Type)
	}
	require.Equal(t, []string{"__start__:schema", "ask:runnable", "finish:runnable", "plan:runnable", "__end__:schema"}, nodes)
	var edges []string
	for _, x := range d.Edges {
		edges = append(edges, x.Source+">"+x.Target)
	}
	require.ElementsMatch(t, []string{"__start__>plan", "plan>ask", "ask>finish", "finish>__end__"}, edges)
}

func TestAssistantSchemasDescribeTheStateAsJSON(t *testing.T) {
	e := newEnv(t)
	var s struct {
		GraphID     string `json:"graph_id"`
		InputSchema struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
		} `json:"input_schema"`
	}
	e.ok("GET", "/assistants/agent/schemas", nil, &s)
	require.Equal(t, "agent", s.GraphID)
	require.Equal(t, "object", s.InputSchema.Type)
	require.Equal(t, "string", s.InputSchema.Properties["topic"]["type"])
	require.Equal(t, "array", s.InputSchema.Properties["log"]["type"])
	require.Equal(t, map[string]any{"type": "string"}, s.InputSchema.Properties["log"]["items"])
	require.Equal(t, "integer", s.InputSchema.Properties["count"]["type"])
}

func TestThreadsCreateGetSearchDelete(t *testing.T) {
	e := newEnv(t)
	a := e.newThread(map[string]any{"owner": "ann", "tags": map[string]any{"x": 1}})
	b := e.newThread(map[string]any{"owner": "bob"})
	var th map[string]any
	e.ok("GET", "/threads/"+a, nil, &th)
	require.Equal(t, "idle", th["status"])
	require.Equal(t, map[string]any{}, th["interrupts"])
	require.Contains(t, th, "values")

	r := e.do("POST", "/threads", map[string]any{"thread_id": a})
	require.Equal(t, 409, r.status)
	e.ok("POST", "/threads", map[string]any{"thread_id": a, "if_exists": "do_nothing"}, &th)
	require.Equal(t, "ann", th["metadata"].(map[string]any)["owner"])

	var list []map[string]any
	e.ok("POST", "/threads/search", map[string]any{"metadata": map[string]any{"tags": map[string]any{"x": 1}}}, &list)
	require.Len(t, list, 1)
	require.Equal(t, a, list[0]["thread_id"])
	e.ok("POST", "/threads/search", map[string]any{"status": "idle", "sort_order": "asc"}, &list)
	require.Len(t, list, 2)
	e.ok("POST", "/threads/search", map[string]any{"ids": []string{b}}, &list)
	require.Len(t, list, 1)

	// Thread state before any run is the empty form.
	var st map[string]any
	e.ok("GET", "/threads/"+a+"/state", nil, &st)
	require.Nil(t, st["checkpoint"])
	var hist []any
	e.ok("POST", "/threads/"+a+"/history", map[string]any{}, &hist)
	require.Empty(t, hist)

	e.ok("POST", "/threads/"+a+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "z"}}, nil)
	e.ok("POST", "/threads/search", map[string]any{"status": "interrupted"}, &list)
	require.Len(t, list, 1)
	e.ok("POST", "/threads/search", map[string]any{"values": map[string]any{"topic": "z"}}, &list)
	require.Len(t, list, 1)

	r = e.do("DELETE", "/threads/"+a, nil)
	require.Equal(t, 204, r.status)
	require.Equal(t, 404, e.do("GET", "/threads/"+a, nil).status)
	require.Equal(t, 404, e.do("DELETE", "/threads/"+a, nil).status)
	// Its checkpoints went with it: a new thread with the same id is empty.
	e.ok("POST", "/threads", map[string]any{"thread_id": a, "metadata": map[string]any{"graph_id": "agent"}}, nil)
	e.ok("GET", "/threads/"+a+"/state", nil, &st)
	require.Nil(t, st["checkpoint"])
}

func TestStoreEndpoints(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 204, e.do("PUT", "/store/items", map[string]any{"namespace": []string{"users", "u1"}, "key": "prefs", "value": map[string]any{"theme": "dark"}}).status)
	require.Equal(t, 204, e.do("PUT", "/store/items", map[string]any{"namespace": []string{"users", "u2"}, "key": "prefs", "value": map[string]any{"theme": "light"}}).status)

	var it map[string]any
	e.ok("GET", "/store/items?namespace=users.u1&key=prefs", nil, &it)
	require.Equal(t, []any{"users", "u1"}, it["namespace"])
	require.Equal(t, map[string]any{"theme": "dark"}, it["value"])
	require.NotEmpty(t, it["created_at"])

	r := e.ok("GET", "/store/items?namespace=users.u1&key=missing", nil, nil)
	require.Equal(t, "null", string(r.body))

	var found struct {
		Items []map[string]any `json:"items"`
	}
	e.ok("POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"users"}, "filter": map[string]any{"theme": "light"}}, &found)
	require.Len(t, found.Items, 1)
	require.Equal(t, "prefs", found.Items[0]["key"])

	var ns struct {
		Namespaces [][]string `json:"namespaces"`
	}
	e.ok("POST", "/store/namespaces", map[string]any{"prefix": []string{"users"}}, &ns)
	require.Equal(t, [][]string{{"users", "u1"}, {"users", "u2"}}, ns.Namespaces)
	e.ok("POST", "/store/namespaces", map[string]any{"max_depth": 1}, &ns)
	require.Equal(t, [][]string{{"users"}}, ns.Namespaces)

	require.Equal(t, 204, e.do("DELETE", "/store/items", map[string]any{"namespace": []string{"users", "u1"}, "key": "prefs"}).status)
	r = e.ok("GET", "/store/items?namespace=users.u1&key=prefs", nil, nil)
	require.Equal(t, "null", string(r.body))
}

func TestStoreRoutesAnswer404WithoutAStore(t *testing.T) {
	s, err := server.New(server.WithAuthToken(token), server.Graph("agent", agentGraph(t, checkpoint.NewMemory())))
	require.NoError(t, err)
	req := httptest.NewRequest("POST", "/store/items/search", strings.NewReader(`{"namespace_prefix":["a"]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, 404, rec.Code)
	require.Contains(t, rec.Body.String(), "WithStore")
}

func TestThreadPatchAndCount(t *testing.T) {
	e := newEnv(t)
	a := e.newThread(map[string]any{"owner": "ann"})
	e.newThread(map[string]any{"owner": "bob"})
	var th map[string]any
	e.ok("PATCH", "/threads/"+a, map[string]any{"metadata": map[string]any{"team": "red"}}, &th)
	require.Equal(t, map[string]any{"owner": "ann", "team": "red"}, th["metadata"])
	var n int
	e.ok("POST", "/threads/count", map[string]any{"metadata": map[string]any{"team": "red"}}, &n)
	require.Equal(t, 1, n)
	e.ok("POST", "/threads/count", map[string]any{}, &n)
	require.Equal(t, 2, n)
	require.Equal(t, 404, e.do("PATCH", "/threads/00000000-0000-4000-8000-000000000000", map[string]any{"metadata": map[string]any{}}).status)
}

func TestAssistantPatchDeleteAndCount(t *testing.T) {
	e := newEnv(t)
	var a map[string]any
	e.ok("POST", "/assistants", map[string]any{"graph_id": "agent", "name": "one", "metadata": map[string]any{"k": 1}}, &a)
	id := a["assistant_id"].(string)
	e.ok("PATCH", "/assistants/"+id, map[string]any{"name": "two", "metadata": map[string]any{"j": 2}}, &a)
	require.Equal(t, "two", a["name"])
	require.Equal(t, float64(2), a["version"])
	require.Equal(t, map[string]any{"k": float64(1), "j": float64(2)}, a["metadata"])
	var n int
	e.ok("POST", "/assistants/count", map[string]any{"graph_id": "agent"}, &n)
	require.Equal(t, 2, n)
	require.Equal(t, 409, e.do("PATCH", "/assistants/agent", map[string]any{"name": "x"}).status, "system assistants are fixed")
	require.Equal(t, 409, e.do("DELETE", "/assistants/agent", nil).status)
	require.Equal(t, 204, e.do("DELETE", "/assistants/"+id, nil).status)
	require.Equal(t, 404, e.do("GET", "/assistants/"+id, nil).status)
}

func TestStateAtCheckpointByObject(t *testing.T) {
	e := newEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "q"}}, nil)
	var hist []struct {
		Next       []string `json:"next"`
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{"limit": 1, "before": map[string]any{"configurable": map[string]any{"checkpoint_id": "ffffffffffffffffffffffffffffffff"}}}, &hist)
	require.Len(t, hist, 1)
	var st struct {
		Next []string `json:"next"`
	}
	e.ok("POST", "/threads/"+tid+"/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": hist[0].Checkpoint.CheckpointID}}, &st)
	require.Equal(t, hist[0].Next, st.Next)
	r := e.do("GET", "/threads/"+tid+"/state/nonexistent", nil)
	require.Equal(t, 404, r.status, "%s", r.body)
}

func TestThreadSearchSortsAndPages(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for range 5 {
		ids = append(ids, e.newThread(nil))
	}
	var list []map[string]any
	r := e.ok("POST", "/threads/search", map[string]any{"sort_by": "created_at", "sort_order": "asc", "limit": 2, "offset": 1}, &list)
	require.Equal(t, []any{ids[1], ids[2]}, []any{list[0]["thread_id"], list[1]["thread_id"]})
	require.Equal(t, "5", r.header.Get("X-Pagination-Total"))
	require.Equal(t, "3", r.header.Get("X-Pagination-Next"))
	e.ok("POST", "/threads/search", map[string]any{"limit": 10}, &list)
	require.Equal(t, ids[4], list[0]["thread_id"], "newest first by default")
	r = e.ok("POST", "/threads/search", map[string]any{"limit": 10, "offset": 3}, &list)
	require.Len(t, list, 2)
	require.Empty(t, r.header.Get("X-Pagination-Next"))
	require.Equal(t, 422, e.do("POST", "/threads/search", map[string]any{"sort_by": "values"}).status)
}

func TestCORSAnswersPreflightsOfAllowedOrigins(t *testing.T) {
	s, err := server.New(server.WithAuthToken(token), server.WithCORS("https://studio.example"), server.Graph("agent", agentGraph(t, checkpoint.NewMemory())))
	require.NoError(t, err)
	serve := func(method, origin string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/threads", nil)
		req.Header.Set("Origin", origin)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	rec := serve("OPTIONS", "https://studio.example", map[string]string{"Access-Control-Request-Method": "POST"})
	require.Equal(t, 204, rec.Code, "a preflight needs no token")
	require.Equal(t, "https://studio.example", rec.Header().Get("Access-Control-Allow-Origin"))
	require.Contains(t, rec.Header().Get("Access-Control-Allow-Headers"), "X-Api-Key")

	rec = serve("OPTIONS", "https://evil.example", map[string]string{"Access-Control-Request-Method": "POST"})
	require.Equal(t, 401, rec.Code)
	require.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"))

	rec = serve("POST", "https://studio.example", nil)
	require.Equal(t, 401, rec.Code, "requests still need the token")
	require.Contains(t, rec.Header().Get("Access-Control-Expose-Headers"), "Content-Location")
}

func TestAssistantVersionsAndSetLatest(t *testing.T) {
	e := newEnv(t)
	var a map[string]any
	e.ok("POST", "/assistants", map[string]any{"graph_id": "agent", "name": "v1", "metadata": map[string]any{"k": "a"}}, &a)
	id := a["assistant_id"].(string)
	e.ok("PATCH", "/assistants/"+id, map[string]any{"name": "v2", "metadata": map[string]any{"k": "b"}}, nil)
	var versions []map[string]any
	e.ok("POST", "/assistants/"+id+"/versions", map[string]any{}, &versions)
	require.Len(t, versions, 2)
	require.Equal(t, float64(2), versions[0]["version"], "newest first")
	require.Equal(t, "v1", versions[1]["name"])
	e.ok("POST", "/assistants/"+id+"/versions", map[string]any{"metadata": map[string]any{"k": "a"}}, &versions)
	require.Len(t, versions, 1)

	e.ok("POST", "/assistants/"+id+"/latest", map[string]any{"version": 1}, &a)
	require.Equal(t, "v1", a["name"])
	require.Equal(t, map[string]any{"k": "a"}, a["metadata"])
	e.ok("GET", "/assistants/"+id, nil, &a)
	require.Equal(t, float64(1), a["version"])
	require.Equal(t, 404, e.do("POST", "/assistants/"+id+"/latest", map[string]any{"version": 9}).status)
	// A patch after a revert makes a new version, not a duplicate.
	e.ok("PATCH", "/assistants/"+id, map[string]any{"name": "v3"}, &a)
	require.Equal(t, float64(3), a["version"])
}
