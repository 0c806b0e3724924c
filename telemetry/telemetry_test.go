package telemetry_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/telemetry"
	"github.com/agentgraph/agentgraph/tools"
)

// newProvider returns a tracer provider exporting synchronously to an
// in-memory exporter.
func newProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// attrs returns the attributes of s as Go values, by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]any {
	m := make(map[attribute.Key]any, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

// tree renders the spans as an indented tree, children under their
// parent. Siblings are ordered by step, then name, then tool call ID, so
// that the rendering does not depend on timing.
func tree(spans tracetest.SpanStubs) []string {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID(); s.Parent.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	key := func(s tracetest.SpanStub, k attribute.Key) attribute.Value {
		for _, kv := range s.Attributes {
			if kv.Key == k {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	order := func(a, b tracetest.SpanStub) int {
		return cmp.Or(
			cmp.Compare(key(a, telemetry.AttrStep).AsInt64(), key(b, telemetry.AttrStep).AsInt64()),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(key(a, telemetry.AttrToolCallID).AsString(), key(b, telemetry.AttrToolCallID).AsString()),
		)
	}
	var out []string
	var walk func(ss []tracetest.SpanStub, depth int)
	walk = func(ss []tracetest.SpanStub, depth int) {
		slices.SortFunc(ss, order)
		for _, s := range ss {
			out = append(out, strings.Repeat("  ", depth)+s.Name)
			walk(children[s.SpanContext.SpanID()], depth+1)
		}
	}
	walk(roots, 0)
	return out
}

// named returns the spans called name, failing the test when there are
// none.
func named(t *testing.T, spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	t.Helper()
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	require.NotEmpty(t, out, "no span %q", name)
	return out
}

// byID indexes spans by their span ID.
func byID(spans tracetest.SpanStubs) map[trace.SpanID]tracetest.SpanStub {
	m := make(map[trace.SpanID]tracetest.SpanStub, len(spans))
	for _, s := range spans {
		m[s.SpanContext.SpanID()] = s
	}
	return m
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

var add = tools.New("add", "Add two integers.", func(ctx context.Context, a addArgs) (string, error) {
	return fmt.Sprint(a.A + a.B), nil
})

// openAIServer answers chat-completion requests the way api.openai.com
// streams them: the first request with two calls of "add", the next ones
// with text. Each answer ends with a usage chunk.
func openAIServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		hits++
		hit := hits
		mu.Unlock()
		chunks := []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"3 and 7."}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}}`,
		}
		if hit == 1 {
			call := func(i int, id, args string) string {
				return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":"add","arguments":%q}}]}}]}`, i, id, args)
			}
			chunks = []string{
				call(0, "c1", `{"a":1,"b":2}`),
				call(1, "c2", `{"a":3,"b":4}`),
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}`,
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// One Instrument call traces a ReAct agent talking to an OpenAI-wire
// server: a run span, a span per task under it, and under the tasks the
// model calls and tool calls with the GenAI semantic conventions'
// attributes.
func TestInstrumentTracesAgentWithGenAIAttributes(t *testing.T) {
	tp, exp := newProvider(t)
	srv := openAIServer(t)
	model, err := llm.New(t.Context(), "openai:gpt-test", llm.WithBaseURL(srv.URL+"/v1"), llm.WithAPIKey("sk-test"))
	require.NoError(t, err)
	g, err := agent.NewReAct(model, []tools.Tool{add},
		agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithCallOptions(llm.WithTemperature(0.25), llm.WithMaxTokens(200)),
		agent.WithCompileOptions(telemetry.Instrument(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("1+2 and 3+4?"))}, graph.WithThread("t1"))
	require.NoError(t, err)

	spans := exp.GetSpans()
	want := []string{
		"invoke_agent react",
		"  graph.node agent",
		"    chat gpt-test",
		"  graph.node tools", // one task per tool call
		"    execute_tool add",
		"  graph.node tools",
		"    execute_tool add",
		"  graph.node agent",
		"    chat gpt-test",
	}
	require.Empty(t, gocmp.Diff(want, tree(spans)))

	ids := byID(spans)
	parent := func(s tracetest.SpanStub) tracetest.SpanStub {
		t.Helper()
		p, ok := ids[s.Parent.SpanID()]
		require.True(t, ok, "span %q has no parent among the spans", s.Name)
		return p
	}
	run := named(t, spans, "invoke_agent react")[0]
	require.False(t, run.Parent.IsValid(), "the run span is a root")
	require.Empty(t, gocmp.Diff(map[attribute.Key]any{
		telemetry.AttrOperation:    "invoke_agent",
		telemetry.AttrAgentName:    "react",
		telemetry.AttrConversation: "t1",
		telemetry.AttrNamespace:    "",
	}, attrs(run)))

	chats := named(t, spans, "chat gpt-test")
	slices.SortFunc(chats, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for i, want := range []struct {
		in, out, calls int64
		finish         string
	}{{10, 4, 2, llm.StopToolCalls}, {30, 5, 0, llm.StopEnd}} {
		s := chats[i]
		node := parent(s)
		require.Equal(t, "graph.node agent", node.Name)
		require.Equal(t, run.SpanContext.SpanID(), node.Parent.SpanID(), "the node span is the run span's child")
		require.Equal(t, trace.SpanKindClient, s.SpanKind)
		require.Equal(t, codes.Unset, s.Status.Code)
		require.Empty(t, gocmp.Diff(map[attribute.Key]any{
			telemetry.AttrOperation:     "chat",
			telemetry.AttrProvider:      "openai",
			telemetry.AttrRequestModel:  "gpt-test",
			telemetry.AttrConversation:  "t1",
			telemetry.AttrTemperature:   0.25,
			telemetry.AttrMaxTokens:     int64(200),
			telemetry.AttrStream:        true,
			telemetry.AttrInputTokens:   want.in,
			telemetry.AttrOutputTokens:  want.out,
			telemetry.AttrFinishReasons: []string{want.finish},
			telemetry.AttrToolCalls:     want.calls,
			telemetry.AttrModelAttempts: int64(1),
		}, attrs(s)), "model call %d", i+1)
	}

	var callIDs []string
	for _, s := range named(t, spans, "execute_tool add") {
		node := parent(s)
		require.Equal(t, "graph.node tools", node.Name)
		require.Equal(t, run.SpanContext.SpanID(), node.Parent.SpanID())
		require.Equal(t, trace.SpanKindInternal, s.SpanKind)
		a := attrs(s)
		callIDs = append(callIDs, a[telemetry.AttrToolCallID].(string))
		delete(a, telemetry.AttrToolCallID)
		require.Empty(t, gocmp.Diff(map[attribute.Key]any{
			telemetry.AttrOperation:       "execute_tool",
			telemetry.AttrToolName:        "add",
			telemetry.AttrToolDescription: "Add two integers.",
			telemetry.AttrToolType:        "function",
		}, a))
	}
	slices.Sort(callIDs)
	require.Equal(t, []string{"c1", "c2"}, callIDs)
}

func TestInstrumentTracesScriptedModel(t *testing.T) {
	tp, exp := newProvider(t)
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "add", `{"a":1,"b":2}`)}, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 4}},
		llm.Reply{Text: "3."},
	)
	g, err := agent.NewReAct(model, []tools.Tool{add}, agent.WithCompileOptions(telemetry.Instrument(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("1+2?"))})
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Equal(t, []string{
		"invoke_agent react",
		"  graph.node agent",
		"    chat scripted",
		"  graph.node tools",
		"    execute_tool add",
		"  graph.node agent",
		"    chat scripted",
	}, tree(spans))
	for _, s := range named(t, spans, "chat scripted") {
		a := attrs(s)
		require.Equal(t, "scripted", a[telemetry.AttrProvider])
		require.Equal(t, "scripted", a[telemetry.AttrRequestModel])
		require.NotContains(t, a, telemetry.AttrConversation, "a run without a thread has no conversation")
	}
	require.NotContains(t, attrs(named(t, spans, "invoke_agent react")[0]), telemetry.AttrConversation)
}

func TestNilProviderTracesNothing(t *testing.T) {
	model := llm.NewScripted()
	require.Same(t, model, telemetry.Model(model, nil))
	require.Equal(t, add, telemetry.Tool(add, nil))
	h := telemetry.Hooks(nil)
	require.Nil(t, h.RunStart)
	require.Nil(t, h.RunEnd)
	require.Nil(t, h.TaskStart)
	require.Nil(t, h.TaskEnd)
}

type simple struct {
	N state.Value[int]
}

func TestFailedNodeMarksNodeAndRunSpans(t *testing.T) {
	tp, exp := newProvider(t)
	boom := errors.New("boom")
	b := graph.New[simple]()
	b.AddNode("bad", func(ctx context.Context, s simple) (simple, error) { return s, boom })
	b.AddEdge(graph.Start, "bad")
	b.AddEdge("bad", graph.End)
	g, err := b.Compile(telemetry.Instrument(tp))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{})
	require.ErrorIs(t, err, boom)

	spans := exp.GetSpans()
	require.Equal(t, []string{"invoke_agent", "  graph.node bad"}, tree(spans))
	for _, s := range spans {
		require.Equal(t, codes.Error, s.Status.Code, s.Name)
		require.Equal(t, "_OTHER", attrs(s)[telemetry.AttrErrorType], s.Name)
		require.NotEmpty(t, s.Events, s.Name) // the recorded error
	}
}

func TestInterruptedRunIsNotAnError(t *testing.T) {
	tp, exp := newProvider(t)
	b := graph.New[simple]()
	b.AddNode("ask", func(ctx context.Context, s simple) (simple, error) {
		v, err := graph.InterruptAs[int](ctx, "number?")
		if err != nil {
			return s, err
		}
		s.N.Set(v)
		return s, nil
	})
	b.AddEdge(graph.Start, "ask")
	b.AddEdge("ask", graph.End)
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), telemetry.Instrument(tp))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{}, graph.WithThread("t"))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)

	for _, s := range exp.GetSpans() {
		require.Equal(t, codes.Unset, s.Status.Code, s.Name)
		require.Equal(t, true, attrs(s)[telemetry.AttrInterrupted], s.Name)
	}
}

// traced returns a context observed like a run of an instrumented graph,
// and ends that run span when the test ends.
func traced(t *testing.T, tp trace.TracerProvider) context.Context {
	t.Helper()
	h := telemetry.Hooks(tp)
	ctx := h.RunStart(t.Context(), graph.RunInfo{})
	t.Cleanup(func() { h.RunEnd(ctx, graph.RunInfo{}, nil) })
	return ctx
}

func TestFailedCallsSetErrorStatus(t *testing.T) {
	providerDown := &llm.Error{Model: "scripted", Attempts: 3, StatusCode: 503, Err: errors.New("provider down")}
	failing := tools.New("fail", "Fails.", func(ctx context.Context, _ struct{}) (string, error) {
		return "", errors.New("no luck")
	})
	panicking := tools.New("panic", "Panics.", func(ctx context.Context, _ struct{}) (string, error) {
		panic("boom")
	})
	runNode := func(ctx context.Context, tool tools.Tool, args string) error {
		tn, err := tools.NewToolNode([]tools.Tool{tool}, tools.WithLogger(discardLogger()))
		if err != nil {
			return err
		}
		_, err = tn.RunCalls(ctx, []llms.ToolCall{state.ToolCall("c1", tool.Name(), args)})
		return err
	}
	tests := []struct {
		name      string
		call      func(t *testing.T, tp trace.TracerProvider)
		span      string
		message   string
		errorType string
	}{
		{
			name: "wrapped model error",
			call: func(t *testing.T, tp trace.TracerProvider) {
				_, err := telemetry.Model(llm.NewScripted(llm.Reply{Err: providerDown}), tp).Generate(t.Context(), nil)
				require.ErrorIs(t, err, providerDown)
			},
			span: "chat scripted", message: providerDown.Error(), errorType: "503",
		},
		{
			name: "model error in a traced run",
			call: func(t *testing.T, tp trace.TracerProvider) {
				_, err := llm.NewScripted(llm.Reply{Err: providerDown}).Generate(traced(t, tp), nil)
				require.ErrorIs(t, err, providerDown)
			},
			span: "chat scripted", message: providerDown.Error(), errorType: "503",
		},
		{
			name: "wrapped tool error",
			call: func(t *testing.T, tp trace.TracerProvider) {
				_, err := telemetry.Tool(failing, tp).Call(t.Context(), json.RawMessage(`{}`))
				require.Error(t, err)
			},
			span: "execute_tool fail", message: "no luck", errorType: "_OTHER",
		},
		{
			name: "wrapped tool panic",
			call: func(t *testing.T, tp trace.TracerProvider) {
				require.PanicsWithValue(t, "boom", func() {
					_, _ = telemetry.Tool(panicking, tp).Call(t.Context(), json.RawMessage(`{}`))
				})
			},
			span: "execute_tool panic", message: "panic: boom", errorType: "panic",
		},
		{
			name: "tool error in a tool node of a traced run",
			call: func(t *testing.T, tp trace.TracerProvider) {
				require.NoError(t, runNode(traced(t, tp), failing, `{}`)) // the model gets an error message
			},
			span: "execute_tool fail", message: "no luck", errorType: "_OTHER",
		},
		{
			name: "tool panic in a tool node of a traced run",
			call: func(t *testing.T, tp trace.TracerProvider) {
				require.NoError(t, runNode(traced(t, tp), panicking, `{}`))
			},
			span: "execute_tool panic", message: "tool panic panicked: boom", errorType: "panic",
		},
		{
			name: "invalid tool arguments in a tool node of a traced run",
			call: func(t *testing.T, tp trace.TracerProvider) {
				require.NoError(t, runNode(traced(t, tp), add, `{"a":"one"}`))
			},
			span: "execute_tool add", errorType: "invalid_arguments",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			tt.call(t, tp)
			s := named(t, exp.GetSpans(), tt.span)
			require.Len(t, s, 1)
			require.Equal(t, codes.Error, s[0].Status.Code)
			if tt.message != "" {
				require.Equal(t, tt.message, s[0].Status.Description)
			}
			require.Equal(t, tt.errorType, attrs(s[0])[telemetry.AttrErrorType])
		})
	}
}

func TestModelNameDefaultsAndOption(t *testing.T) {
	tests := []struct {
		name         string
		model        llm.Model
		opts         []telemetry.Option
		wantName     string
		wantModel    string
		wantProvider any // nil: no attribute
	}{
		{name: "scripted", model: llm.NewScripted(llm.Reply{}), wantName: "scripted", wantModel: "scripted", wantProvider: "scripted"},
		{name: "option wins", model: llm.NewScripted(llm.Reply{}), opts: []telemetry.Option{telemetry.WithModelName("gpt-test")},
			wantName: "gpt-test", wantModel: "gpt-test"},
		{name: "spec-like option", model: llm.NewScripted(llm.Reply{}), opts: []telemetry.Option{telemetry.WithModelName("anthropic:claude-x")},
			wantName: "anthropic:claude-x", wantModel: "claude-x", wantProvider: "anthropic"},
		{name: "stringer", model: stringer{Model: llm.NewScripted(llm.Reply{})}, wantName: "openai:gpt-4o", wantModel: "gpt-4o", wantProvider: "openai"},
		{name: "googleai", model: stringer{llm.NewScripted(llm.Reply{}), "googleai:gemini-2.5-flash"},
			wantName: "googleai:gemini-2.5-flash", wantModel: "gemini-2.5-flash", wantProvider: "gcp.gemini"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			m := telemetry.Model(tt.model, tp, tt.opts...)
			_, err := m.Generate(t.Context(), []state.Message{state.Human("hi")})
			require.NoError(t, err)
			spans := exp.GetSpans()
			require.Len(t, spans, 1)
			a := attrs(spans[0])
			require.Equal(t, "chat "+tt.wantModel, spans[0].Name)
			require.Equal(t, tt.wantModel, a[telemetry.AttrRequestModel])
			require.Equal(t, tt.wantProvider, a[telemetry.AttrProvider])
			require.Equal(t, tt.wantName, m.(fmt.Stringer).String())
		})
	}
}

// stringer is a model whose String method names it ("openai:gpt-4o" by
// default).
type stringer struct {
	llm.Model
	spec string
}

func (s stringer) String() string { return cmp.Or(s.spec, "openai:gpt-4o") }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A model or tool wrapped with Model or Tool inside an instrumented graph
// is traced once per call, not by both the wrapper and the graph.
func TestWrappedCallsInInstrumentedGraphAreTracedOnce(t *testing.T) {
	tp, exp := newProvider(t)
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "add", `{"a":1,"b":2}`)}},
		llm.Reply{Text: "3."},
	)
	g, err := agent.NewReAct(telemetry.Model(model, tp), telemetry.Tools([]tools.Tool{add}, tp),
		agent.WithCompileOptions(telemetry.Instrument(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("1+2?"))})
	require.NoError(t, err)
	require.Equal(t, []string{
		"invoke_agent react",
		"  graph.node agent",
		"    chat scripted",
		"  graph.node tools",
		"    execute_tool add",
		"  graph.node agent",
		"    chat scripted",
	}, tree(exp.GetSpans()))
}

// A subgraph compiled with its own Instrument call nests its run under
// the node that runs it, and its model calls are traced once.
func TestSubgraphRunNestsUnderItsNode(t *testing.T) {
	tp, exp := newProvider(t)
	model := llm.NewScripted(llm.Reply{Text: "hi"})
	ib := graph.New[simple]()
	ib.AddNode("inner", func(ctx context.Context, s simple) (simple, error) {
		_, err := model.Generate(ctx, []state.Message{state.Human("hello")})
		return simple{N: state.Set(1)}, err
	})
	ib.AddEdge(graph.Start, "inner")
	ib.AddEdge("inner", graph.End)
	sub, err := ib.Compile(telemetry.Instrument(tp), graph.WithName("sub"))
	require.NoError(t, err)

	ob := graph.New[simple]()
	ob.AddCommandNode("outer", graph.Subgraph(sub, func(s simple) simple { return s }, func(s simple) simple { return s }))
	ob.AddEdge(graph.Start, "outer")
	ob.AddEdge("outer", graph.End)
	g, err := ob.Compile(telemetry.Instrument(tp))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{})
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Equal(t, []string{
		"invoke_agent",
		"  graph.node outer",
		"    invoke_agent sub",
		"      graph.node inner",
		"        chat scripted",
	}, tree(spans))
	outer := attrs(named(t, spans, "invoke_agent")[0])
	inner := attrs(named(t, spans, "invoke_agent sub")[0])
	require.Equal(t, "", outer[telemetry.AttrNamespace])
	require.NotContains(t, outer, telemetry.AttrAgentName)
	require.Equal(t, "sub", inner[telemetry.AttrAgentName])
	require.True(t, strings.HasPrefix(inner[telemetry.AttrNamespace].(string), "outer:"), inner[telemetry.AttrNamespace])
}

// A tool that asks a human pauses the run: its execute_tool span ends as
// interrupted, with no error status and no exception event.
func TestInterruptedToolCallIsNotAnError(t *testing.T) {
	tp, exp := newProvider(t)
	refund := tools.New("refund", "Refunds an order.", func(ctx context.Context, _ struct{}) (string, error) {
		ok, err := graph.InterruptAs[bool](ctx, "refund?")
		if err != nil {
			return "", err
		}
		return fmt.Sprint(ok), nil
	})
	model := llm.NewScripted(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "refund", `{}`)}}, llm.Reply{Text: "done"})
	g, err := agent.NewReAct(model, []tools.Tool{refund},
		agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithCompileOptions(telemetry.Instrument(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("refund my order"))}, graph.WithThread("t"))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)

	s := named(t, exp.GetSpans(), "execute_tool refund")
	require.Len(t, s, 1)
	require.Equal(t, codes.Unset, s[0].Status.Code)
	require.Empty(t, s[0].Events, "no exception event")
	require.Equal(t, true, attrs(s[0])[telemetry.AttrInterrupted])
}

// A tool traced by the wrapper (telemetry.Tools, without Instrument) that
// asks a human ends its execute_tool span as interrupted too.
func TestInterruptedWrappedToolCallIsNotAnError(t *testing.T) {
	tp, exp := newProvider(t)
	refund := tools.New("refund", "Refunds an order.", func(ctx context.Context, _ struct{}) (string, error) {
		ok, err := graph.InterruptAs[bool](ctx, "refund?")
		if err != nil {
			return "", err
		}
		return fmt.Sprint(ok), nil
	})
	model := llm.NewScripted(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "refund", `{}`)}}, llm.Reply{Text: "done"})
	g, err := agent.NewReAct(model, telemetry.Tools([]tools.Tool{refund}, tp),
		agent.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("refund my order"))}, graph.WithThread("t"))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)

	s := named(t, exp.GetSpans(), "execute_tool refund")
	require.Len(t, s, 1)
	require.Equal(t, codes.Unset, s[0].Status.Code)
	require.Empty(t, s[0].Events, "no exception event")
	require.Equal(t, true, attrs(s[0])[telemetry.AttrInterrupted])
}
