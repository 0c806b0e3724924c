package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/server/client"
)

func TestNewRefusesABaseURLThatIsNotHTTP(t *testing.T) {
	for _, u := range []string{"", "localhost:2024", "ftp://h/", "http://"} {
		_, err := client.New(u)
		require.Error(t, err, u)
	}
}

func TestAuthenticationFailureIsAnAPIErrorWithTheStatusAndMessage(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name   string
		opts   []client.Option
		status int
	}{
		{"api key", []client.Option{client.WithAPIKey(token)}, 0},
		{"bearer token", []client.Option{client.WithBearerToken(token)}, 0},
		{"header", []client.Option{client.WithHeader("Authorization", "Bearer "+token)}, 0},
		{"wrong key", []client.Option{client.WithAPIKey("nope")}, http.StatusForbidden},
		{"no key", nil, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(e.srv.URL, tc.opts...)
			require.NoError(t, err)
			_, err = c.Assistants.Get(t.Context(), "agent")
			if tc.status == 0 {
				require.NoError(t, err)
				return
			}
			var ae *client.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.status, ae.Status)
			require.NotEmpty(t, ae.Message)
		})
	}
}

func TestAssistantsGetSearchGraphAndSchemas(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	a, err := e.c.Assistants.Get(ctx, "agent")
	require.NoError(t, err)
	require.Equal(t, "fe096781-5601-53d2-b2f6-0d3403f7e9ca", a.AssistantID, "the id LangGraph servers give the graph's assistant")
	require.Equal(t, "agent", a.GraphID)

	found, err := e.c.Assistants.Search(ctx, client.AssistantSearch{GraphID: "agent"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, a.AssistantID, found[0].AssistantID)

	d, err := e.c.Assistants.Graph(ctx, a.AssistantID, 0)
	require.NoError(t, err)
	var ids []string
	for _, n := range d.Nodes {
		ids = append(ids, n.ID)
	}
	require.Subset(t, ids, []string{"plan", "ask", "finish"})
	require.NotEmpty(t, d.Edges)

	sc, err := e.c.Assistants.Schemas(ctx, "agent")
	require.NoError(t, err)
	require.Equal(t, "agent", sc.GraphID)
	require.Contains(t, string(sc.StateSchema), `"topic"`)

	_, err = e.c.Assistants.Get(ctx, "missing")
	require.True(t, client.IsNotFound(err), "%v", err)
}

func TestThreadsCreateGetSearchUpdateCopyDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{Metadata: map[string]any{"user": "ann"}, GraphID: "agent"})
	require.NoError(t, err)
	require.Equal(t, client.ThreadStatusIdle, th.Status)
	require.Equal(t, "agent", th.Metadata["graph_id"])

	_, err = e.c.Threads.Create(ctx, client.ThreadCreate{ThreadID: th.ThreadID})
	var ae *client.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusConflict, ae.Status, "a thread id taken")
	again, err := e.c.Threads.Create(ctx, client.ThreadCreate{ThreadID: th.ThreadID, IfExists: "do_nothing"})
	require.NoError(t, err)
	require.Equal(t, th.ThreadID, again.ThreadID)

	_, err = e.c.Runs.Wait(ctx, th.ThreadID, "agent", client.RunRequest{Input: map[string]any{"topic": "cats"}})
	require.NoError(t, err)
	got, err := e.c.Threads.Get(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, client.ThreadStatusInterrupted, got.Status)
	require.JSONEq(t, `{"topic":"cats","log":["plan:cats"],"answer":null,"count":1}`, string(got.Values))

	found, err := e.c.Threads.Search(ctx, client.ThreadSearch{Metadata: map[string]any{"user": "ann"}})
	require.NoError(t, err)
	require.Len(t, found, 1)
	found, err = e.c.Threads.Search(ctx, client.ThreadSearch{Status: client.ThreadStatusIdle, Metadata: map[string]any{"user": "ann"}})
	require.NoError(t, err)
	require.Empty(t, found)

	up, err := e.c.Threads.Update(ctx, th.ThreadID, map[string]any{"tier": "gold"})
	require.NoError(t, err)
	require.Equal(t, "gold", up.Metadata["tier"])
	require.Equal(t, "ann", up.Metadata["user"], "metadata is merged")

	cp, err := e.c.Threads.Copy(ctx, th.ThreadID)
	require.NoError(t, err)
	require.NotEqual(t, th.ThreadID, cp.ThreadID)
	st, err := e.c.Threads.State(ctx, cp.ThreadID, "")
	require.NoError(t, err)
	require.Equal(t, []string{"ask"}, st.Next, "the copy has the state and its pending task")

	require.NoError(t, e.c.Threads.Delete(ctx, th.ThreadID))
	_, err = e.c.Threads.Get(ctx, th.ThreadID)
	require.True(t, client.IsNotFound(err), "%v", err)
}

func TestStreamInterruptStateResumeHistoryAndUpdateState(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)

	parts, err := collect(t, e.c.Runs.Stream(ctx, th.ThreadID, "agent", client.RunRequest{
		Input:      map[string]any{"topic": "cats"},
		StreamMode: []client.StreamMode{client.ModeUpdates, client.ModeCustom},
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"metadata", "custom", "updates", "updates"}, events(parts), "the server's end event closes the stream and is not yielded")
	require.JSONEq(t, `{"progress":"planning cats"}`, string(parts[1].Data))
	require.Equal(t, "0", parts[0].ID)
	for i, p := range parts {
		require.Equal(t, strconv.Itoa(i), p.ID, "event ids count from 0")
	}
	intr := client.Interrupts(parts[3].Data)
	require.Len(t, intr, 1)
	require.JSONEq(t, `{"question":"approve cats?"}`, string(intr[0].Value))

	st, err := e.c.Threads.State(ctx, th.ThreadID, "")
	require.NoError(t, err)
	require.Equal(t, []string{"ask"}, st.Next)
	require.Equal(t, intr[0].ID, st.Interrupts()[0].ID)

	out, err := e.c.Runs.Wait(ctx, th.ThreadID, "agent", client.RunRequest{Command: &client.Command{Resume: "yes"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"topic":"cats","log":["plan:cats","ask","finish"],"answer":"yes","count":1}`, string(out))
	require.Nil(t, client.Interrupts(out))

	hist, err := e.c.Threads.History(ctx, th.ThreadID, client.HistoryRequest{Limit: 2})
	require.NoError(t, err)
	require.Len(t, hist, 2)
	require.Empty(t, hist[0].Next, "newest first: the final state")
	require.Equal(t, []string{"finish"}, hist[1].Next)

	cp, err := e.c.Threads.UpdateState(ctx, th.ThreadID, client.StateUpdate{Values: map[string]any{"log": []string{"edited"}}, AsNode: "finish"})
	require.NoError(t, err)
	require.NotEmpty(t, cp.CheckpointID)
	st, err = e.c.Threads.State(ctx, th.ThreadID, "")
	require.NoError(t, err)
	require.Equal(t, cp.CheckpointID, st.Checkpoint.CheckpointID)
	require.JSONEq(t, `["plan:cats","ask","finish","edited"]`, string(mustField(t, st.Values, "log")))

	old, err := e.c.Threads.State(ctx, th.ThreadID, hist[1].Checkpoint.CheckpointID)
	require.NoError(t, err)
	require.Equal(t, []string{"finish"}, old.Next, "the state at a checkpoint")
}

func mustField(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return m[key]
}

func TestStreamSubgraphsGivesNamespaces(t *testing.T) {
	e := newEnv(t)
	parts, err := collect(t, e.c.Runs.Stream(t.Context(), "", "nested", client.RunRequest{
		Input:           map[string]any{"topic": "t"},
		StreamMode:      []client.StreamMode{client.ModeUpdates},
		StreamSubgraphs: true,
	}))
	require.NoError(t, err)
	require.Len(t, parts, 3)
	require.Equal(t, "updates", parts[1].Mode)
	require.Len(t, parts[1].Namespace, 1)
	require.Regexp(t, `^inner:`, parts[1].Namespace[0])
	require.JSONEq(t, `{"write":{"note":"note:t"}}`, string(parts[1].Data))
	require.Nil(t, parts[2].Namespace)
	require.JSONEq(t, `{"inner":{"log":["inner:note:t"]}}`, string(parts[2].Data))
}

func TestFailedRunIsARunErrorFromWaitAndFromStream(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	_, err := e.c.Runs.Wait(ctx, "", "boom", client.RunRequest{Input: map[string]any{}})
	var re *client.RunError
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Message, "kaboom")

	parts, err := collect(t, e.c.Runs.Stream(ctx, "", "boom", client.RunRequest{Input: map[string]any{}}))
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Message, "kaboom")
	require.Equal(t, "metadata", parts[0].Event)
}

func TestBackgroundRunJoinListGetAndDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	run, err := e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "a"}, StreamResumable: true})
	require.NoError(t, err)
	require.Equal(t, th.ThreadID, run.ThreadID)
	require.Equal(t, "a", <-e.started)
	cur, err := e.c.Runs.Get(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.Equal(t, client.RunStatusRunning, cur.Status)

	e.release <- struct{}{}
	out, err := e.c.Runs.Join(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `["step:a"]`, string(mustField(t, out, "log")))

	runs, err := e.c.Runs.List(ctx, th.ThreadID, client.RunList{Status: client.RunStatusSuccess})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, run.RunID, runs[0].RunID)

	require.NoError(t, e.c.Runs.Delete(ctx, th.ThreadID, run.RunID))
	_, err = e.c.Runs.Get(ctx, th.ThreadID, run.RunID)
	require.True(t, client.IsNotFound(err), "%v", err)
}

func TestJoinStreamResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	all, err := collect(t, e.c.Runs.Stream(ctx, th.ThreadID, "agent", client.RunRequest{
		Input: map[string]any{"topic": "x"}, StreamMode: []client.StreamMode{client.ModeValues, client.ModeUpdates}, StreamResumable: true,
	}))
	require.NoError(t, err)
	runs, err := e.c.Runs.List(ctx, th.ThreadID, client.RunList{})
	require.NoError(t, err)
	require.Len(t, runs, 1)

	cases := []struct {
		last string
		from int
	}{{"-1", 0}, {"1", 2}, {all[len(all)-1].ID, len(all)}}
	for _, tc := range cases {
		t.Run("after "+tc.last, func(t *testing.T) {
			got, err := collect(t, e.c.Runs.JoinStream(ctx, th.ThreadID, runs[0].RunID, client.JoinOptions{LastEventID: tc.last}))
			require.NoError(t, err)
			if tc.from == len(all) {
				require.Empty(t, got)
				return
			}
			require.Equal(t, all[tc.from:], got)
		})
	}
}

func TestCancelAWaitingRunEndsItInterrupted(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	run, err := e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "c"}})
	require.NoError(t, err)
	<-e.started
	require.NoError(t, e.c.Runs.Cancel(ctx, th.ThreadID, run.RunID, client.CancelOptions{Wait: true}))
	got, err := e.c.Runs.Get(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.Equal(t, client.RunStatusInterrupted, got.Status)
}

func TestMultitaskStrategies(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	first, err := e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "1"}})
	require.NoError(t, err)
	<-e.started

	_, err = e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "2"}, MultitaskStrategy: client.MultitaskReject})
	var ae *client.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusConflict, ae.Status, "reject")

	queued, err := e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "3"}, MultitaskStrategy: client.MultitaskEnqueue})
	require.NoError(t, err)
	require.Equal(t, client.RunStatusPending, queued.Status)

	e.release <- struct{}{}
	require.Equal(t, "3", <-e.started, "the queued run starts after the first")
	e.release <- struct{}{}
	out, err := e.c.Runs.Join(ctx, th.ThreadID, queued.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `["step:1","step:3"]`, string(mustField(t, out, "log")))

	// interrupt: the running run is cancelled, the new one runs.
	_, err = e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "4"}})
	require.NoError(t, err)
	<-e.started
	next, err := e.c.Runs.Create(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "5"}, MultitaskStrategy: client.MultitaskInterrupt})
	require.NoError(t, err)
	require.Equal(t, "5", <-e.started)
	e.release <- struct{}{}
	out, err = e.c.Runs.Join(ctx, th.ThreadID, next.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `["step:1","step:3","step:5"]`, string(mustField(t, out, "log")))
	got, err := e.c.Runs.Get(ctx, th.ThreadID, first.RunID)
	require.NoError(t, err)
	require.Equal(t, client.RunStatusSuccess, got.Status)
}

func TestStorePutGetSearchNamespacesDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ns := []string{"users", "u1"}
	require.NoError(t, e.c.Store.Put(ctx, ns, "prefs", map[string]any{"color": "blue"}, 0))
	require.NoError(t, e.c.Store.Put(ctx, []string{"users", "u2"}, "prefs", map[string]any{"color": "red"}, 0))

	it, err := e.c.Store.Get(ctx, ns, "prefs")
	require.NoError(t, err)
	require.Equal(t, ns, it.Namespace)
	require.Equal(t, map[string]any{"color": "blue"}, it.Value)
	missing, err := e.c.Store.Get(ctx, ns, "nope")
	require.NoError(t, err)
	require.Nil(t, missing)

	items, err := e.c.Store.Search(ctx, client.ItemSearch{NamespacePrefix: []string{"users"}, Filter: map[string]any{"color": "red"}})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, []string{"users", "u2"}, items[0].Namespace)

	nss, err := e.c.Store.ListNamespaces(ctx, client.NamespaceList{Prefix: []string{"users"}})
	require.NoError(t, err)
	require.ElementsMatch(t, [][]string{{"users", "u1"}, {"users", "u2"}}, nss)

	require.NoError(t, e.c.Store.Delete(ctx, ns, "prefs"))
	gone, err := e.c.Store.Get(ctx, ns, "prefs")
	require.NoError(t, err)
	require.Nil(t, gone)

	require.Error(t, e.c.Store.Put(ctx, []string{"a.b"}, "k", nil, 0), "a period cannot travel in the namespace query")
}

func TestContextCancelEndsAStream(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	var gotErr error
	n := 0
	for _, err := range e.c.Runs.Stream(ctx, th.ThreadID, "slow", client.RunRequest{Input: map[string]any{"topic": "z"}, OnDisconnect: "cancel"}) {
		if err != nil {
			gotErr = err
			break
		}
		n++
		if n == 1 {
			<-e.started
			cancel()
		}
	}
	require.ErrorIs(t, gotErr, context.Canceled)
	// The server saw the connection close and cancelled the run.
	runs, err := e.c.Runs.List(t.Context(), th.ThreadID, client.RunList{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	out, err := e.c.Runs.Join(t.Context(), th.ThreadID, runs[0].RunID)
	require.NoError(t, err)
	require.NotContains(t, string(out), "step:z")
	got, err := e.c.Runs.Get(t.Context(), th.ThreadID, runs[0].RunID)
	require.NoError(t, err)
	require.Equal(t, client.RunStatusInterrupted, got.Status)
}

func TestResumeAnswersSeveralInterruptsByID(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, client.ThreadCreate{})
	require.NoError(t, err)
	out, err := e.c.Runs.Wait(ctx, th.ThreadID, "pair", client.RunRequest{Input: map[string]any{}})
	require.NoError(t, err)
	pending := client.Interrupts(out)
	require.Len(t, pending, 2)
	answers := map[string]any{}
	for _, in := range pending {
		var q string
		require.NoError(t, json.Unmarshal(in.Value, &q))
		answers[in.ID] = "yes to " + q
	}
	out, err = e.c.Runs.Wait(ctx, th.ThreadID, "pair", client.RunRequest{Command: &client.Command{Resume: answers}})
	require.NoError(t, err)
	require.Nil(t, client.Interrupts(out))
	require.ElementsMatch(t, []any{"left:yes to left?", "right:yes to right?"}, decodeList(t, mustField(t, out, "log")))
}

func decodeList(t *testing.T, b json.RawMessage) []any {
	var v []any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}
