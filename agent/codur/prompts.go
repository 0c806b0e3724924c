package codur

import "strings"

// Prompts are the texts Codur sends to models. Placeholders in braces are
// replaced before each call:
//
//   - {task}: the user's task
//   - {agents}: the registry's agents, one "- ref: description" a line
//   - {tools}: the tools, one "- name: description" a line
//   - {context}: the latest messages of the conversation (verification
//     failures, earlier attempts), or "(none)"
//   - {workspace}: the workspace directory
//
// Empty fields of a Prompts given to [WithPrompts] keep the defaults.
type Prompts struct {
	// PrePlan is the system message of the quick classification
	// (llm_pre_plan), which answers with a JSON object {"task_type",
	// "confidence", "action", "response", "tool_calls"}. Placeholders:
	// {task}, {tools}.
	PrePlan string
	// Plan is the system message of the full planning (llm_plan), which
	// answers with a JSON object {"action", "agent", "reasoning",
	// "response", "tool_calls"}. Placeholders: {task}, {agents}, {tools},
	// {context}.
	Plan string
	// Agent is the system message of the agents of the registry that are
	// models. Placeholders: {workspace}, {tools}.
	Agent string
	// Extract is the system message of the tool-call extraction (see
	// [WithToolCallExtraction]), whose human message is the agent's
	// answer and which answers with {"tool_calls": [...]}. Placeholder:
	// {tools}.
	Extract string
}

// DefaultPrompts returns Codur's prompts.
func DefaultPrompts() Prompts {
	return Prompts{
		PrePlan: `You classify a task for a coding assistant, quickly. Only obvious cases are acted on: greetings, questions answered in one sentence, and explicit file operations.

Task: {task}

Tools:
{tools}

Answer with one JSON object and nothing else:
{"task_type": "greeting" | "file_operation" | "explanation" | "code_change" | "other",
 "confidence": a number from 0 to 1,
 "action": "respond" | "tool" | "plan",
 "response": "the answer, for respond",
 "tool_calls": [{"tool": "name", "args": {...}}]}
Use "plan" whenever the task needs code to be written or changed, or when you are not sure.`,
		Plan: `You are the planner of a coding assistant. Decide how to carry out the task.

Task: {task}

Agents you can delegate to:
{agents}

Tools you can call directly:
{tools}

Recent context (earlier attempts and verification failures):
{context}

Answer with one JSON object and nothing else:
{"action": "delegate" | "tool" | "respond" | "done",
 "agent": "one of the agents above, for delegate",
 "reasoning": "one sentence",
 "response": "the answer, for respond (greetings, short answers)",
 "tool_calls": [{"tool": "name", "args": {...}}]}
Delegate any task that changes code. Use "tool" for plain file operations.`,
		Agent: `You are a coding agent working in the directory {workspace}. Carry out the task with the tools. When the task is a fix, read the program, change it with the file tools, and say briefly what you changed. Do not edit expected.txt.

If you cannot call tools natively, write each call as a JSON object on its own, for example:
{"tool": "file_read", "args": {"path": "main.py"}}

Tools:
{tools}`,
		Extract: `An agent answered with the text below. If it says it wants to call some of these tools, write those calls; if it does not, write an empty list.

Tools:
{tools}

Answer with one JSON object and nothing else:
{"tool_calls": [{"tool": "name", "args": {...}}]}`,
	}
}

func (p Prompts) withDefaults() Prompts {
	d := DefaultPrompts()
	if strings.TrimSpace(p.PrePlan) == "" {
		p.PrePlan = d.PrePlan
	}
	if strings.TrimSpace(p.Plan) == "" {
		p.Plan = d.Plan
	}
	if strings.TrimSpace(p.Agent) == "" {
		p.Agent = d.Agent
	}
	if strings.TrimSpace(p.Extract) == "" {
		p.Extract = d.Extract
	}
	return p
}

// fill replaces the placeholders of tmpl, in one pass.
func fill(tmpl string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}
