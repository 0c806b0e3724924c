// Package telemetry traces graph runs, model calls and tool calls with
// OpenTelemetry. Nothing is traced unless a trace.TracerProvider is given:
// with a nil provider [Hooks] returns empty hooks and [Model] and [Tool]
// return what they were given.
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
//	model = telemetry.Model(model, tp)
//	ts = telemetry.Tools(ts, tp)
//	g, err := b.Compile(graph.WithHooks(telemetry.Hooks(tp)))
//
// or, for the prebuilt agent:
//
//	g, err := agent.NewReAct(telemetry.Model(model, tp), telemetry.Tools(ts, tp),
//		agent.WithCompileOptions(graph.WithHooks(telemetry.Hooks(tp))))
//
// # Spans
//
// Spans nest through the context, so a run of the ReAct agent gives
//
//	graph.run                    graph.name, graph.thread_id, graph.namespace
//	├── graph.node agent         graph.node, graph.step, graph.task_id, graph.attempts, graph.interrupted
//	│   └── llm.generate         gen_ai.request.model, gen_ai.usage.input_tokens / output_tokens / total_tokens
//	├── graph.node tools
//	│   └── tool.call get_weather gen_ai.tool.name, gen_ai.tool.call.id
//	└── graph.node agent
//	    └── llm.generate
//
// A subgraph compiled with the hooks too adds its own "graph.run" span
// under the node that runs it. A failed node, model call or tool call
// records the error on its span and sets the span's status to Error; a run
// fails the same way, while a run that pauses on an interrupt ends with
// graph.interrupted set and status Unset. The attribute keys are the Attr* constants; model and tool
// attributes follow OpenTelemetry's GenAI semantic conventions (input and
// output tokens are the prompt and completion tokens of [llm.Usage]).
// Prompts, answers and tool arguments are not recorded.
package telemetry
