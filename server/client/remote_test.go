package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server/client"
	"github.com/agentgraph/agentgraph/state"
)

// Local is the state of the local graph that calls the remote one.
type Local struct {
	Topic  state.Value[string]  `json:"topic"`
	Answer state.Value[string]  `json:"answer"`
	Log    state.Append[string] `json:"log"`
}

// localGraph: prep → remote (the remote graph as a node) → done.
func localGraph(t *testing.T, rg *client.RemoteGraph) *graph.Graph[Local] {
	b := graph.New[Local]()
	b.AddNode("prep", func(ctx context.Context, s Local) (Local, error) {
		s.Log.Append("prep")
		return s, nil
	})
	b.AddNode("remote", client.Node(rg,
		func(s Local) any { return map[string]any{"topic": s.Topic.Get()} },
		func(s Local, values json.RawMessage) (Local, error) {
			var v struct {
				Answer string   `json:"answer"`
				Log    []string `json:"log"`
			}
			if err := json.Unmarshal(values, &v); err != nil {
				return s, err
			}
			s.Answer.Set(v.Answer)
			s.Log.Append(v.Log...)
			return s, nil
		}))
	b.AddNode("done", func(ctx context.Context, s Local) (Local, error) {
		s.Log.Append("done")
		return s, nil
	})
	b.AddEdge(graph.Start, "prep")
	b.AddEdge("prep", "remote")
	b.AddEdge("remote", "done")
	b.AddEdge("done", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	return g
}

func input(topic string) Local {
	var s Local
	s.Topic.Set(topic)
	return s
}

func TestRemoteGraphAsANodePausesTheLocalRunAndResumesThroughIt(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	g := localGraph(t, client.NewRemoteGraph(e.c, "agent"))
	thread := newUUID(t)

	_, err := g.Invoke(ctx, input("cats"), graph.WithThread(thread))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr, "the remote's interrupt pauses the local run")
	require.Len(t, intr.Interrupts, 1)
	require.Equal(t, "remote", intr.Interrupts[0].Node)
	b, err := json.Marshal(intr.Interrupts[0].Value)
	require.NoError(t, err)
	require.JSONEq(t, `{"question":"approve cats?"}`, string(b), "the local interrupt carries the remote's")

	th, err := e.c.Threads.Get(ctx, thread)
	require.NoError(t, err, "the remote run is on the local run's thread")
	require.Equal(t, client.ThreadStatusInterrupted, th.Status)

	final, err := g.Resume(ctx, graph.Command[Local]{Resume: "yes"}, graph.WithThread(thread))
	require.NoError(t, err)
	require.Equal(t, "yes", final.Answer.Get(), "the remote's answer")
	require.Equal(t, []string{"prep", "plan:cats", "ask", "finish", "done"}, final.Log.Get())

	th, err = e.c.Threads.Get(ctx, thread)
	require.NoError(t, err)
	require.Equal(t, client.ThreadStatusIdle, th.Status)
}

func TestRemoteGraphAsANodeAnswersEachOfSeveralRemoteInterruptsOnce(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	g := localGraph(t, client.NewRemoteGraph(e.c, "twice"))
	thread := newUUID(t)

	_, err := g.Invoke(ctx, input("dogs"), graph.WithThread(thread))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	b, _ := json.Marshal(intr.Interrupts[0].Value)
	require.JSONEq(t, `{"question":"first about dogs?"}`, string(b))

	_, err = g.Resume(ctx, graph.Command[Local]{Resume: "a"}, graph.WithThread(thread))
	require.ErrorAs(t, err, &intr, "the remote asks its second question")
	b, _ = json.Marshal(intr.Interrupts[0].Value)
	require.JSONEq(t, `{"question":"second about dogs?"}`, string(b))

	final, err := g.Resume(ctx, graph.Command[Local]{Resume: "b"}, graph.WithThread(thread))
	require.NoError(t, err)
	require.Equal(t, []string{"prep", "first:a", "second:b", "done"}, final.Log.Get(), "each answer went to its own question, once")
}

func TestRemoteGraphInvokeInterruptedResumeStateHistoryUpdate(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rg := client.NewRemoteGraph(e.c, "agent")
	thread := newUUID(t)

	values, err := rg.Invoke(ctx, thread, map[string]any{"topic": "owls"})
	var intr *client.Interrupted
	require.ErrorAs(t, err, &intr, "a missing thread is created and the run pauses")
	require.JSONEq(t, `{"question":"approve owls?"}`, string(intr.Interrupts[0].Value))
	require.Equal(t, intr.Interrupts, client.Interrupts(values))

	st, err := rg.GetState(ctx, thread)
	require.NoError(t, err)
	require.Equal(t, []string{"ask"}, st.Next)

	values, err = rg.Resume(ctx, thread, "ok")
	require.NoError(t, err)
	require.JSONEq(t, `{"topic":"owls","log":["plan:owls","ask","finish"],"answer":"ok","count":1}`, string(values))

	hist, err := rg.History(ctx, thread, client.HistoryRequest{})
	require.NoError(t, err)
	require.Greater(t, len(hist), 3)

	_, err = rg.UpdateState(ctx, thread, map[string]any{"answer": "changed"}, "finish")
	require.NoError(t, err)
	st, err = rg.GetState(ctx, thread)
	require.NoError(t, err)
	require.JSONEq(t, `"changed"`, string(mustField(t, st.Values, "answer")))

	var modes []string
	for p, err := range rg.Stream(ctx, "", map[string]any{"topic": "x"}, client.ModeUpdates) {
		require.NoError(t, err)
		modes = append(modes, p.Mode)
	}
	require.Equal(t, []string{"metadata", "updates", "updates"}, modes)
}

func TestRemoteGraphNodeWithoutALocalThreadRefusesARemoteInterrupt(t *testing.T) {
	e := newEnv(t)
	b := graph.New[Local]()
	b.AddNode("remote", client.Node(client.NewRemoteGraph(e.c, "agent"),
		func(s Local) any { return map[string]any{"topic": s.Topic.Get()} },
		func(s Local, _ json.RawMessage) (Local, error) { return s, nil }))
	b.AddEdge(graph.Start, "remote")
	b.AddEdge("remote", graph.End)
	g, err := b.Compile()
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("x"))
	var intr *client.Interrupted
	require.ErrorAs(t, err, &intr)
	require.ErrorContains(t, err, "without a thread")
}

func TestRemoteGraphNodeStartsAnewOnAThreadLeftInterruptedByAnotherRun(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	thread := newUUID(t)
	rg := client.NewRemoteGraph(e.c, "agent")
	_, err := rg.Invoke(ctx, thread, map[string]any{"topic": "old"})
	var remote *client.Interrupted
	require.ErrorAs(t, err, &remote, "someone else's run left the remote thread paused")

	g := localGraph(t, rg)
	_, err = g.Invoke(ctx, input("new"), graph.WithThread(thread))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	b, _ := json.Marshal(intr.Interrupts[0].Value)
	require.JSONEq(t, `{"question":"approve new?"}`, string(b), "the node ran the remote graph on its own input, not answering the old question")

	final, err := g.Resume(ctx, graph.Command[Local]{Resume: "fine"}, graph.WithThread(thread))
	require.NoError(t, err)
	require.Equal(t, "fine", final.Answer.Get())
}

func TestRemoteGraphNodePassesSeveralRemoteInterruptsAndTheirAnswersByID(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	g := localGraph(t, client.NewRemoteGraph(e.c, "pair"))
	thread := newUUID(t)
	_, err := g.Invoke(ctx, input("p"), graph.WithThread(thread))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	pending, ok := intr.Interrupts[0].Value.([]client.Interrupt)
	require.True(t, ok, "the local interrupt carries the remote's list: %T", intr.Interrupts[0].Value)
	require.Len(t, pending, 2)
	answers := map[string]any{}
	for _, in := range pending {
		answers[in.ID] = "ok " + string(in.Value)
	}
	final, err := g.Resume(ctx, graph.Command[Local]{Resume: answers}, graph.WithThread(thread))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"prep", `left:ok "left?"`, `right:ok "right?"`, "done"}, final.Log.Get())
}

func TestRemoteGraphNodeRunsOnTheMappedThread(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	remote := newUUID(t)
	mapped := map[string]string{"order-42": remote}
	g := localGraph(t, client.NewRemoteGraph(e.c, "agent", client.WithThreadMapping(func(local string) string { return mapped[local] })))
	_, err := g.Invoke(ctx, input("maps"), graph.WithThread("order-42"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	th, err := e.c.Threads.Get(ctx, remote)
	require.NoError(t, err, "the remote run is on the mapped thread")
	require.Equal(t, client.ThreadStatusInterrupted, th.Status)
	final, err := g.Resume(ctx, graph.Command[Local]{Resume: "y"}, graph.WithThread("order-42"))
	require.NoError(t, err)
	require.Equal(t, "y", final.Answer.Get())
}
