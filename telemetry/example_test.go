package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/telemetry"
	"github.com/agentgraph/agentgraph/tools"
)

// A ReAct agent traced with one option. A program would export to an
// OpenTelemetry collector, Langfuse or Phoenix (sdktrace.WithBatcher with
// an OTLP exporter); the example keeps the spans in memory to print them.
func ExampleInstrument() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	add := tools.New("add", "Add two integers.", func(ctx context.Context, a struct{ A, B int }) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	})
	model := llm.NewScripted( // stands for llm.New(ctx, "openai:gpt-4o-mini")
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("call_1", "add", `{"A":2,"B":3}`)},
			Usage: llm.Usage{PromptTokens: 52, CompletionTokens: 18}},
		llm.Reply{Text: "5", Usage: llm.Usage{PromptTokens: 80, CompletionTokens: 2}},
	)
	g, err := agent.NewReAct(model, []tools.Tool{add},
		agent.WithCompileOptions(telemetry.Instrument(tp))) // the one line
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := g.Invoke(context.Background(), agent.ReActState{Messages: state.Msgs(state.Human("2+3?"))}); err != nil {
		fmt.Println(err)
		return
	}

	printTree(exp.GetSpans(), telemetry.AttrInputTokens, telemetry.AttrOutputTokens, telemetry.AttrToolCallID)
	// Output:
	// invoke_agent react
	//   graph.node agent
	//     chat scripted gen_ai.usage.input_tokens=52 gen_ai.usage.output_tokens=18
	//   graph.node tools
	//     execute_tool add gen_ai.tool.call.id=call_1
	//   graph.node agent
	//     chat scripted gen_ai.usage.input_tokens=80 gen_ai.usage.output_tokens=2
}

// printTree prints spans under their parents, in the order they started,
// with the values of keys they have.
func printTree(spans tracetest.SpanStubs, keys ...attribute.Key) {
	slices.SortStableFunc(spans, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	var walk func(parent trace.SpanID, depth int)
	walk = func(parent trace.SpanID, depth int) {
		for _, s := range spans {
			if s.Parent.SpanID() != parent {
				continue
			}
			line := strings.Repeat("  ", depth) + s.Name
			for _, k := range keys {
				for _, kv := range s.Attributes {
					if kv.Key == k {
						line += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.Emit())
					}
				}
			}
			fmt.Println(line)
			walk(s.SpanContext.SpanID(), depth+1)
		}
	}
	walk(trace.SpanID{}, 0)
}
