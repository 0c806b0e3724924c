// Package agent provides prebuilt agent graphs for any model and tools.
//
// [NewReAct] builds LangGraph's ReAct agent (create_react_agent): a model
// that may call tools, in a loop with a [tools.ToolNode] that runs them,
// until the model answers without tool calls.
//
//	          ┌────────── tool calls ─────────┐
//	START → agent                            tools
//	          │   ▲────────────────────────────┘
//	          └→ END (no tool calls)
//
// The state is [ReActState], a conversation with add_messages semantics:
//
//	model, err := llm.New(ctx, "openai:gpt-4o-mini")
//	weather := tools.New("get_weather", "Current weather of a city.",
//		func(ctx context.Context, a struct{ City string `json:"city"` }) (string, error) {
//			return "sunny in " + a.City, nil
//		})
//	g, err := agent.NewReAct(model, []tools.Tool{weather},
//		agent.WithSystemPrompt("You are terse."))
//	out, err := g.Invoke(ctx, agent.ReActState{Messages: state.Msgs(state.Human("Weather in Paris?"))})
//	answer, _ := out.Messages.Last()
//
// The "agent" node sends the whole conversation (after the system prompt,
// if any) to the model with the tools' definitions bound, and appends the
// model's AI message. Its tokens are streamed to the run's messages stream
// (graph.ModeMessages) with the ID of that message. Each tool call of the
// last AI message is a "tools" task of its own (a Send, see
// [tools.SendCondition]); the tasks run concurrently and each appends one
// tool message, in call order; tool failures become error messages the
// model sees (see [tools.ToolNode]). A run resumed after a crash runs only
// the calls whose results were not saved.
//
// Like LangGraph's, the agent stops gracefully near the recursion limit:
// when fewer than two supersteps remain ([graph.RemainingSteps]) and the
// model still wants tools, it appends the AI message [NeedMoreSteps]
// instead of the tool calls, and the run ends normally. The agent and the
// tools alternate, so for a fresh input this catches the agent with one
// step left when the recursion limit is even; with an odd limit its last
// call falls on the very last step and the run still fails with a
// *graph.RecursionError, exactly as in LangGraph.
//
// The result is an ordinary compiled graph: stream it, checkpoint it
// ([WithCheckpointer]), observe it ([WithCompileOptions] with
// graph.WithHooks, for example with package telemetry), or use it as a
// subgraph.
//
// # Approving tool calls
//
// [WithToolApproval] makes the agent ask a human before it runs a call of
// the named tools: the run pauses in the [ApprovalNode] with one interrupt
// per model message, whose payload is an [ApprovalRequest], and goes on
// when [graph.Graph.Resume] gets a []Decision — [Approve], [Edit] (other
// arguments) or [Reject] (a message for the model) per call. The agent
// needs a checkpointer; with a persistent one (SQLite, PostgreSQL) another
// process may give the answer. New input on a thread waiting for approval
// drops the request, as in LangGraph, unless the runs refuse it with
// graph.RefuseInputWhileInterrupted. The guide docs/guides/approve-tool-call.md
// builds a support agent with it.
//
// A tool may also ask a human itself, with graph.Interrupt: the "tools"
// node lets the pause through, the run pauses, and the tool runs again,
// with the answer, when the run is resumed.
//
// # Plan and execute
//
// Package [github.com/agentgraph/agentgraph/agent/planexec] is a
// plan-and-execute agent whose executor is a ReAct loop, for research
// tasks with any tools: a planner writes a JSON list of steps, each step
// runs as a model ⇄ tools loop on a message buffer cleared (by message
// ID) before and after it, its tool results and answer become a finding,
// and a refinery decides to plan again for what is missing or to let a
// synthesizer write the markdown answer:
//
//	START → planner → setup_executor → executor ⇄ tools
//	           ▲                          │
//	           └── CONTINUE ── refinery ← aggregate
//	                              └ FINISH → synthesizer → END
//
// Its prompts are replaceable (planexec.Prompts), unusable JSON answers
// fall back to a generic step or to the plan's progress, and three limits
// bound a run: cycles (planexec.WithMaxIterations, default 10), model
// calls per step (planexec.WithMaxExecutorSteps, default 5) and
// supersteps (planexec.WithRecursionLimit, default 150). It publishes its
// plan, steps, findings and decisions as events of its own kinds through
// events.Bridge, and takes any graph.CompileOption (a checkpointer,
// breakpoints, telemetry.Instrument) with planexec.WithCompileOptions.
//
// # Middleware
//
// Package [github.com/agentgraph/agentgraph/agent/middleware] wraps what
// an agent calls. Model middleware (retries with backoff, call limits per
// run or thread, fallback models, trimming or summarising the
// conversation) wraps an llm.Model, tool middleware (retries, call limits,
// errors as text) a tools.Tool, so both work with any agent:
//
//	model := middleware.WrapModel(base, middleware.ModelRetry(), middleware.Fallback(backup))
//	g, err := agent.NewReAct(model, middleware.WrapTools(ts, middleware.ToolCallLimit(middleware.WithRunLimit(20))),
//		agent.WithCompileOptions(middleware.RunScope()))
//
// Node middleware wraps the nodes of any graph (graph.Builder.Use; here
// [WithNodeMiddleware]): middleware.HandleErrors catches a node's error,
// counts it per node in a working memory kept in the state, runs the node
// again up to three times and then answers the user instead of failing
// the run.
//
// # The intent-routed coder
//
// Package [github.com/agentgraph/agentgraph/agent/coder] routes each
// request by intent — read, edit, run_command, profile, or one of your
// own — first by patterns, at no model call, then by the model; it keeps
// working, session and persistent memory, and after an edit runs the
// project's tests and edits again until they pass (at most three
// attempts).
//
// Agents with dependencies of their own live in subpackages, so that a
// program using [NewReAct] links only the graph, model and tool packages:
// package [github.com/agentgraph/agentgraph/agent/retrai] is the retrAI
// coding agent, with the goals of package goals.
package agent
