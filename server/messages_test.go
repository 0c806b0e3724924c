package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/state"
)

// ChatState has a messages field without a json tag, as most Go states
// have, and a single message.
type ChatState struct {
	Messages state.Messages
	Note     state.Value[state.Message] `json:"note"`
}

// chatGraph: reply streams "Hello" as message r1, then appends it with a
// tool call and sets the note.
func chatGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[ChatState] {
	b := graph.New[ChatState]()
	b.AddNode("reply", func(ctx context.Context, s ChatState) (ChatState, error) {
		w := graph.MessageWriter(ctx)
		w(graph.MessageChunk{MessageID: "r1", Text: "Hel"})
		w(graph.MessageChunk{MessageID: "r1", Text: "lo"})
		w(graph.MessageChunk{MessageID: "r1", Done: true})
		var out ChatState
		out.Messages.Append(state.AI("Hello", state.ToolCall("c1", "add", `{"a":1}`)).WithID("r1"))
		out.Note.Set(state.System("noted").WithID("n1"))
		return out, nil
	})
	b.AddEdge(graph.Start, "reply")
	b.AddEdge("reply", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// askGraph pauses with a message as the interrupt's value.
func askGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[ChatState] {
	b := graph.New[ChatState]()
	b.AddNode("ask", func(ctx context.Context, s ChatState) (ChatState, error) {
		_, err := graph.Interrupt(ctx, state.AI("sure?").WithID("q1"))
		return ChatState{}, err
	})
	b.AddEdge(graph.Start, "ask")
	b.AddEdge("ask", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// TwinState has two fields whose names differ only in case.
type TwinState struct {
	Name state.Value[string]
	NAME state.Value[string]
}

func twinGraph(t *testing.T, saver checkpoint.Saver) *graph.Graph[TwinState] {
	b := graph.New[TwinState]()
	b.AddNode("noop", func(ctx context.Context, s TwinState) (TwinState, error) { return TwinState{}, nil })
	b.AddEdge(graph.Start, "noop")
	b.AddEdge("noop", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func newChatEnv(t *testing.T) *env {
	t.Helper()
	saver := checkpoint.NewMemory()
	return serve(t,
		server.Graph("chat", chatGraph(t, saver)),
		server.Graph("ask", askGraph(t, saver)),
		server.Graph("twins", twinGraph(t, saver)),
		server.WithCheckpointer(saver),
	)
}

// human is a human message as LangGraph clients send it.
func human(text string) map[string]any { return map[string]any{"type": "human", "content": text} }

// messageIDs returns the ids of a list of messages shown by the server.
func messageIDs(t *testing.T, msgs any) []string {
	t.Helper()
	list, ok := msgs.([]any)
	require.True(t, ok, "a list of messages: %v", msgs)
	var ids []string
	for _, m := range list {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return ids
}

// wantAI is the AI message of the chat graph as LangChain serializes it.
const wantAI = `{"content":"Hello","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"r1",
	"tool_calls":[{"id":"c1","name":"add","args":{"a":1},"type":"tool_call"}],"invalid_tool_calls":[]}`

func TestRunResultShowsMessagesAsLangChainDicts(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("hi")}}}, &out)
	msgs := out["Messages"].([]any)
	require.Len(t, msgs, 2)
	in := msgs[0].(map[string]any)
	require.Equal(t, map[string]any{"content": "hi", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
		"type": "human", "id": in["id"]}, in)
	require.Equal(t, jsonOf(t, []byte(wantAI)), msgs[1])
	require.Equal(t, jsonOf(t, []byte(`{"content":"noted","additional_kwargs":{},"response_metadata":{},"type":"system","id":"n1"}`)), out["note"])
}

func TestThreadStateAndHistoryShowMessagesAsLangChainDicts(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("hi")}}}, nil)
	var st struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, jsonOf(t, []byte(wantAI)), st.Values["Messages"].([]any)[1])
	var hist []struct {
		Values map[string]any `json:"values"`
	}
	e.ok("POST", "/threads/"+tid+"/history", map[string]any{"limit": 1}, &hist)
	require.Len(t, hist, 1)
	require.Equal(t, st.Values, hist[0].Values)
	var th struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid, nil, &th)
	require.Equal(t, st.Values, th.Values)
}

func TestStreamShowsMessagesAsLangChainDicts(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	r := e.ok("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("hi")}}, "stream_mode": []string{"values", "updates"}}, nil)
	var values, updates []json.RawMessage
	for _, ev := range parseSSE(t, r.body) {
		switch ev.Name {
		case "values":
			values = append(values, ev.Data)
		case "updates":
			updates = append(updates, ev.Data)
		}
	}
	require.Len(t, values, 2, "the input, then after reply")
	require.Equal(t, "human", jsonOf(t, values[0]).(map[string]any)["Messages"].([]any)[0].(map[string]any)["type"])
	require.Equal(t, jsonOf(t, []byte(wantAI)), jsonOf(t, values[1]).(map[string]any)["Messages"].([]any)[1])
	require.Len(t, updates, 1)
	require.Equal(t, jsonOf(t, []byte(`[`+wantAI+`]`)), jsonOf(t, updates[0]).(map[string]any)["reply"].(map[string]any)["Messages"])
}

func TestInputMessagesWithoutIDsGetDistinctIDs(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("one"), human("two"), map[string]any{"role": "user", "content": "three"}}}}, &out)
	ids := messageIDs(t, out["Messages"])
	require.Len(t, ids, 4, "three inputs and the reply")
	for _, id := range ids[:3] {
		require.Len(t, id, 36, "a UUID")
	}
	require.NotEqual(t, ids[0], ids[1])
	require.NotEqual(t, ids[1], ids[2])
}

func TestStateRoundTripsThroughGetAndPost(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("hi")}}}, nil)
	var before struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &before)
	e.ok("POST", "/threads/"+tid+"/state", map[string]any{"values": before.Values}, nil)
	var after struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &after)
	require.Equal(t, before.Values, after.Values, "the same messages replace themselves by ID")
}

func TestRemoveMessagesDeleteByID(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{human("hi")}}}, &out)
	ids := messageIDs(t, out["Messages"])
	e.ok("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{
		"Messages": []any{map[string]any{"type": "remove", "id": ids[0]}}}}, nil)
	var st struct {
		Values map[string]any `json:"values"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Equal(t, ids[1:], messageIDs(t, st.Values["Messages"]))

	e.ok("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{
		"messages": []any{map[string]any{"type": "remove", "id": "__remove_all__"}, human("fresh")}}}, nil)
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Len(t, st.Values["Messages"], 1)
	require.Equal(t, "fresh", st.Values["Messages"].([]any)[0].(map[string]any)["content"])

	r := e.do("POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{
		"messages": []any{map[string]any{"type": "remove", "id": "no-such-id"}}}})
	require.Equal(t, 400, r.status, "%s", r.body)
}

func TestInterruptValuesShowMessagesAsLangChainDicts(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "ask", "input": map[string]any{}}, &out)
	want := jsonOf(t, []byte(`{"content":"sure?","additional_kwargs":{},"response_metadata":{},"type":"ai","id":"q1","tool_calls":[],"invalid_tool_calls":[]}`))
	require.Equal(t, want, out["__interrupt__"].([]any)[0].(map[string]any)["value"])
	var st struct {
		Interrupts []map[string]any `json:"interrupts"`
	}
	e.ok("GET", "/threads/"+tid+"/state", nil, &st)
	require.Len(t, st.Interrupts, 1)
	require.Equal(t, want, st.Interrupts[0]["value"])
}

func TestStateKeysMatchFieldsIgnoringCase(t *testing.T) {
	e := newChatEnv(t)
	for _, tc := range []struct {
		name   string
		graph  string
		values map[string]any
		status int
		detail string
	}{
		{"lower case", "chat", map[string]any{"messages": []any{human("a")}}, 200, ""},
		{"upper case", "chat", map[string]any{"MESSAGES": []any{human("a")}}, 200, ""},
		{"exact among twins", "twins", map[string]any{"NAME": "x"}, 200, ""},
		{"ambiguous among twins", "twins", map[string]any{"name": "x"}, 400, "differ only in case"},
		{"two keys for one field", "chat", map[string]any{"messages": []any{}, "Messages": []any{}}, 400, `both name the state field "Messages"`},
		{"no such field", "chat", map[string]any{"messagez": []any{}}, 400, `no state field "messagez"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"state", "runs/wait"} {
				tid := e.newThread(nil)
				if path == "state" {
					// A state update needs a checkpoint to update.
					e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": tc.graph, "input": map[string]any{}}, nil)
				}
				body := map[string]any{"values": tc.values}
				if path == "runs/wait" {
					body = map[string]any{"assistant_id": tc.graph, "input": tc.values}
				}
				r := e.do("POST", "/threads/"+tid+"/"+path, body)
				require.Equal(t, tc.status, r.status, "%s: %s", path, r.body)
				var res struct {
					Detail string `json:"detail"`
				}
				r.decode(t, &res)
				require.Contains(t, res.Detail, tc.detail, path)
			}
		})
	}
}

func TestCommandUpdateKeysMatchFieldsIgnoringCase(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "ask", "input": map[string]any{}}, nil)
	var out map[string]any
	e.ok("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "ask",
		"command": map[string]any{"resume": "yes", "update": map[string]any{"messages": []any{human("ok")}}}}, &out)
	require.Len(t, out["Messages"], 1)
	require.Equal(t, "ok", out["Messages"].([]any)[0].(map[string]any)["content"])

	r := e.do("POST", "/threads/"+e.newThread(nil)+"/runs/wait", map[string]any{"assistant_id": "twins",
		"command": map[string]any{"update": map[string]any{"name": "x"}}})
	require.Equal(t, 400, r.status, "%s", r.body)
	require.Contains(t, string(r.body), "differ only in case")
}

func TestSchemasDescribeMessagesAsLangChainDicts(t *testing.T) {
	e := newChatEnv(t)
	var s struct {
		StateSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"state_schema"`
	}
	e.ok("GET", "/assistants/chat/schemas", nil, &s)
	msgs := s.StateSchema.Properties["Messages"]
	require.Equal(t, "array", msgs["type"])
	item := msgs["items"].(map[string]any)
	require.Contains(t, item["properties"], "tool_calls")
	require.Equal(t, item, s.StateSchema.Properties["note"], "one message, the same schema")
}

// The "messages" mode streams a message's metadata once, then the text so
// far after each token, then every message of the step complete, as the
// LangGraph clients read it.
func TestMessagesModeStreamsPartialAndCompleteMessages(t *testing.T) {
	e := newChatEnv(t)
	tid := e.newThread(nil)
	r := e.ok("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hi", "id": "h1"}}}, "stream_mode": []string{"messages"}}, nil)
	evs := parseSSE(t, r.body)
	require.Equal(t, []string{"metadata", "messages/complete", "messages/metadata", "messages/partial", "messages/partial", "messages/complete", "end"}, names(evs))
	require.Equal(t, []any{"h1"}, ids(t, evs[1].Data))
	meta := jsonOf(t, evs[2].Data).(map[string]any)["r1"].(map[string]any)["metadata"].(map[string]any)
	require.Equal(t, "reply", meta["langgraph_node"])
	for i, want := range []string{"Hel", "Hello"} {
		part := jsonOf(t, evs[3+i].Data).([]any)[0].(map[string]any)
		require.Equal(t, want, part["content"])
		require.Equal(t, "r1", part["id"])
	}
	require.Equal(t, []any{jsonOf(t, []byte(wantAI))}, jsonOf(t, evs[5].Data))
}

// ids returns the ids of a JSON list of messages.
func ids(t *testing.T, raw []byte) []any {
	t.Helper()
	var out []any
	for _, m := range jsonOf(t, raw).([]any) {
		out = append(out, m.(map[string]any)["id"])
	}
	return out
}
