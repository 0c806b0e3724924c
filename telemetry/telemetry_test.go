package telemetry_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// tree renders the spans as an indented tree. Siblings are ordered by
// step, then name, then tool call ID, so that the rendering does not
// depend on timing.
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
	order := func(a, b tracetest.SpanStub) int {
		aa, ba := attrs(a), attrs(b)
		return cmp.Or(
			cmp.Compare(aa[telemetry.AttrStep].AsInt64(), ba[telemetry.AttrStep].AsInt64()),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(aa[telemetry.AttrToolCallID].AsString(), ba[telemetry.AttrToolCallID].AsString()),
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

func find(t *testing.T, spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
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

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

var add = tools.New("add", "Add two integers.", func(ctx context.Context, a addArgs) (string, error) {
	return fmt.Sprint(a.A + a.B), nil
})

func TestReActRunSpanTree(t *testing.T) {
	tp, exp := newProvider(t)
	model := llm.NewScripted(
		llm.Reply{
			ToolCalls: []llms.ToolCall{state.ToolCall("c1", "add", `{"a":1,"b":2}`), state.ToolCall("c2", "add", `{"a":3,"b":4}`)},
			Usage:     llm.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14},
		},
		llm.Reply{Text: "3 and 7.", Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 5, TotalTokens: 35}},
	)
	g, err := agent.NewReAct(telemetry.Model(model, tp), telemetry.Tools([]tools.Tool{add}, tp),
		agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithCompileOptions(graph.WithHooks(telemetry.Hooks(tp))))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), agent.ReActState{Messages: state.Msgs(state.Human("sums?"))}, graph.WithThread("t1"))
	require.NoError(t, err)

	spans := exp.GetSpans()
	want := []string{
		"graph.run",
		"  graph.node agent",
		"    llm.generate",
		"  graph.node tools", // one task per tool call
		"    tool.call add",
		"  graph.node tools",
		"    tool.call add",
		"  graph.node agent",
		"    llm.generate",
	}
	require.Empty(t, gocmp.Diff(want, tree(spans)))

	run := attrs(find(t, spans, telemetry.SpanRun)[0])
	require.Equal(t, "react", run[telemetry.AttrGraph].AsString())
	require.Equal(t, "t1", run[telemetry.AttrThread].AsString())
	require.Equal(t, "", run[telemetry.AttrNamespace].AsString())

	var steps []int64
	for _, s := range find(t, spans, "graph.node agent") {
		a := attrs(s)
		steps = append(steps, a[telemetry.AttrStep].AsInt64())
		require.Equal(t, "agent", a[telemetry.AttrNode].AsString())
		require.NotEmpty(t, a[telemetry.AttrTaskID].AsString())
		require.Equal(t, int64(1), a[telemetry.AttrAttempts].AsInt64())
		require.False(t, a[telemetry.AttrInterrupted].AsBool())
		require.Equal(t, codes.Unset, s.Status.Code)
	}
	slices.Sort(steps)
	require.Equal(t, []int64{1, 3}, steps)

	type usage struct{ In, Out, Total, Calls int64 }
	var got []usage
	for _, s := range find(t, spans, telemetry.SpanGenerate) {
		a := attrs(s)
		require.Equal(t, "scripted", a[telemetry.AttrModel].AsString())
		require.Equal(t, trace.SpanKindClient, s.SpanKind)
		got = append(got, usage{a[telemetry.AttrInputTokens].AsInt64(), a[telemetry.AttrOutputTokens].AsInt64(),
			a[telemetry.AttrTotalTokens].AsInt64(), a[telemetry.AttrToolCalls].AsInt64()})
	}
	slices.SortFunc(got, func(a, b usage) int { return cmp.Compare(a.In, b.In) })
	require.Equal(t, []usage{{10, 4, 14, 2}, {30, 5, 35, 0}}, got)

	var callIDs []string
	for _, s := range find(t, spans, "tool.call add") {
		a := attrs(s)
		require.Equal(t, "add", a[telemetry.AttrToolName].AsString())
		callIDs = append(callIDs, a[telemetry.AttrToolCallID].AsString())
	}
	slices.Sort(callIDs)
	require.Equal(t, []string{"c1", "c2"}, callIDs)
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
	g, err := b.Compile(graph.WithHooks(telemetry.Hooks(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{})
	require.ErrorIs(t, err, boom)

	spans := exp.GetSpans()
	require.Equal(t, []string{"graph.run", "  graph.node bad"}, tree(spans))
	for _, s := range spans {
		require.Equal(t, codes.Error, s.Status.Code, s.Name)
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
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithHooks(telemetry.Hooks(tp)))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{}, graph.WithThread("t"))
	_, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "got %v", err)

	for _, s := range exp.GetSpans() {
		require.Equal(t, codes.Unset, s.Status.Code, s.Name)
		require.True(t, attrs(s)[telemetry.AttrInterrupted].AsBool(), s.Name)
	}
}

func TestFailedCallsSetErrorStatus(t *testing.T) {
	providerDown := errors.New("provider down")
	failing := tools.New("fail", "Fails.", func(ctx context.Context, _ struct{}) (string, error) {
		return "", errors.New("no luck")
	})
	panicking := tools.New("panic", "Panics.", func(ctx context.Context, _ struct{}) (string, error) {
		panic("boom")
	})
	tests := []struct {
		name    string
		call    func(tp trace.TracerProvider) error
		span    string
		message string
	}{
		{
			name: "model error",
			call: func(tp trace.TracerProvider) error {
				_, err := telemetry.Model(llm.NewScripted(llm.Reply{Err: providerDown}), tp).Generate(context.Background(), nil)
				return err
			},
			span: "llm.generate", message: "provider down",
		},
		{
			name: "tool error",
			call: func(tp trace.TracerProvider) error {
				_, err := telemetry.Tool(failing, tp).Call(context.Background(), json.RawMessage(`{}`))
				return err
			},
			span: "tool.call fail", message: "no luck",
		},
		{
			name: "tool panic",
			call: func(tp trace.TracerProvider) (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("recovered: %v", v)
					}
				}()
				_, err = telemetry.Tool(panicking, tp).Call(context.Background(), json.RawMessage(`{}`))
				return err
			},
			span: "tool.call panic", message: "panic: boom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			require.Error(t, tt.call(tp))
			spans := exp.GetSpans()
			require.Len(t, spans, 1)
			require.Equal(t, tt.span, spans[0].Name)
			require.Equal(t, codes.Error, spans[0].Status.Code)
			require.Equal(t, tt.message, spans[0].Status.Description)
		})
	}
}

func TestModelNameDefaultsAndOption(t *testing.T) {
	tests := []struct {
		name  string
		model llm.Model
		opts  []telemetry.Option
		want  string
	}{
		{name: "scripted", model: llm.NewScripted(llm.Reply{}), want: "scripted"},
		{name: "option wins", model: llm.NewScripted(llm.Reply{}), opts: []telemetry.Option{telemetry.WithModelName("gpt-test")}, want: "gpt-test"},
		{name: "stringer", model: named{llm.NewScripted(llm.Reply{})}, want: "openai:gpt-4o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			m := telemetry.Model(tt.model, tp, tt.opts...)
			_, err := m.Generate(t.Context(), []state.Message{state.Human("hi")})
			require.NoError(t, err)
			require.Equal(t, tt.want, attrs(exp.GetSpans()[0])[telemetry.AttrModel].AsString())
			require.Equal(t, tt.want, m.(fmt.Stringer).String())
		})
	}
}

type named struct{ llm.Model }

func (named) String() string { return "openai:gpt-4o" }

func TestSubgraphRunNestsUnderItsNode(t *testing.T) {
	tp, exp := newProvider(t)
	hooks := graph.WithHooks(telemetry.Hooks(tp))
	ib := graph.New[simple]()
	ib.AddNode("inner", func(ctx context.Context, s simple) (simple, error) { return simple{N: state.Set(1)}, nil })
	ib.AddEdge(graph.Start, "inner")
	ib.AddEdge("inner", graph.End)
	sub, err := ib.Compile(hooks, graph.WithName("sub"))
	require.NoError(t, err)

	ob := graph.New[simple]()
	ob.AddCommandNode("outer", graph.Subgraph(sub, func(s simple) simple { return s }, func(s simple) simple { return s }))
	ob.AddEdge(graph.Start, "outer")
	ob.AddEdge("outer", graph.End)
	g, err := ob.Compile(hooks)
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), simple{})
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Equal(t, []string{"graph.run", "  graph.node outer", "    graph.run", "      graph.node inner"}, tree(spans))
	namespaces := map[string]string{}
	for _, s := range find(t, spans, telemetry.SpanRun) {
		a := attrs(s)
		namespaces[a[telemetry.AttrGraph].AsString()] = a[telemetry.AttrNamespace].AsString()
	}
	require.Len(t, namespaces, 2)
	require.Empty(t, namespaces[""])
	require.True(t, strings.HasPrefix(namespaces["sub"], "outer:"), namespaces["sub"])
}
