package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

type addArgs struct {
	A int `json:"a" jsonschema:"required,description=First term"`
	B int `json:"b" jsonschema:"required,description=Second term"`
}

// adder is an "add" tool that records its calls.
type adder struct {
	mu    sync.Mutex
	calls []addArgs
}

func (a *adder) tool() tools.Tool {
	return tools.New("add", "Add two integers.", func(ctx context.Context, args addArgs) (string, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls = append(a.calls, args)
		return fmt.Sprint(args.A + args.B), nil
	})
}

func (a *adder) got() []addArgs {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]addArgs(nil), a.calls...)
}

func input(text string) agent.ReActState {
	return agent.ReActState{Messages: state.Msgs(state.Human(text))}
}

func TestReActScriptedRunsToolsAndAnswers(t *testing.T) {
	var add adder
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "add", `{"a":2,"b":3}`)}},
		llm.Reply{Text: "2 + 3 = 5.", Expect: func(msgs []state.Message) error {
			last := msgs[len(msgs)-1]
			if rs := last.ToolResults(); len(rs) != 1 || rs[0].Content != "5" {
				return fmt.Errorf("want the tool result 5 last, got %v", agenttest.Summary(msgs))
			}
			return nil
		}},
	)
	g, err := agent.NewReAct(model, []tools.Tool{add.tool()})
	require.NoError(t, err)

	out, err := g.Invoke(t.Context(), input("What is 2 + 3?"))
	require.NoError(t, err)
	want := []string{
		"human: What is 2 + 3?",
		`ai:  call(call_1 add {"a":2,"b":3})`,
		"tool:  result(call_1 add 5)",
		"ai: 2 + 3 = 5.",
	}
	require.Empty(t, cmp.Diff(want, agenttest.Summary(out.Messages.List())))
	require.Equal(t, []addArgs{{A: 2, B: 3}}, add.got())

	// The tools were bound to every model call.
	calls := model.Calls()
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Empty(t, cmp.Diff(tools.Definitions(add.tool()), c.Options.Tools))
	}
}

// openAIServer is a chat-completions server that asks for the "add" tool
// until it sees the tool's result, then answers with it.
type openAIServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newOpenAIServer(t *testing.T) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *openAIServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()

	var result string
	for _, m := range body["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "tool" && mm["tool_call_id"] == "call_abc" {
			result, _ = mm["content"].(string)
		}
	}
	stream, _ := body["stream"].(bool)
	if result == "" {
		call := `{"id":"call_abc","type":"function","function":{"name":"add","arguments":"{\"a\":20,\"b\":22}"}}`
		if stream {
			writeSSE(w,
				`{"id":"c1","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[`+strings.Replace(call, `{"id"`, `{"index":0,"id"`, 1)+`]}}]}`,
				`{"id":"c1","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			return
		}
		writeJSON(w, `{"id":"c1","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[`+call+`]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
		return
	}
	if stream {
		writeSSE(w,
			`{"id":"c2","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{"role":"assistant","content":"The answer"}}]}`,
			`{"id":"c2","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{"content":" is `+result+`."}}]}`,
			`{"id":"c2","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		return
	}
	writeJSON(w, `{"id":"c2","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The answer is `+result+`."}}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`)
}

func (s *openAIServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

func writeSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func TestReActOpenAICompatibleServerRunsToolsAndAnswers(t *testing.T) {
	srv := newOpenAIServer(t)
	model, err := llm.New(t.Context(), "openai-compatible:test-model@"+srv.URL+"/v1", llm.WithMaxAttempts(1))
	require.NoError(t, err)
	var add adder
	g, err := agent.NewReAct(model, []tools.Tool{add.tool()}, agent.WithSystemPrompt("You add numbers."))
	require.NoError(t, err)

	var tokens []string
	var final agent.ReActState
	for ev, err := range g.Stream(t.Context(), input("What is 20 + 22?"), graph.WithStreamModes(graph.ModeMessages|graph.ModeValues)) {
		require.NoError(t, err)
		switch p := ev.Payload.(type) {
		case graph.MessageChunk:
			tokens = append(tokens, p.Text)
		case agent.ReActState:
			final = p
		}
	}

	want := []string{
		"human: What is 20 + 22?",
		`ai:  call(call_abc add {"a":20,"b":22})`,
		"tool:  result(call_abc add 42)",
		"ai: The answer is 42.",
	}
	require.Empty(t, cmp.Diff(want, agenttest.Summary(final.Messages.List())))
	require.Equal(t, []addArgs{{A: 20, B: 22}}, add.got())
	require.Equal(t, "The answer is 42.", strings.Join(tokens, ""))

	reqs := srv.requests()
	require.Len(t, reqs, 2)
	for _, body := range reqs {
		require.Equal(t, "test-model", body["model"])
		defs := body["tools"].([]any)
		require.Len(t, defs, 1)
		require.Equal(t, "add", defs[0].(map[string]any)["function"].(map[string]any)["name"])
		first := body["messages"].([]any)[0].(map[string]any)
		require.Equal(t, "system", first["role"])
		require.Equal(t, "You add numbers.", first["content"])
	}
	var roles []string
	for _, m := range reqs[1]["messages"].([]any) {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	require.Equal(t, []string{"system", "user", "assistant", "tool"}, roles)
}

func TestReActStopsGracefullyNearTheRecursionLimit(t *testing.T) {
	// Steps: 0 input, 1 agent, 2 tools, 3 agent, 4 tools, 5 agent, …; at
	// step s the agent has limit-s steps left and gives up on tools when
	// fewer than two remain. As in LangGraph that ends the run gracefully
	// when the agent gets exactly one step left (even limits); with an odd
	// limit it runs out of steps at the agent's last call.
	tests := []struct {
		limit     int
		toolCalls int
		wantErr   bool
	}{
		{limit: 2, toolCalls: 0},
		{limit: 6, toolCalls: 2},
		{limit: 5, toolCalls: 2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("limit ", tt.limit), func(t *testing.T) {
			var add adder
			var replies []llm.Reply // a model that always wants the tool
			for range 10 {
				replies = append(replies, llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("", "add", `{"a":1,"b":1}`)}})
			}
			g, err := agent.NewReAct(llm.NewScripted(replies...), []tools.Tool{add.tool()})
			require.NoError(t, err)

			out, err := g.Invoke(t.Context(), input("loop"), graph.WithRecursionLimit(tt.limit))
			require.Len(t, add.got(), tt.toolCalls)
			if tt.wantErr {
				_, ok := errors.AsType[*graph.RecursionError](err)
				require.True(t, ok, "got %v", err)
				return
			}
			require.NoError(t, err)
			last, _ := out.Messages.Last()
			require.Equal(t, agent.NeedMoreSteps, last.Text())
			require.Empty(t, last.ToolCalls())
			require.Equal(t, 2+2*tt.toolCalls, out.Messages.Len())
		})
	}
}

func TestReActSystemPromptIsSentButNotStored(t *testing.T) {
	model := llm.NewScripted(llm.Reply{Text: "Hi."})
	g, err := agent.NewReAct(model, []tools.Tool{(&adder{}).tool()}, agent.WithSystemPrompt("Be brief."))
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), input("hello"))
	require.NoError(t, err)
	require.Equal(t, []string{"human: hello", "ai: Hi."}, agenttest.Summary(out.Messages.List()))
	require.Equal(t, []string{"system: Be brief.", "human: hello"}, agenttest.Summary(model.Calls()[0].Messages))
}

func TestReActStreamsTokensWithTheMessageID(t *testing.T) {
	model := llm.NewScripted(llm.Reply{Text: "The answer is 42."})
	g, err := agent.NewReAct(model, nil)
	require.NoError(t, err)
	var chunks []graph.MessageChunk
	var final agent.ReActState
	for ev, err := range g.Stream(t.Context(), input("?"), graph.WithStreamModes(graph.ModeMessages|graph.ModeValues)) {
		require.NoError(t, err)
		switch p := ev.Payload.(type) {
		case graph.MessageChunk:
			require.Equal(t, agent.AgentNode, ev.Node)
			chunks = append(chunks, p)
		case agent.ReActState:
			final = p
		}
	}
	last, _ := final.Messages.Last()
	id := last.ID
	want := []graph.MessageChunk{
		{MessageID: id, Text: "The"}, {MessageID: id, Text: " answer"}, {MessageID: id, Text: " is"},
		{MessageID: id, Text: " 42."}, {MessageID: id, Done: true},
	}
	require.Empty(t, cmp.Diff(want, chunks))
}

func TestReActCheckpointerKeepsTheConversation(t *testing.T) {
	model := llm.NewScripted(llm.Reply{Text: "Hello Ada."}, llm.Reply{Text: "You are Ada."})
	g, err := agent.NewReAct(model, nil, agent.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	thread := graph.WithThread("t1")
	_, err = g.Invoke(t.Context(), input("I am Ada."), thread)
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), input("Who am I?"), thread)
	require.NoError(t, err)
	want := []string{"human: I am Ada.", "ai: Hello Ada.", "human: Who am I?", "ai: You are Ada."}
	require.Empty(t, cmp.Diff(want, agenttest.Summary(out.Messages.List())))
	require.Len(t, model.Calls()[1].Messages, 3)
}

func TestReActMaxToolConcurrency(t *testing.T) {
	var active, peak atomic.Int32
	tool := tools.New("work", "Do work.", func(ctx context.Context, _ struct{}) (string, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return "done", nil
	})
	var calls []llms.ToolCall
	for range 4 {
		calls = append(calls, state.ToolCall("", "work", `{}`))
	}
	model := llm.NewScripted(llm.Reply{ToolCalls: calls}, llm.Reply{Text: "All done."})
	g, err := agent.NewReAct(model, []tools.Tool{tool}, agent.WithMaxToolConcurrency(1))
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), input("work"))
	require.NoError(t, err)
	require.Equal(t, 7, out.Messages.Len())
	require.Equal(t, int32(1), peak.Load())
}

func TestReActWithoutToolsIsOneModelCall(t *testing.T) {
	model := llm.NewScripted(llm.Reply{Text: "Hi."})
	g, err := agent.NewReAct(model, nil)
	require.NoError(t, err)
	require.Equal(t, "__start__ -> agent\nagent -> __end__\n", g.String())
	out, err := g.Invoke(t.Context(), input("hello"))
	require.NoError(t, err)
	require.Equal(t, []string{"human: hello", "ai: Hi."}, agenttest.Summary(out.Messages.List()))
	require.Nil(t, model.Calls()[0].Options.Tools)
}

func TestReActModelErrorFailsTheRun(t *testing.T) {
	boom := errors.New("provider down")
	g, err := agent.NewReAct(llm.NewScripted(llm.Reply{Err: boom}), []tools.Tool{(&adder{}).tool()})
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("hello"))
	require.ErrorIs(t, err, boom)
	nodeErr, ok := errors.AsType[*graph.NodeError](err)
	require.True(t, ok)
	require.Equal(t, agent.AgentNode, nodeErr.Node)
}

func TestReActToolErrorsReachTheModel(t *testing.T) {
	failing := tools.New("fail", "Always fails.", func(ctx context.Context, _ struct{}) (string, error) {
		return "", errors.New("no luck")
	})
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "fail", `{}`), state.ToolCall("c2", "nope", `{}`)}},
		llm.Reply{Text: "Giving up."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{failing})
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), input("try"))
	require.NoError(t, err)
	want := []string{
		"human: try",
		"ai:  call(c1 fail {}) call(c2 nope {})",
		"tool:  result(c1 fail Error: no luck\n Please fix your mistakes.)",
		"tool:  result(c2 nope Error: nope is not a valid tool, try one of [fail].)",
		"ai: Giving up.",
	}
	require.Empty(t, cmp.Diff(want, agenttest.Summary(out.Messages.List())))
}

func TestNewReActRejectsInvalidInput(t *testing.T) {
	add := (&adder{}).tool()
	tests := []struct {
		name  string
		model llm.Model
		tools []tools.Tool
		want  string
	}{
		{name: "nil model", tools: []tools.Tool{add}, want: "agent: nil model"},
		{name: "duplicate tools", model: llm.NewScripted(), tools: []tools.Tool{add, add}, want: `agent: tools: duplicate tool name "add"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.NewReAct(tt.model, tt.tools)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestReActGraphShape(t *testing.T) {
	g, err := agent.NewReAct(llm.NewScripted(), []tools.Tool{(&adder{}).tool()})
	require.NoError(t, err)
	require.Equal(t, "__start__ -> agent\nagent -?-> tools\nagent -?-> __end__\ntools -> agent\n", g.String())
}

// reverseTools returns a "wait" tool whose calls {"n":i} for i in 1..n each
// finish only after the call i+1: they finish in the reverse of their order.
func reverseTools(n int) tools.Tool {
	finished := make([]chan struct{}, n+2)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	type waitArgs struct {
		N int `json:"n" jsonschema:"required"`
	}
	return tools.New("wait", "Wait for the next call.", func(ctx context.Context, a waitArgs) (string, error) {
		defer close(finished[a.N])
		if a.N < n {
			select {
			case <-finished[a.N+1]:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return fmt.Sprint("waited ", a.N), nil
	})
}

func TestReActRunsEachToolCallAsATaskInCallOrder(t *testing.T) {
	calls := []llms.ToolCall{
		state.ToolCall("c1", "wait", `{"n":1}`),
		state.ToolCall("c2", "wait", `{"n":2}`),
		state.ToolCall("c3", "nope", `{}`),
		state.ToolCall("c4", "wait", `{"n":3}`),
	}
	wantResults := []string{
		"tool:  result(c1 wait waited 1)",
		"tool:  result(c2 wait waited 2)",
		"tool:  result(c3 nope Error: nope is not a valid tool, try one of [wait].)",
		"tool:  result(c4 wait waited 3)",
	}
	model := llm.NewScripted(
		llm.Reply{ToolCalls: calls},
		llm.Reply{Text: "Waited.", Expect: func(msgs []state.Message) error {
			if got := agenttest.Summary(msgs[len(msgs)-len(calls):]); !cmp.Equal(wantResults, got) {
				return fmt.Errorf("the model got the results %q", got)
			}
			return nil
		}},
	)
	g, err := agent.NewReAct(model, []tools.Tool{reverseTools(3)})
	require.NoError(t, err)

	// The stream, as the events bridge sees it.
	bus := events.NewBus()
	sub := bus.Subscribe(t.Context(), events.QueueSize(1000))
	var updates, pushed int
	var final agent.ReActState
	stream := func(yield func(graph.Event, error) bool) {
		for ev, err := range g.Stream(t.Context(), input("wait"), graph.WithStreamModes(events.StreamModes|graph.ModeValues)) {
			if ev.Mode == graph.ModeValues {
				final = ev.Payload.(agent.ReActState)
			}
			if ev.Node == agent.ToolsNode {
				switch p := ev.Payload.(type) {
				case graph.TaskStart:
					require.True(t, p.Push, "a Send task")
					pushed++
				case agent.ReActState:
					require.True(t, p.Messages.Channel().Written())
					updates++
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
	require.NoError(t, events.Bridge(t.Context(), bus, "run-1", stream))
	bus.Close()

	require.Equal(t, len(calls), pushed, "one task per tool call")
	require.Equal(t, len(calls), updates, "one update per tool call")
	msgs := final.Messages.List()
	require.Equal(t, []string{"human: wait"}, agenttest.Summary(msgs[:1]))
	require.Equal(t, wantResults, agenttest.Summary(msgs[2:2+len(calls)]), "tool messages in call order")
	require.Equal(t, "ai: Waited.", agenttest.Summary(msgs[len(msgs)-1:])[0])

	var toolSteps []string
	var results []string
	for ev, err := range sub.Events() {
		require.NoError(t, err)
		switch p := ev.Data.(type) {
		case events.NodeStarted:
			if ev.Node == agent.ToolsNode {
				toolSteps = append(toolSteps, ev.Task)
			}
		case events.ToolResult:
			require.Equal(t, agent.ToolsNode, ev.Node)
			results = append(results, p.ID+" "+p.Result)
		}
	}
	require.Len(t, toolSteps, len(calls), "a step start per task")
	require.ElementsMatch(t, []string{
		"c1 waited 1", "c2 waited 2", "c3 Error: nope is not a valid tool, try one of [wait].", "c4 waited 3",
	}, results, "a tool result per call, as the tasks finish")
}

func TestReActResumeRunsOnlyTheUnfinishedToolCalls(t *testing.T) {
	var add adder
	var flakyRuns atomic.Int32
	flaky := tools.New("flaky", "Fails once.", func(ctx context.Context, _ struct{}) (string, error) {
		if flakyRuns.Add(1) == 1 {
			return "", errors.New("transient")
		}
		return "ok", nil
	})
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{
			state.ToolCall("c1", "add", `{"a":1,"b":2}`),
			state.ToolCall("c2", "flaky", `{}`),
			state.ToolCall("c3", "add", `{"a":3,"b":4}`),
		}},
		llm.Reply{Text: "3 and 7."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{add.tool(), flaky},
		agent.WithCheckpointer(checkpoint.NewMemory()), agent.WithToolNodeOptions(tools.WithFailOnError()))
	require.NoError(t, err)
	thread := graph.WithThread("t1")

	// One task at a time, in call order: c1 runs, c2 fails the step.
	_, err = g.Invoke(t.Context(), input("sums?"), thread, graph.WithMaxConcurrency(1))
	require.ErrorContains(t, err, "transient")
	require.Equal(t, []addArgs{{A: 1, B: 2}}, add.got())

	out, err := g.Resume(t.Context(), graph.Command[agent.ReActState]{}, thread)
	require.NoError(t, err)
	require.Equal(t, []addArgs{{A: 1, B: 2}, {A: 3, B: 4}}, add.got(), "c1 ran once")
	require.Equal(t, []string{
		"human: sums?",
		`ai:  call(c1 add {"a":1,"b":2}) call(c2 flaky {}) call(c3 add {"a":3,"b":4})`,
		"tool:  result(c1 add 3)",
		"tool:  result(c2 flaky ok)",
		"tool:  result(c3 add 7)",
		"ai: 3 and 7.",
	}, agenttest.Summary(out.Messages.List()))
}

func TestReActNodeMiddlewareWrapsBothNodes(t *testing.T) {
	var add adder
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "add", `{"a":2,"b":3}`)}},
		llm.Reply{Text: "5."},
	)
	var mu sync.Mutex
	var ran []string
	g, err := agent.NewReAct(model, []tools.Tool{add.tool()}, agent.WithNodeMiddleware(
		func(next graph.CommandFunc[agent.ReActState]) graph.CommandFunc[agent.ReActState] {
			return func(ctx context.Context, s agent.ReActState) (graph.Command[agent.ReActState], error) {
				mu.Lock()
				ran = append(ran, graph.NodeName(ctx))
				mu.Unlock()
				return next(ctx, s)
			}
		}))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("What is 2 + 3?"))
	require.NoError(t, err)
	require.Equal(t, []string{agent.AgentNode, agent.ToolsNode, agent.AgentNode}, ran)
}

// A tool that asks a human (graph.Interrupt) pauses the ReAct run; the
// answer given to Resume is the tool's result.
func TestReActToolThatAsksAHumanPausesTheRun(t *testing.T) {
	approve := tools.New("approve", "asks a human to approve an action", func(ctx context.Context, a struct {
		Action string `json:"action"`
	}) (string, error) {
		return graph.InterruptAs[string](ctx, "approve "+a.Action+"?")
	})
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "approve", `{"action":"deploy"}`)}},
		llm.Reply{Text: "Deployed."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{approve}, agent.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Deploy it."), graph.WithThread("t"))
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.Equal(t, "approve deploy?", intr.Interrupts[0].Value)
	out, err := g.Resume(t.Context(), graph.Command[agent.ReActState]{Resume: "approved"}, graph.WithThread("t"))
	require.NoError(t, err)
	want := []string{
		"human: Deploy it.",
		`ai:  call(call_1 approve {"action":"deploy"})`,
		"tool:  result(call_1 approve approved)",
		"ai: Deployed.",
	}
	require.Empty(t, cmp.Diff(want, agenttest.Summary(out.Messages.List())))
}

// Each model call of the agent node is reported as an events.ModelCall
// on the custom stream, as the other agents of this package do.
func TestReActReportsEachModelCall(t *testing.T) {
	var add adder
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "add", `{"a":2,"b":3}`)}},
		llm.Reply{Text: "5.", Usage: llm.Usage{PromptTokens: 4, CompletionTokens: 1}},
	)
	g, err := agent.NewReAct(model, []tools.Tool{add.tool()})
	require.NoError(t, err)
	var calls []events.ModelCall
	for ev, err := range g.Stream(t.Context(), input("What is 2 + 3?"), graph.WithStreamModes(graph.ModeCustom)) {
		require.NoError(t, err)
		if c, ok := ev.Payload.(events.ModelCall); ok {
			calls = append(calls, c)
		}
	}
	require.Len(t, calls, 2)
	require.Equal(t, 1, calls[0].ToolCalls)
	require.Equal(t, "5.", calls[1].Text)
	require.Equal(t, 5, calls[1].TotalTokens)
}
