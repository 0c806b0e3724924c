// Package planexec provides a plan-and-execute agent whose executor is a
// ReAct loop, for any research task: code, documents, the web — whatever
// its tools reach.
//
// A planner breaks the question into steps; an executor carries out a
// step with the tools, calling the model and the tools in turn until the
// model answers; the step's tool results and answer become a finding; a
// refinery decides whether the findings suffice or the planner must plan
// again, for the missing information only; a synthesizer writes the
// answer, in markdown.
//
//	START → planner → setup_executor → executor ⇄ tools
//	           ▲                          │
//	           │                          ▼
//	           └── CONTINUE ── refinery ← aggregate
//	                              │
//	                              └ FINISH → synthesizer → END
//
// [New] builds the graph for a model and tools; [Input] builds a run's
// input; the answer is State.Response:
//
//	g, err := planexec.New(model, []tools.Tool{search, readFile})
//	out, err := g.Invoke(ctx, planexec.Input("How does the cache evict entries?"))
//	fmt.Println(out.Response.Get())
//
// # The nodes
//
// The planner sends [Prompts].Planner (with the question and the findings
// so far) and the chat history to the model, and expects a JSON array of
// steps; code fences and prose around the array are ignored. When the
// answer holds no usable array, the plan is the one step
// Prompts.FallbackStep. Each planner run starts a new iteration and sets
// the current step to the plan's first.
//
// setup_executor removes every message of State.Messages, by ID, and
// appends a system message (Prompts.Executor: the step and the prior
// findings) and a human message (Prompts.ExecutorTask: the step). The
// executor node calls the model with the tools bound on these messages;
// while its answer has tool calls, each call runs in a task of the tools
// node of its own (a tools.ToolNode: a failing tool becomes a tool
// message the model sees), and the executor is called again. The
// aggregate node joins the tool results and the model's final text with
// lines of "---" into State.Findings["step_N: <step>"] (N counts the
// steps of the run, from 1), removes every message, by ID, and moves to
// the next step: no executor message outlives its step.
//
// The refinery sends Prompts.Refine and expects a JSON object
// {"decision": "CONTINUE" or "FINISH", "reason": "…"}; when the answer
// holds no usable decision it continues while the plan has steps left
// and finishes otherwise. On CONTINUE the planner plans again; on FINISH
// the synthesizer answers from the findings (Prompts.Synthesize) and
// appends its answer to State.ChatHistory.
//
// As in the design this agent follows (LangGraph's plan-and-execute with
// a ReAct executor), every cycle carries out the current plan's first
// step only: the refinery then judges the findings, and a new plan is
// made for what is still missing, in the light of what the step found.
// The rest of a plan tells the refinery how much work was foreseen; it is
// carried out only as far as the planner plans it again.
//
// Failing model calls fail the run (with the node's name in the error);
// only unusable answers fall back.
//
// # Safety
//
// Three limits stop a run that would not end:
//
//   - [WithMaxIterations] (default 10): the refinery of the last allowed
//     cycle decides FINISH without asking the model.
//   - [WithMaxExecutorSteps] (default 5): the executor's last allowed
//     model call ends the step, even if it asked for tools.
//   - [WithRecursionLimit] (default 150): the graph's recursion limit, in
//     supersteps; beyond it the run fails with a *graph.RecursionError.
//
// [WithMaxFindingLength] (no limit by default) bounds what one step adds
// to every later prompt: its finding, cut in the middle when longer.
//
// # Events
//
// The nodes write [PlanMade], [StepStarted], [FindingRecorded] and
// [DecisionMade], and an events.ModelCall for every model call, with
// graph.StreamWriter. Stream a run with the modes events.StreamModes and
// give the stream to events.Bridge to publish them with the SDK's events,
// among which the tool calls and their results (see Example_events).
//
// # Persistence and observation
//
// The result is an ordinary compiled graph: [WithCompileOptions] passes
// graph.WithCheckpointer (a thread keeps its chat history, and runs can
// pause at breakpoints or interrupts and resume), graph.WithHooks or
// telemetry.Instrument through to it.
package planexec
