package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// ScopeName is the instrumentation scope of the tracers this package
// creates.
const ScopeName = "github.com/agentgraph/agentgraph/telemetry"

// Span names. Node and tool spans append the node's or the tool's name
// after a space: "graph.node agent", "tool.call get_weather".
const (
	SpanRun      = "graph.run"
	SpanNode     = "graph.node"
	SpanGenerate = "llm.generate"
	SpanToolCall = "tool.call"
)

// Attribute keys of the spans.
const (
	// AttrGraph is the graph's name (graph.WithName); absent when unnamed.
	AttrGraph = attribute.Key("graph.name")
	// AttrThread is the run's thread ("" without a checkpointer).
	AttrThread = attribute.Key("graph.thread_id")
	// AttrNamespace is the subgraph path of the run or task ("" for the
	// root graph).
	AttrNamespace = attribute.Key("graph.namespace")
	// AttrNode is the node a task runs.
	AttrNode = attribute.Key("graph.node")
	// AttrStep is the superstep of a task.
	AttrStep = attribute.Key("graph.step")
	// AttrTaskID is the task's ID.
	AttrTaskID = attribute.Key("graph.task_id")
	// AttrAttempts is how many times the node ran (retries included).
	AttrAttempts = attribute.Key("graph.attempts")
	// AttrInterrupted is set on a task or run that paused on an interrupt.
	AttrInterrupted = attribute.Key("graph.interrupted")

	// AttrOperation is the GenAI operation: "chat" or "execute_tool".
	AttrOperation = attribute.Key("gen_ai.operation.name")
	// AttrModel is the model's name.
	AttrModel = attribute.Key("gen_ai.request.model")
	// AttrInputTokens are the prompt tokens of a model call.
	AttrInputTokens = attribute.Key("gen_ai.usage.input_tokens")
	// AttrOutputTokens are the completion tokens of a model call.
	AttrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	// AttrTotalTokens are the total tokens of a model call.
	AttrTotalTokens = attribute.Key("gen_ai.usage.total_tokens")
	// AttrFinishReasons holds the model's normalised stop reason.
	AttrFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	// AttrToolCalls is the number of tool calls in the model's answer.
	AttrToolCalls = attribute.Key("llm.tool_calls")
	// AttrModelAttempts is the number of provider calls (retries included).
	AttrModelAttempts = attribute.Key("llm.attempts")
	// AttrToolName is the name of the called tool.
	AttrToolName = attribute.Key("gen_ai.tool.name")
	// AttrToolCallID is the ID of the tool call, when the tool runs in a
	// [tools.ToolNode].
	AttrToolCallID = attribute.Key("gen_ai.tool.call.id")
)

// Option configures the wrappers of this package; each uses the options
// that apply to it.
type Option func(*config)

type config struct {
	modelName string
}

// WithModelName sets the model name [Model] records. By default it is the
// model's String method (the spec given to llm.New), "scripted" for an
// [*llm.Scripted], or the model's Go type.
func WithModelName(name string) Option {
	return func(c *config) { c.modelName = name }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

func tracer(tp trace.TracerProvider) trace.Tracer { return tp.Tracer(ScopeName) }

// end ends span, recording err (if any) as its error status.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endOnPanic ends span as failed if the traced call panics, and lets the
// panic go on.
func endOnPanic(span trace.Span) {
	if v := recover(); v != nil {
		end(span, fmt.Errorf("panic: %v", v))
		panic(v)
	}
}

// Hooks returns graph hooks that trace every run and node task: a
// "graph.run" span per run (a subgraph's run included) and a
// "graph.node <name>" span per task, its child. Work a node does with its
// context (model and tool calls) nests under the task's span. With a nil tp
// it returns empty hooks.
func Hooks(tp trace.TracerProvider, opts ...Option) graph.Hooks {
	if tp == nil {
		return graph.Hooks{}
	}
	tr := tracer(tp)
	return graph.Hooks{
		RunStart: func(ctx context.Context, run graph.RunInfo) context.Context {
			attrs := []attribute.KeyValue{AttrThread.String(run.ThreadID), AttrNamespace.String(run.Namespace)}
			if run.Graph != "" {
				attrs = append(attrs, AttrGraph.String(run.Graph))
			}
			ctx, _ = tr.Start(ctx, SpanRun, trace.WithAttributes(attrs...))
			return ctx
		},
		RunEnd: func(ctx context.Context, run graph.RunInfo, err error) {
			span := trace.SpanFromContext(ctx)
			if _, ok := errors.AsType[*graph.Interrupted](err); ok {
				span.SetAttributes(AttrInterrupted.Bool(true))
				err = nil
			}
			end(span, err)
		},
		TaskStart: func(ctx context.Context, task graph.TaskRun) context.Context {
			ctx, _ = tr.Start(ctx, SpanNode+" "+task.Node, trace.WithAttributes(
				AttrNode.String(task.Node),
				AttrStep.Int(task.Step),
				AttrTaskID.String(task.TaskID),
				AttrNamespace.String(task.Namespace),
			))
			return ctx
		},
		TaskEnd: func(ctx context.Context, task graph.TaskRun, err error) {
			span := trace.SpanFromContext(ctx)
			span.SetAttributes(AttrAttempts.Int(task.Attempts), AttrInterrupted.Bool(task.Interrupted))
			end(span, err)
		},
	}
}

// Model returns m with every Generate call traced as an "llm.generate"
// span (kind client) carrying the model's name, the token usage, the stop
// reason, the number of tool calls and of attempts. With a nil tp it
// returns m.
//
// The wrapper hides m from llm.Unwrap.
func Model(m llm.Model, tp trace.TracerProvider, opts ...Option) llm.Model {
	if tp == nil || m == nil {
		return m
	}
	cfg := newConfig(opts)
	name := cfg.modelName
	if name == "" {
		name = modelName(m)
	}
	return &tracedModel{m: m, tr: tracer(tp), name: name}
}

func modelName(m llm.Model) string {
	switch m := m.(type) {
	case *llm.Scripted:
		return "scripted"
	case fmt.Stringer:
		return m.String()
	default:
		return fmt.Sprintf("%T", m)
	}
}

type tracedModel struct {
	m    llm.Model
	tr   trace.Tracer
	name string
}

// Generate implements [llm.Model].
func (t *tracedModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (*llm.Response, error) {
	ctx, span := t.tr.Start(ctx, SpanGenerate, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		AttrOperation.String("chat"),
		AttrModel.String(t.name),
	))
	defer endOnPanic(span)
	resp, err := t.m.Generate(ctx, msgs, opts...)
	if err == nil {
		span.SetAttributes(
			AttrInputTokens.Int(resp.Usage.PromptTokens),
			AttrOutputTokens.Int(resp.Usage.CompletionTokens),
			AttrTotalTokens.Int(resp.Usage.TotalTokens),
			AttrFinishReasons.StringSlice([]string{resp.StopReason}),
			AttrToolCalls.Int(len(resp.Message.ToolCalls())),
			AttrModelAttempts.Int(resp.Attempts),
		)
	}
	end(span, err)
	return resp, err
}

// String returns the name of the model.
func (t *tracedModel) String() string { return t.name }

// Tool returns t with every call traced as a "tool.call <name>" span
// carrying the tool's name and, inside a [tools.ToolNode], the call's ID.
// With a nil tp it returns t.
func Tool(t tools.Tool, tp trace.TracerProvider, opts ...Option) tools.Tool {
	if tp == nil || t == nil {
		return t
	}
	return &tracedTool{Tool: t, tr: tracer(tp)}
}

// Tools applies [Tool] to each of ts, in a new slice.
func Tools(ts []tools.Tool, tp trace.TracerProvider, opts ...Option) []tools.Tool {
	if ts == nil {
		return nil
	}
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = Tool(t, tp, opts...)
	}
	return out
}

type tracedTool struct {
	tools.Tool
	tr trace.Tracer
}

// Call implements [tools.Tool].
func (t *tracedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	name := t.Name()
	attrs := []attribute.KeyValue{AttrOperation.String("execute_tool"), AttrToolName.String(name)}
	if id := tools.CallID(ctx); id != "" {
		attrs = append(attrs, AttrToolCallID.String(id))
	}
	ctx, span := t.tr.Start(ctx, SpanToolCall+" "+name, trace.WithAttributes(attrs...))
	defer endOnPanic(span)
	out, err := t.Tool.Call(ctx, args)
	end(span, err)
	return out, err
}
