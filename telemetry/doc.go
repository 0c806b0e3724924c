// Package telemetry traces graph runs, model calls and tool calls with
// OpenTelemetry, in the span shapes and attributes of OpenTelemetry's GenAI
// semantic conventions, which GenAI backends such as Langfuse and Phoenix
// read. Nothing is traced unless a trace.TracerProvider is given.
//
// # One line
//
// [Instrument] is a graph.CompileOption; it traces the graph, the models
// and the tools together:
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
//	defer tp.Shutdown(ctx)
//	g, err := b.Compile(telemetry.Instrument(tp))
//
// or, for the prebuilt agent:
//
//	g, err := agent.NewReAct(model, ts, agent.WithCompileOptions(telemetry.Instrument(tp)))
//
// Models and tools are not wrapped. The hooks Instrument sets attach
// [llm.CallHooks] and [tools.CallHooks] to the context of every run, and
// the run's nodes pass that context on: every model of package llm (built
// by llm.New or llm.FromLangchain, and llm.Scripted) reports its calls to
// those hooks, and so does every [tools.ToolNode] (the ReAct agent's
// "tools" node is one) for the tools it runs. A model of your own is traced
// too if its Generate calls [llm.ObserveCall]; otherwise wrap it with
// [Model]. [Model] and [Tool] also trace calls made outside a graph. A call
// seen both by a wrapper and by the hooks gives one span.
//
// Instrument is graph.WithHooks([Hooks](tp)); hooks of the program's own,
// given with graph.WithHooks too, run beside them.
//
// # Spans
//
// Spans nest through the context, so a run of the ReAct agent gives
//
//	invoke_agent react           gen_ai.operation.name=invoke_agent, gen_ai.agent.name, gen_ai.conversation.id, graph.namespace
//	├── graph.node agent         graph.node, graph.step, graph.task_id, graph.attempts, graph.interrupted
//	│   └── chat gpt-4o-mini     gen_ai.operation.name=chat, gen_ai.provider.name, gen_ai.request.model,
//	│                            gen_ai.request.temperature / max_tokens / stop_sequences / stream,
//	│                            gen_ai.usage.input_tokens / output_tokens, gen_ai.response.finish_reasons
//	├── graph.node tools
//	│   └── execute_tool get_weather  gen_ai.operation.name=execute_tool, gen_ai.tool.name,
//	│                                 gen_ai.tool.call.id, gen_ai.tool.description, gen_ai.tool.type
//	└── graph.node agent
//	    └── chat gpt-4o-mini
//
// A run's span is named after the graph (graph.WithName; "react" for the
// ReAct agent) and carries its thread as the conversation. Model call spans
// are of kind client, the others internal. A subgraph compiled with
// Instrument too adds its own "invoke_agent" span under the node that runs
// it; its model and tool calls are traced once. A failed node, model call
// or tool call records the error on its span, sets the span's status to
// Error and its error.type (see [AttrErrorType]); a run fails the same way,
// while a run that pauses on an interrupt ends with graph.interrupted set
// and status Unset. The attribute keys are the Attr* constants.
//
// Not recorded: prompts, answers and tool arguments (the conventions'
// opt-in content attributes), gen_ai.response.model and gen_ai.response.id
// (langchaingo v0.1.14 does not return them), and the provider of a run
// span (a graph may call several).
package telemetry
