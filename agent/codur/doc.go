// Package codur is a coding assistant that plans in three phases,
// delegates to agents, and verifies and repairs what they did — a Go
// rendering of the Python Codur's orchestration on package graph.
//
// # The graph
//
//	textual_pre_plan → llm_pre_plan → llm_plan → delegate → execute → review
//	each phase may route straight to delegate, tool or END; tool → review;
//	review → textual_pre_plan (another iteration) or END
//
// The nodes:
//
//   - textual_pre_plan ([TextualPrePlanNode]) recognises obvious tasks by
//     their wording, without a model: greetings end the run with an
//     answer; "read a.py", "move A to B", "copy A to B", "delete F",
//     "replace X with Y in F", "write 'x' to F", "list files" become tool
//     calls; a task starting with a registered agent ("agent:claude …")
//     is delegated to it.
//   - llm_pre_plan asks the planner model for a quick classification with
//     a confidence. It acts only at [DefaultPrePlanConfidence] (0.9) or
//     more, and never for a task that changes code: by the model's task
//     type (any case), by the task's wording (word stems, see
//     [IsCodeTask]), or by its planned calls — a change to a source file,
//     to any file when the workspace has an expected output or the run
//     verifies, or a command. The original's 0.8 routed complex tasks
//     wrongly.
//   - llm_plan asks for a JSON decision {action, agent, reasoning,
//     response, tool_calls}; an answer that is not usable JSON, an unknown
//     action, agent or tool falls back to delegating to the default agent.
//   - execute runs the agent with a tool loop of at most
//     [DefaultMaxToolRounds] rounds. Tool calls come from the model's
//     native calls or, for agents that only write text, from the
//     [Detector]: JSON objects, fenced blocks, <tool_call> tags and
//     tool(args) lines, with the tool names and argument names agents use
//     mapped to this SDK's; optionally ([WithToolCallExtraction]) the
//     planner model extracts the calls of an answer that only describes
//     them.
//   - review first puts back the protected files (expected.txt and the
//     cases, snapshotted before the first iteration) an agent changed,
//     and reports it ([Verification].Restored, [State].Restored). It
//     verifies every run that went through the planner or an agent
//     (an explicit file operation of a pre-plan phase is not, unless the
//     run asks for it) with a [Verifier]: it runs main.py or main.go in a
//     scratch copy of the workspace without the expected outputs, and
//     compares with expected.txt read once at the start — and runs every
//     [Case] too (arguments, input, expected output; hidden ones are never
//     shown to the agent). A pass is attributed ([State].Solved): the
//     agent, a planning model's tool calls, the textual pre-plan, or a
//     local repair. On failure it tries cheap local
//     repairs first ([DefaultRepairs]: 13 mutation patterns, alone and in
//     pairs, those the agent's answer hints at first, within
//     [DefaultRepairBudget] runs and [DefaultRepairTime], not again on an
//     unchanged program), each in the scratch copy, never on the
//     user's files; and on failure appends the structured
//     verification message (expected, actual, error, current code, earlier
//     attempts, action), prunes the conversation with the [PruningPolicy],
//     and loops — at most [DefaultMaxIterations] times. Runs have a
//     recursion limit of [DefaultRecursionLimit], raised to what more
//     iterations need ([StepsPerIteration] each).
//
// Each phase writes a [Decision] event; the tool loop a [ToolRound] per
// round, the review [Verification] and [RepairAttempted]; events.Bridge
// publishes them.
//
// # Agents and tools
//
// A [Registry] holds the agents: [ModelAgent]s ("llm:<profile>") and
// [CLIAgent]s ("agent:<name>", an external coding CLI, its stdout the
// answer). A CLI agent is [Autonomous]: it gets the task and the
// planner's step, not the tool-calling prompt, runs once per delegation,
// and its output is never searched for tool calls nor executed. A CLI agent, like the program verification runs, goes through
// tools.RunCommand: confined to the workspace in the bubblewrap sandbox
// where the machine has one (Config's sandbox: auto, required or off),
// with a minimal environment and its process tree killed when it ends. [Config] (YAML,
// [LoadConfig]) builds the registry, the options and the MCP tools
// ([Config.MCPTools], through package tools/mcp). [DefaultTools] are the
// tools of package tools: files, search, structured data, git, web, and
// also bash_exec (a shell command) and run_tests.
//
//	reg, _ := cfg.Registry(ctx, nil)
//	g, _ := codur.New(planner, reg, codur.DefaultTools(ws), append(cfg.Options(), codur.WithVerifier(v))...)
//	out, err := g.Invoke(ctx, codur.Input("fix the bug in main.py", false))
//
// Package codur/challenge runs folders of challenges and reports the pass
// rate; examples/codur is the command-line program.
package codur
