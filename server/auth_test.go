package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/store"
)

// The tokens of the users of the auth tests.
const (
	tokenAlice = "alice-s3cret"
	tokenBob   = "bob-s3cret"
)

// authEnv is a test server whose requests are authenticated as alice or
// bob by their tokens, on a Backend (SQLite, or the one
// AGENTGRAPH_TEST_SERVER_BACKEND names).
type authEnv struct {
	t   *testing.T
	srv *httptest.Server
}

func newAuthEnv(t *testing.T, opts ...server.Option) *authEnv {
	t.Helper()
	saver, shared := envSaver(t) // without AGENTGRAPH_TEST_SERVER_BACKEND, the server's own MemoryBackend
	authn, err := server.TokenAuthenticator(map[string]server.Identity{
		tokenAlice: {ID: "alice", DisplayName: "Alice"},
		tokenBob:   {ID: "bob", DisplayName: "Bob"},
	})
	require.NoError(t, err)
	all := append(append([]server.Option{
		server.Graph("agent", agentGraph(t, saver)),
		server.WithCheckpointer(saver),
		server.WithStore(store.NewMemory()),
		server.WithAuth(authn),
	}, shared...), opts...)
	s, err := server.New(all...)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		require.NoError(t, s.Shutdown(context.Background()))
		hs.CloseClientConnections()
		hs.Close()
	})
	return &authEnv{t: t, srv: hs}
}

// as sends a request with tok ("" for none); body is JSON-encoded.
func (e *authEnv) as(tok, method, path string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// okAs asserts a 2xx of a request with tok and decodes it into v.
func (e *authEnv) okAs(tok, method, path string, body, v any) {
	e.t.Helper()
	r := e.as(tok, method, path, body)
	require.True(e.t, r.status >= 200 && r.status < 300, "%s %s: %d %s", method, path, r.status, r.body)
	if v != nil {
		r.decode(e.t, v)
	}
}

// thread creates a thread as tok and returns it.
func (e *authEnv) thread(tok string, metadata map[string]any) server.ThreadRecord {
	e.t.Helper()
	var th server.ThreadRecord
	e.okAs(tok, "POST", "/threads", map[string]any{"metadata": metadata}, &th)
	return th
}

func TestOkIsPublicAndTheRestNeedsCredentials(t *testing.T) {
	e := newAuthEnv(t)
	tests := []struct {
		name   string
		tok    string
		method string
		path   string
		status int
	}{
		{"ok without credentials", "", "GET", "/ok", 200},
		{"info without credentials", "", "GET", "/info", 401},
		{"threads search without credentials", "", "POST", "/threads/search", 401},
		{"ok path with a suffix without credentials", "", "GET", "/ok/", 401},
		{"ok by POST without credentials", "", "POST", "/ok", 401},
		{"wrong token", "nope", "POST", "/threads/search", 403},
		{"alice", tokenAlice, "POST", "/threads/search", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.as(tc.tok, tc.method, tc.path, nil)
			require.Equal(t, tc.status, r.status, "%s", r.body)
		})
	}
}

func TestAuthenticatorErrorsAnswer401Or403(t *testing.T) {
	tests := []struct {
		name   string
		auth   server.AuthenticatorFunc
		status int
		detail string
	}{
		{"an error is 401", func(*http.Request) (server.Identity, error) { return server.Identity{}, errors.New("expired session") }, 401, "expired session"},
		{"ErrForbidden is 403", func(*http.Request) (server.Identity, error) {
			return server.Identity{}, fmt.Errorf("account locked: %w", server.ErrForbidden)
		}, 403, "account locked"},
		{"an identity without an ID is 401", func(*http.Request) (server.Identity, error) { return server.Identity{}, nil }, 401, "no identity"},
		{"an identity is served", func(*http.Request) (server.Identity, error) { return server.Identity{ID: "u"}, nil }, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := server.New(server.Graph("agent", agentGraph(t, checkpoint.NewMemory())), server.WithAuth(tc.auth))
			require.NoError(t, err)
			hs := httptest.NewServer(s)
			t.Cleanup(hs.Close)
			e := &authEnv{t: t, srv: hs}
			r := e.as("", "POST", "/assistants/search", map[string]any{})
			require.Equal(t, tc.status, r.status, "%s", r.body)
			require.Contains(t, string(r.body), tc.detail)
		})
	}
}

func TestAuthOptionsRefuseBadCombinations(t *testing.T) {
	authn, err := server.TokenAuthenticator(map[string]server.Identity{"t": {ID: "u"}})
	require.NoError(t, err)
	tests := []struct {
		name string
		opts []server.Option
		want string
	}{
		{"nil authenticator", []server.Option{server.WithAuth(nil)}, "nil authenticator"},
		{"two authenticators", []server.Option{server.WithAuth(authn), server.WithAuthToken("x")}, "more than once"},
		{"authenticator and loopback", []server.Option{server.WithAuth(authn), server.WithoutAuthLoopbackOnly()}, "exclude each other"},
		{"nil authorizer", []server.Option{server.WithAuth(authn), server.WithAuthorizer(nil)}, "nil authorizer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.New(tc.opts...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestTokenAuthenticatorRefusesEmptyTokensAndIDs(t *testing.T) {
	for _, tokens := range []map[string]server.Identity{nil, {"": {ID: "u"}}, {"t": {}}} {
		_, err := server.TokenAuthenticator(tokens)
		require.Error(t, err, "%v", tokens)
	}
}

// ownerEnv is an authEnv under server.OwnerPolicy where alice has a
// thread with a paused run, an assistant and a store item.
type ownerEnv struct {
	*authEnv
	tid       string // alice's thread
	rid       string // alice's run, on tid
	assistant string // alice's
}

func newOwnerEnv(t *testing.T) ownerEnv {
	e := newAuthEnv(t, server.WithAuthorizer(server.OwnerPolicy()))
	th := e.thread(tokenAlice, map[string]any{"topic": "secret"})
	var run server.RunRecord
	e.okAs(tokenAlice, "POST", "/threads/"+th.ID+"/runs", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "cats"}}, &run)
	e.okAs(tokenAlice, "GET", "/threads/"+th.ID+"/runs/"+run.ID+"/join", nil, nil)
	var a struct {
		ID string `json:"assistant_id"`
	}
	e.okAs(tokenAlice, "POST", "/assistants", map[string]any{"graph_id": "agent", "name": "alice's"}, &a)
	require.Equal(t, 204, e.as(tokenAlice, "PUT", "/store/items", map[string]any{"namespace": []string{"alice", "notes"}, "key": "k", "value": map[string]any{"v": 1}}).status)
	return ownerEnv{authEnv: e, tid: th.ID, rid: run.ID, assistant: a.ID}
}

func TestOwnerPolicyTagsWhatAUserCreates(t *testing.T) {
	e := newOwnerEnv(t)
	var th server.ThreadRecord
	e.okAs(tokenAlice, "GET", "/threads/"+e.tid, nil, &th)
	require.Equal(t, "alice", th.Metadata["owner"])
	require.Equal(t, "secret", th.Metadata["topic"])
	var run server.RunRecord
	e.okAs(tokenAlice, "GET", "/runs/"+e.rid, nil, &run)
	require.Equal(t, "alice", run.Metadata["owner"])
	var a map[string]any
	e.okAs(tokenAlice, "GET", "/assistants/"+e.assistant, nil, &a)
	require.Equal(t, "alice", a["metadata"].(map[string]any)["owner"])
}

// B's requests on what A owns answer as if it did not exist.
func TestOwnerPolicyHidesAnotherUsersThread(t *testing.T) {
	e := newOwnerEnv(t)
	tid, rid := e.tid, e.rid
	tests := []struct {
		name   string
		method string
		path   string
		body   any
	}{
		{"get", "GET", "/threads/" + tid, nil},
		{"state", "GET", "/threads/" + tid + "/state", nil},
		{"state at a checkpoint", "POST", "/threads/" + tid + "/state/checkpoint", map[string]any{"checkpoint": map[string]any{}}},
		{"history", "POST", "/threads/" + tid + "/history", map[string]any{}},
		{"history by GET", "GET", "/threads/" + tid + "/history", nil},
		{"patch", "PATCH", "/threads/" + tid, map[string]any{"metadata": map[string]any{"owner": "bob"}}},
		{"update state", "POST", "/threads/" + tid + "/state", map[string]any{"values": map[string]any{"topic": "dogs"}}},
		{"copy", "POST", "/threads/" + tid + "/copy", nil},
		{"list runs", "GET", "/threads/" + tid + "/runs", nil},
		{"create a run", "POST", "/threads/" + tid + "/runs", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}},
		{"create a run if not exists", "POST", "/threads/" + tid + "/runs/wait", map[string]any{"assistant_id": "agent", "if_not_exists": "create", "input": map[string]any{"topic": "x"}}},
		{"stream a run", "POST", "/threads/" + tid + "/runs/stream", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}}},
		{"get a run", "GET", "/threads/" + tid + "/runs/" + rid, nil},
		{"get a run by its id alone", "GET", "/runs/" + rid, nil},
		{"join a run", "GET", "/threads/" + tid + "/runs/" + rid + "/join", nil},
		{"join a run's stream", "GET", "/threads/" + tid + "/runs/" + rid + "/stream", nil},
		{"cancel a run", "POST", "/threads/" + tid + "/runs/" + rid + "/cancel", nil},
		{"delete a run", "DELETE", "/threads/" + tid + "/runs/" + rid, nil},
		{"delete", "DELETE", "/threads/" + tid, nil}, // last: were it deleted, the others would 404 for that
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.as(tokenBob, tc.method, tc.path, tc.body)
			require.Equal(t, 404, r.status, "%s", r.body)
		})
	}
	// A thread hidden answers as one that does not exist.
	missing := "00000000-0000-4000-8000-000000000000"
	hidden, absent := e.as(tokenBob, "GET", "/threads/"+tid, nil), e.as(tokenBob, "GET", "/threads/"+missing, nil)
	require.Equal(t, absent.status, hidden.status)
	require.Equal(t, strings.ReplaceAll(string(absent.body), missing, tid), string(hidden.body))
	hidden, absent = e.as(tokenBob, "GET", "/threads/"+tid+"/runs/"+rid, nil), e.as(tokenBob, "GET", "/threads/"+missing+"/runs/"+rid, nil)
	require.Equal(t, absent.status, hidden.status)
	require.Equal(t, string(absent.body), string(hidden.body))

	// Nothing B did changed A's thread.
	var th server.ThreadRecord
	e.okAs(tokenAlice, "GET", "/threads/"+tid, nil, &th)
	require.Equal(t, "alice", th.Metadata["owner"])
	var runs []server.RunRecord
	e.okAs(tokenAlice, "GET", "/threads/"+tid+"/runs", nil, &runs)
	require.Len(t, runs, 1)
	var st struct {
		Values map[string]any `json:"values"`
	}
	e.okAs(tokenAlice, "GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, "cats", st.Values["topic"])
}

func TestOwnerPolicySearchFindsOnlyTheUsersThreads(t *testing.T) {
	e := newOwnerEnv(t)
	mine := e.thread(tokenBob, nil)
	tests := []struct {
		name     string
		metadata map[string]any
		want     []string
	}{
		{"no filter", nil, []string{mine.ID}},
		{"owner alice", map[string]any{"owner": "alice"}, nil},
		{"alice's metadata", map[string]any{"topic": "secret"}, nil},
		{"owner bob", map[string]any{"owner": "bob"}, []string{mine.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var found []server.ThreadRecord
			e.okAs(tokenBob, "POST", "/threads/search", map[string]any{"metadata": tc.metadata}, &found)
			var ids []string
			for _, th := range found {
				ids = append(ids, th.ID)
			}
			require.Equal(t, tc.want, ids)
			var n int
			e.okAs(tokenBob, "POST", "/threads/count", map[string]any{"metadata": tc.metadata}, &n)
			require.Equal(t, len(tc.want), n)
		})
	}
	var byID []server.ThreadRecord
	e.okAs(tokenBob, "POST", "/threads/search", map[string]any{"ids": []string{e.tid}}, &byID)
	require.Empty(t, byID, "searching alice's thread by its id")
}

func TestOwnerPolicyOwnerCannotBeGivenAwayOrTaken(t *testing.T) {
	e := newOwnerEnv(t)
	// Bob creates a thread claiming alice owns it, and patches his own
	// thread to alice: both stay his.
	claimed := e.thread(tokenBob, map[string]any{"owner": "alice"})
	require.Equal(t, "bob", claimed.Metadata["owner"])
	given := e.thread(tokenBob, nil)
	var patched server.ThreadRecord
	e.okAs(tokenBob, "PATCH", "/threads/"+given.ID, map[string]any{"metadata": map[string]any{"owner": "alice", "tag": "x"}}, &patched)
	require.Equal(t, "bob", patched.Metadata["owner"])
	require.Equal(t, "x", patched.Metadata["tag"])
	var aliceSees []server.ThreadRecord
	e.okAs(tokenAlice, "POST", "/threads/search", map[string]any{}, &aliceSees)
	require.Len(t, aliceSees, 1)
	require.Equal(t, e.tid, aliceSees[0].ID)

	// Creating a thread with alice's id returns nothing of hers.
	for _, ifExists := range []string{"", "do_nothing"} {
		r := e.as(tokenBob, "POST", "/threads", map[string]any{"thread_id": e.tid, "if_exists": ifExists})
		require.Equal(t, 409, r.status, "if_exists %q: %s", ifExists, r.body)
		require.NotContains(t, string(r.body), "secret")
	}
}

func TestOwnerPolicyGivesTheCopyToItsMaker(t *testing.T) {
	e := newOwnerEnv(t)
	var cp server.ThreadRecord
	e.okAs(tokenAlice, "POST", "/threads/"+e.tid+"/copy", nil, &cp)
	require.Equal(t, "alice", cp.Metadata["owner"])
	require.Equal(t, 404, e.as(tokenBob, "GET", "/threads/"+cp.ID, nil).status)
}

func TestOwnerPolicyKeepsStatelessRunsToTheirUser(t *testing.T) {
	e := newOwnerEnv(t)
	var run server.RunRecord
	e.okAs(tokenBob, "POST", "/runs", map[string]any{"assistant_id": "agent", "input": map[string]any{"topic": "x"}, "on_completion": "keep"}, &run)
	e.okAs(tokenBob, "GET", "/runs/"+run.ID+"/join", nil, nil)
	require.Equal(t, 404, e.as(tokenAlice, "GET", "/runs/"+run.ID, nil).status)
	require.Equal(t, 404, e.as(tokenAlice, "GET", "/threads/"+run.ThreadID, nil).status)
	var th server.ThreadRecord
	e.okAs(tokenBob, "GET", "/threads/"+run.ThreadID, nil, &th)
	require.Equal(t, "bob", th.Metadata["owner"])
}

func TestOwnerPolicyHidesAnotherUsersAssistant(t *testing.T) {
	e := newOwnerEnv(t)
	id := e.assistant
	tests := []struct {
		name   string
		method string
		path   string
		body   any
	}{
		{"get", "GET", "/assistants/" + id, nil},
		{"graph", "GET", "/assistants/" + id + "/graph", nil},
		{"schemas", "GET", "/assistants/" + id + "/schemas", nil},
		{"patch", "PATCH", "/assistants/" + id, map[string]any{"name": "bob's now"}},
		{"versions", "POST", "/assistants/" + id + "/versions", map[string]any{}},
		{"set latest", "POST", "/assistants/" + id + "/latest", map[string]any{"version": 1}},
		{"run it", "POST", "/runs/wait", map[string]any{"assistant_id": id, "input": map[string]any{"topic": "x"}}},
		{"delete", "DELETE", "/assistants/" + id, nil}, // last
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.as(tokenBob, tc.method, tc.path, tc.body)
			require.Equal(t, 404, r.status, "%s", r.body)
		})
	}
	var found []map[string]any
	e.okAs(tokenBob, "POST", "/assistants/search", map[string]any{}, &found)
	require.Len(t, found, 1, "bob finds the graph's own assistant only")
	require.Equal(t, "agent", found[0]["graph_id"])
	require.Equal(t, "system", found[0]["metadata"].(map[string]any)["created_by"])
	var n int
	e.okAs(tokenAlice, "POST", "/assistants/count", map[string]any{}, &n)
	require.Equal(t, 2, n, "alice counts hers and the graph's own")
	e.okAs(tokenBob, "GET", "/assistants/agent", nil, nil)
}

func TestOwnerPolicyConfinesTheStoreToTheUsersNamespace(t *testing.T) {
	e := newOwnerEnv(t)
	require.Equal(t, 204, e.as(tokenBob, "PUT", "/store/items", map[string]any{"namespace": []string{"bob", "notes"}, "key": "k", "value": map[string]any{"v": 2}}).status)
	tests := []struct {
		name   string
		method string
		path   string
		body   any
	}{
		{"put into alice's", "PUT", "/store/items", map[string]any{"namespace": []string{"alice", "notes"}, "key": "k", "value": map[string]any{"v": 3}}},
		{"put outside any user's", "PUT", "/store/items", map[string]any{"namespace": []string{"shared"}, "key": "k", "value": map[string]any{"v": 3}}},
		{"get alice's", "GET", "/store/items?namespace=alice.notes&key=k", nil},
		{"delete alice's", "DELETE", "/store/items", map[string]any{"namespace": []string{"alice", "notes"}, "key": "k"}},
		{"search alice's", "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"alice"}}},
		{"list alice's namespaces", "POST", "/store/namespaces", map[string]any{"prefix": []string{"alice"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.as(tokenBob, tc.method, tc.path, tc.body)
			require.Equal(t, 403, r.status, "%s", r.body)
		})
	}
	var items struct {
		Items []struct {
			Namespace []string       `json:"namespace"`
			Value     map[string]any `json:"value"`
		} `json:"items"`
	}
	e.okAs(tokenBob, "POST", "/store/items/search", map[string]any{}, &items)
	require.Len(t, items.Items, 1)
	require.Equal(t, []string{"bob", "notes"}, items.Items[0].Namespace)
	var ns struct {
		Namespaces [][]string `json:"namespaces"`
	}
	e.okAs(tokenBob, "POST", "/store/namespaces", map[string]any{}, &ns)
	require.Equal(t, [][]string{{"bob", "notes"}}, ns.Namespaces)
	var it map[string]any
	e.okAs(tokenAlice, "GET", "/store/items?namespace=alice.notes&key=k", nil, &it)
	require.Equal(t, map[string]any{"v": float64(1)}, it["value"], "bob's refused put left alice's item as it was")
}

func TestAuthorizerRefusalAnswers403(t *testing.T) {
	// Only identities with the "delete" permission delete; everyone
	// else does everything else.
	authz := server.AuthorizerFunc(func(_ context.Context, req *server.AuthRequest) (map[string]any, error) {
		if req.Action == server.ActionDelete && !strings.Contains(strings.Join(req.Identity.Permissions, ","), "delete") {
			return nil, errors.New("deleting needs the delete permission")
		}
		return nil, nil
	})
	e := newAuthEnv(t, server.WithAuthorizer(authz))
	th := e.thread(tokenAlice, nil)
	r := e.as(tokenAlice, "DELETE", "/threads/"+th.ID, nil)
	require.Equal(t, 403, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "needs the delete permission")
	e.okAs(tokenBob, "GET", "/threads/"+th.ID, nil, nil) // no filter: shared
}

// The official JS client, as two users and as one without credentials.
func TestOfficialJSClientSeesOnlyTheUsersThreads(t *testing.T) {
	node, entry := officialClient(t)
	e := newAuthEnv(t, server.WithAuthorizer(server.OwnerPolicy()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/auth.mjs")
	cmd.Env = append(os.Environ(), "API_URL="+e.srv.URL, "TOKEN_A="+tokenAlice, "TOKEN_B="+tokenBob, "SDK_ENTRY="+entry,
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "auth: ok")
}

// Crons are their maker's, as threads are; the runs a cron makes, and
// the threads it makes for them, are its maker's too.
func TestOwnerPolicyKeepsCronsToTheirUser(t *testing.T) {
	clk := newClock()
	e := newAuthEnv(t, server.WithAuthorizer(server.OwnerPolicy()), server.WithClock(clk.now))
	th := e.thread(tokenAlice, nil)
	var onThread, alone cronJSON
	e.okAs(tokenAlice, "POST", "/threads/"+th.ID+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
		"input": map[string]any{"topic": "cron"}, "multitask_strategy": "enqueue"}, &onThread)
	e.okAs(tokenAlice, "POST", "/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *",
		"on_run_completed": "keep", "input": map[string]any{"topic": "alone"}}, &alone)
	require.Equal(t, "alice", onThread.Metadata["owner"])

	var found []cronJSON
	e.okAs(tokenBob, "POST", "/runs/crons/search", map[string]any{}, &found)
	require.Empty(t, found, "bob finds none of alice's crons")
	e.okAs(tokenBob, "POST", "/runs/crons/search", map[string]any{"metadata": map[string]any{"owner": "alice"}}, &found)
	require.Empty(t, found, "not even asking for alice's")
	var n int
	e.okAs(tokenBob, "POST", "/runs/crons/count", map[string]any{}, &n)
	require.Zero(t, n)
	e.okAs(tokenAlice, "POST", "/runs/crons/search", map[string]any{}, &found)
	require.Len(t, found, 2)

	missing := "00000000-0000-4000-8000-000000000000"
	for _, method := range []string{"PATCH", "DELETE"} {
		body := map[string]any{"schedule": "0 * * * *"}
		hidden, absent := e.as(tokenBob, method, "/runs/crons/"+onThread.CronID, body), e.as(tokenBob, method, "/runs/crons/"+missing, body)
		require.Equal(t, 404, hidden.status, "%s: %s", method, hidden.body)
		require.Equal(t, strings.ReplaceAll(string(absent.body), missing, onThread.CronID), string(hidden.body), "%s: hidden as absent", method)
	}
	r := e.as(tokenBob, "POST", "/threads/"+th.ID+"/runs/crons", map[string]any{"assistant_id": "agent", "schedule": "* * * * *"})
	require.Equal(t, 404, r.status, "bob cannot put a cron on alice's thread: %s", r.body)
	e.okAs(tokenAlice, "POST", "/runs/crons/search", map[string]any{}, &found)
	require.Len(t, found, 2, "nothing bob did changed alice's crons")
	for _, c := range found {
		require.Equal(t, "* * * * *", c.Schedule)
	}

	clk.set(*onThread.NextRunDate)
	var runs []server.RunRecord
	waitFor(t, "the cron's run on alice's thread ends", func() bool {
		e.okAs(tokenAlice, "GET", "/threads/"+th.ID+"/runs", nil, &runs)
		return len(runs) == 1 && runs[0].Status == "success"
	})
	require.Equal(t, "alice", runs[0].Metadata["owner"], "the cron's run is alice's")
	var threads []server.ThreadRecord
	waitFor(t, "the threadless cron's run made a thread of alice's", func() bool {
		e.okAs(tokenAlice, "POST", "/threads/search", map[string]any{}, &threads)
		return len(threads) == 2
	})
	for _, t2 := range threads {
		require.Equal(t, "alice", t2.Metadata["owner"])
	}
	e.okAs(tokenBob, "POST", "/threads/search", map[string]any{}, &threads)
	require.Empty(t, threads, "bob sees none of them")
}

// sneakyBackend creates alice's thread under id, through the Backend
// itself, right after the first look at that thread or right before its
// first creation: the moment between a request's check that the thread
// does not exist and its run's creation.
type sneakyBackend struct {
	server.Backend
	id   string
	once *sync.Once
}

func (b sneakyBackend) sneak(ctx context.Context, id string) {
	if id != b.id {
		return
	}
	b.once.Do(func() {
		now := time.Now()
		_, err := b.Backend.CreateThread(ctx, server.ThreadRecord{ID: id, CreatedAt: now, UpdatedAt: now,
			Metadata: map[string]any{"owner": "alice"}, Status: "idle", Config: map[string]any{},
			Values: json.RawMessage("null"), Interrupts: json.RawMessage("{}")}, "")
		if err != nil {
			panic(err)
		}
	})
}

func (b sneakyBackend) Thread(ctx context.Context, id string) (server.ThreadRecord, error) {
	t, err := b.Backend.Thread(ctx, id)
	b.sneak(ctx, id) // after the look: what it saw is out of date
	return t, err
}

func (b sneakyBackend) CreateThread(ctx context.Context, t server.ThreadRecord, ifExists string) (server.ThreadRecord, error) {
	b.sneak(ctx, t.ID)
	return b.Backend.CreateThread(ctx, t, ifExists)
}

// A run asked for with if_not_exists "create" on a thread id that another
// user creates meanwhile is refused as on any thread of theirs; it does
// not land on their thread.
func TestOwnerPolicyRunOnAThreadCreatedMeanwhileIsRefused(t *testing.T) {
	if onBackend() {
		t.Skip("wraps a MemoryBackend of its own")
	}
	id := "00000000-0000-4000-8000-0000000000aa"
	b := sneakyBackend{Backend: server.NewMemoryBackend(), id: id, once: new(sync.Once)}
	e := newAuthEnv(t, server.WithAuthorizer(server.OwnerPolicy()), server.WithBackend(b))
	r := e.as(tokenBob, "POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "agent", "if_not_exists": "create",
		"input": map[string]any{"topic": "bob's"}})
	require.Equal(t, 404, r.status, "%s", r.body)
	var runs []server.RunRecord
	e.okAs(tokenAlice, "GET", "/threads/"+id+"/runs", nil, &runs)
	require.Empty(t, runs, "bob's run is not on alice's thread")
	var th server.ThreadRecord
	e.okAs(tokenAlice, "GET", "/threads/"+id, nil, &th)
	require.Equal(t, "alice", th.Metadata["owner"])
}
