package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// Span names. A run span is followed by the graph's name when it has one
// ("invoke_agent react"), a node span by the node's ("graph.node agent"), a
// model call span by the requested model ("chat gpt-4o-mini") and a tool
// call span by the tool's ("execute_tool get_weather").
const (
	SpanRun         = "invoke_agent"
	SpanNode        = "graph.node"
	SpanChat        = "chat"
	SpanExecuteTool = "execute_tool"
)

// Attribute keys of the spans. The gen_ai.* and error.type keys are those of
// OpenTelemetry's GenAI semantic conventions; the others are this SDK's.
const (
	// AttrOperation is the GenAI operation: "invoke_agent" (a run),
	// "chat" (a model call) or "execute_tool" (a tool call).
	AttrOperation = attribute.Key("gen_ai.operation.name")
	// AttrAgentName is the graph's name (graph.WithName), on run spans;
	// absent when the graph has none.
	AttrAgentName = attribute.Key("gen_ai.agent.name")
	// AttrConversation is the run's thread (graph.WithThread), on run and
	// model call spans; absent without one.
	AttrConversation = attribute.Key("gen_ai.conversation.id")
	// AttrErrorType classifies the error of a failed span: the HTTP status
	// of a failed model call ("429"), "timeout", "canceled", "panic",
	// "invalid_arguments" (a tool's) or "_OTHER".
	AttrErrorType = attribute.Key("error.type")

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
	// AttrInterrupted is set on a task, run or tool call that paused on an
	// interrupt (such a span ends without an error status).
	AttrInterrupted = attribute.Key("graph.interrupted")

	// AttrProvider is the provider serving the model: "openai",
	// "anthropic", "gcp.gemini" (googleai), "ollama", "openai-compatible"
	// or "scripted"; absent when unknown.
	AttrProvider = attribute.Key("gen_ai.provider.name")
	// AttrRequestModel is the requested model ("gpt-4o-mini").
	AttrRequestModel = attribute.Key("gen_ai.request.model")
	// AttrTemperature is the call's temperature, when set.
	AttrTemperature = attribute.Key("gen_ai.request.temperature")
	// AttrMaxTokens is the call's output token limit, when set.
	AttrMaxTokens = attribute.Key("gen_ai.request.max_tokens")
	// AttrStopSequences are the call's stop sequences, when set.
	AttrStopSequences = attribute.Key("gen_ai.request.stop_sequences")
	// AttrStream is true when the answer was streamed (a token sink was
	// set, as inside a graph node); absent otherwise.
	AttrStream = attribute.Key("gen_ai.request.stream")
	// AttrInputTokens are the input tokens of a model call (the prompt
	// tokens of [llm.Usage], cached ones included); absent when the
	// provider reported no usage.
	AttrInputTokens = attribute.Key("gen_ai.usage.input_tokens")
	// AttrOutputTokens are the output tokens of a model call (the
	// completion tokens of [llm.Usage]).
	AttrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	// AttrFinishReasons holds the model's normalised stop reason.
	AttrFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	// AttrToolCalls is the number of tool calls in the model's answer.
	AttrToolCalls = attribute.Key("llm.tool_calls")
	// AttrModelAttempts is the number of provider calls (retries included).
	AttrModelAttempts = attribute.Key("llm.attempts")

	// AttrToolName is the name of the called tool.
	AttrToolName = attribute.Key("gen_ai.tool.name")
	// AttrToolCallID is the ID of the model's tool call, when known.
	AttrToolCallID = attribute.Key("gen_ai.tool.call.id")
	// AttrToolDescription is the tool's description.
	AttrToolDescription = attribute.Key("gen_ai.tool.description")
	// AttrToolType is the kind of tool: always "function".
	AttrToolType = attribute.Key("gen_ai.tool.type")
)

// Option configures [Instrument] and the other functions of this package;
// each uses the options that apply to it.
type Option func(*config)

type config struct {
	modelName string
}

// WithModelName sets the name [Model] records, "provider:model" or
// "model". By default it is the model's String method (the spec given to
// llm.New), "scripted" for an [*llm.Scripted], or the model's Go type.
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

// Instrument returns the compile option that traces a graph with tp: its
// runs, its node tasks, and the model and tool calls made inside them. It
// is graph.WithHooks([Hooks](tp, opts...)): other hooks given with
// graph.WithHooks run beside it (in the order given). With a nil tp
// nothing is traced.
func Instrument(tp trace.TracerProvider, opts ...Option) graph.CompileOption {
	return graph.WithHooks(Hooks(tp, opts...))
}

// Hooks returns the graph hooks [Instrument] sets, for a program that
// combines them with hooks of its own. They start an "invoke_agent" span
// per run (a subgraph's run included) and a "graph.node" span per task,
// its child, and attach [llm.CallHooks] and [tools.CallHooks] to the run's
// context, which trace the calls of this SDK's models and of
// [tools.ToolNode]s as children of the task's span. With a nil tp it
// returns empty hooks.
func Hooks(tp trace.TracerProvider, opts ...Option) graph.Hooks {
	if tp == nil {
		return graph.Hooks{}
	}
	t := &tracer{tr: tp.Tracer(ScopeName)}
	return graph.Hooks{RunStart: t.runStart, RunEnd: t.runEnd, TaskStart: t.taskStart, TaskEnd: t.taskEnd}
}

// Model returns m with every Generate call traced as a "chat" span, for
// models called outside an instrumented graph (or models of your own that
// do not call [llm.ObserveCall]). In an instrumented graph, a call of an
// llm model through the wrapper gives one span, not two. With a nil tp it
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
	provider, model := "", name
	if p, rest, ok := strings.Cut(name, ":"); ok && rest != "" && slices.Contains(specKinds, p) {
		provider, model = p, rest
	} else if name == "scripted" {
		provider = "scripted"
	}
	return &tracedModel{m: m, t: &tracer{tr: tp.Tracer(ScopeName)}, name: name, provider: provider, model: model}
}

// specKinds are the provider kinds of llm.New's specs, which a model name
// may start with ("openai:gpt-4o-mini").
var specKinds = []string{"openai", "anthropic", "googleai", "ollama", "openai-compatible"}

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
	m                     llm.Model
	t                     *tracer
	name, provider, model string
}

// Generate implements [llm.Model].
func (m *tracedModel) Generate(ctx context.Context, msgs []state.Message, opts ...llm.CallOption) (resp *llm.Response, err error) {
	call := llm.CallInfo{Name: m.name, Provider: m.provider, Model: m.model, Options: llm.NewCallOptions(opts...), Messages: msgs}
	ctx = m.t.modelStart(ctx, call)
	defer func() {
		if v := recover(); v != nil {
			m.t.modelEnd(ctx, call, nil, &panicError{v})
			panic(v)
		}
	}()
	resp, err = m.m.Generate(ctx, msgs, opts...)
	m.t.modelEnd(ctx, call, resp, err)
	return resp, err
}

// String returns the name of the model.
func (m *tracedModel) String() string { return m.name }

// Tool returns t with every call traced as an "execute_tool" span, for
// tools called outside a [tools.ToolNode] of an instrumented graph. Inside
// one, a call through the wrapper gives one span, not two. With a nil tp
// it returns t.
func Tool(t tools.Tool, tp trace.TracerProvider, opts ...Option) tools.Tool {
	if tp == nil || t == nil {
		return t
	}
	return &tracedTool{Tool: t, t: &tracer{tr: tp.Tracer(ScopeName)}}
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
	t *tracer
}

// Call implements [tools.Tool].
func (t *tracedTool) Call(ctx context.Context, args json.RawMessage) (out string, err error) {
	call := tools.CallInfo{Tool: t.Tool, CallID: tools.CallID(ctx), Args: args}
	ctx = t.t.toolStart(ctx, call)
	defer func() {
		if v := recover(); v != nil {
			t.t.toolEnd(ctx, call, "", &panicError{v})
			panic(v)
		}
	}()
	out, err = t.Tool.Call(ctx, args)
	t.t.toolEnd(ctx, call, out, err)
	return out, err
}

// tracer makes the spans of this package.
type tracer struct {
	tr trace.Tracer
}

// Context keys. installedKey marks a context whose model and tool calls
// are already observed by this package; conversationKey holds the run's
// thread. modelSpanKey and toolSpanKey hold the span this package started
// for the current model or tool call (a nil one when it left the call to
// a span it had already started), for the End hook and to trace a call
// once when both a wrapper and a hook see it.
type (
	installedKey    struct{}
	conversationKey struct{}
	modelSpanKey    struct{}
	toolSpanKey     struct{}
)

// callSpan is the value of modelSpanKey and toolSpanKey.
type callSpan struct {
	span trace.Span // nil when the call is traced by an enclosing span
	sc   trace.SpanContext
}

// tracedAlready reports whether the current span of ctx is the one this
// package started for the call under key: a wrapper around a model or a
// tool whose own hook (or the reverse) sees the same call.
func tracedAlready(ctx context.Context, key any) bool {
	c, ok := ctx.Value(key).(callSpan)
	return ok && c.span != nil && c.sc.Equal(trace.SpanContextFromContext(ctx))
}

func (t *tracer) runStart(ctx context.Context, run graph.RunInfo) context.Context {
	if ctx.Value(installedKey{}) == nil {
		ctx = context.WithValue(ctx, installedKey{}, true)
		ctx = llm.ContextWithCallHooks(ctx, llm.CallHooks{Start: t.modelStart, End: t.modelEnd})
		ctx = tools.ContextWithCallHooks(ctx, tools.CallHooks{Start: t.toolStart, End: t.toolEnd})
	}
	name := SpanRun
	attrs := []attribute.KeyValue{AttrOperation.String(SpanRun), AttrNamespace.String(run.Namespace)}
	if run.Graph != "" {
		name += " " + run.Graph
		attrs = append(attrs, AttrAgentName.String(run.Graph))
	}
	if run.ThreadID != "" {
		ctx = context.WithValue(ctx, conversationKey{}, run.ThreadID)
		attrs = append(attrs, AttrConversation.String(run.ThreadID))
	}
	ctx, _ = t.tr.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx
}

func (t *tracer) runEnd(ctx context.Context, run graph.RunInfo, err error) {
	span := trace.SpanFromContext(ctx)
	if _, ok := errors.AsType[*graph.Interrupted](err); ok {
		span.SetAttributes(AttrInterrupted.Bool(true))
		err = nil
	}
	end(span, err)
}

func (t *tracer) taskStart(ctx context.Context, task graph.TaskRun) context.Context {
	ctx, _ = t.tr.Start(ctx, SpanNode+" "+task.Node, trace.WithAttributes(
		AttrNode.String(task.Node),
		AttrStep.Int(task.Step),
		AttrTaskID.String(task.TaskID),
		AttrNamespace.String(task.Namespace),
	))
	return ctx
}

func (t *tracer) taskEnd(ctx context.Context, task graph.TaskRun, err error) {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(AttrAttempts.Int(task.Attempts), AttrInterrupted.Bool(task.Interrupted))
	end(span, err)
}

func (t *tracer) modelStart(ctx context.Context, call llm.CallInfo) context.Context {
	if tracedAlready(ctx, modelSpanKey{}) {
		return context.WithValue(ctx, modelSpanKey{}, callSpan{})
	}
	attrs := []attribute.KeyValue{AttrOperation.String(SpanChat), AttrRequestModel.String(call.Model)}
	if p := providerName(call.Provider); p != "" {
		attrs = append(attrs, AttrProvider.String(p))
	}
	if id, _ := ctx.Value(conversationKey{}).(string); id != "" {
		attrs = append(attrs, AttrConversation.String(id))
	}
	o := call.Options
	if o.Temperature != nil {
		attrs = append(attrs, AttrTemperature.Float64(*o.Temperature))
	}
	if o.MaxTokens > 0 {
		attrs = append(attrs, AttrMaxTokens.Int(o.MaxTokens))
	}
	if len(o.StopWords) > 0 {
		attrs = append(attrs, AttrStopSequences.StringSlice(o.StopWords))
	}
	if o.TokenSink != nil {
		attrs = append(attrs, AttrStream.Bool(true))
	}
	ctx, span := t.tr.Start(ctx, SpanChat+" "+call.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, modelSpanKey{}, callSpan{span: span, sc: span.SpanContext()})
}

func (t *tracer) modelEnd(ctx context.Context, call llm.CallInfo, resp *llm.Response, err error) {
	c, _ := ctx.Value(modelSpanKey{}).(callSpan)
	if c.span == nil {
		return
	}
	if err == nil && resp != nil {
		if !resp.Usage.IsZero() {
			c.span.SetAttributes(AttrInputTokens.Int(resp.Usage.PromptTokens), AttrOutputTokens.Int(resp.Usage.CompletionTokens))
		}
		if resp.StopReason != "" {
			c.span.SetAttributes(AttrFinishReasons.StringSlice([]string{resp.StopReason}))
		}
		c.span.SetAttributes(AttrToolCalls.Int(len(resp.Message.ToolCalls())), AttrModelAttempts.Int(resp.Attempts))
	}
	end(c.span, err)
}

func (t *tracer) toolStart(ctx context.Context, call tools.CallInfo) context.Context {
	if tracedAlready(ctx, toolSpanKey{}) {
		return context.WithValue(ctx, toolSpanKey{}, callSpan{})
	}
	name := call.Tool.Name()
	attrs := []attribute.KeyValue{
		AttrOperation.String(SpanExecuteTool),
		AttrToolName.String(name),
		AttrToolType.String("function"),
	}
	if d := call.Tool.Description(); d != "" {
		attrs = append(attrs, AttrToolDescription.String(d))
	}
	if call.CallID != "" {
		attrs = append(attrs, AttrToolCallID.String(call.CallID))
	}
	ctx, span := t.tr.Start(ctx, SpanExecuteTool+" "+name, trace.WithAttributes(attrs...))
	return context.WithValue(ctx, toolSpanKey{}, callSpan{span: span, sc: span.SpanContext()})
}

func (t *tracer) toolEnd(ctx context.Context, call tools.CallInfo, out string, err error) {
	if c, _ := ctx.Value(toolSpanKey{}).(callSpan); c.span != nil {
		if graph.IsInterrupt(err) {
			// A tool that asks a human pauses; it has not failed.
			c.span.SetAttributes(AttrInterrupted.Bool(true))
			err = nil
		}
		end(c.span, err)
	}
}

// providerName maps the provider of [llm.CallInfo] onto the values of
// gen_ai.provider.name.
func providerName(p string) string {
	switch p {
	case "googleai":
		return "gcp.gemini"
	case "generic":
		return ""
	default:
		return p
	}
}

// end ends span, recording err (if any) as its error status.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(AttrErrorType.String(errorType(err)))
	}
	span.End()
}

// errorType classifies err for error.type; see [AttrErrorType].
func errorType(err error) string {
	if e, ok := errors.AsType[*llm.Error](err); ok && e.StatusCode > 0 {
		return strconv.Itoa(e.StatusCode)
	}
	if _, ok := errors.AsType[*tools.PanicError](err); ok {
		return "panic"
	}
	if _, ok := errors.AsType[*tools.ArgumentError](err); ok {
		return "invalid_arguments"
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, llm.ErrTimeout):
		return "timeout"
	}
	if _, ok := errors.AsType[*tools.TimeoutError](err); ok {
		return "timeout"
	}
	if _, ok := errors.AsType[*panicError](err); ok {
		return "panic"
	}
	return "_OTHER"
}

// panicError is recorded on the span of a wrapped model or tool that
// panicked, before the panic goes on.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.v) }
