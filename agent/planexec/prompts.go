package planexec

import "strings"

// Prompts are the texts the agent sends to the model. Each is a template
// whose placeholders, in braces, are replaced before the call:
//
//   - {input}: the user's question
//   - {findings}: the findings so far, one section per step, or
//     "(none yet)"
//   - {step}: the plan step being worked on (Executor, ExecutorTask), or
//     the number of steps done (Refine)
//   - {total}: the number of steps of the current plan (Refine)
//
// Unknown placeholders are left as they are. [DefaultPrompts] returns the
// agent's own; replace any of them with [WithPrompts].
type Prompts struct {
	// Planner is the system message of the planner, which must answer
	// with a JSON array of steps (strings). Placeholders: {input},
	// {findings}.
	Planner string
	// Executor is the system message of each plan step's executor.
	// Placeholders: {step}, {findings}.
	Executor string
	// ExecutorTask is the human message of each plan step's executor.
	// Placeholders: {step}, {input}.
	ExecutorTask string
	// Refine is the system message of the refinery, which must answer
	// with a JSON object {"decision": "CONTINUE" or "FINISH", "reason":
	// "..."}. Placeholders: {input}, {findings}, {step}, {total}.
	Refine string
	// Synthesize is the system message of the synthesizer, which writes
	// the final answer. Placeholders: {input}, {findings}.
	Synthesize string
	// FallbackStep is the one step of the plan used when the planner's
	// answer is not a usable JSON array of steps. It is not a template.
	FallbackStep string
}

// DefaultPrompts returns the agent's default prompts, written for any
// research task (code, documents, the web), whatever the tools.
func DefaultPrompts() Prompts {
	return Prompts{
		Planner: `You are an expert research planner. Break the user's question into a short list of concrete, actionable research steps, each of which can be carried out with the available tools.

Guidelines:
- Plan incrementally: if findings are already present below, plan ONLY the steps needed to obtain the information that is still missing. Never repeat research that is already done.
- Keep each step small and specific (one lookup, one search, one file or source to read).
- Use at most 5 steps.

Question: {input}

Findings so far:
{findings}

Answer with a JSON array of strings and nothing else, for example:
["Search for X", "Read the definition of Y"]`,
		Executor: `You are a research assistant carrying out one step of a research plan with the tools available to you.

Current step: {step}

Findings from earlier steps:
{findings}

Use the tools to gather the evidence this step asks for. When you have it, answer with a concise summary of what you found, citing where it comes from (file paths and line numbers, URLs, names). Do not answer the overall question; report on this step only.`,
		ExecutorTask: `Carry out this research step: {step}

(It serves the question: {input})`,
		Refine: `You are a research lead reviewing the progress of an investigation.

Question: {input}

Steps completed in the current plan: {step} of {total}.

Findings so far:
{findings}

Decide whether the findings are sufficient to answer the question completely and accurately: they must contain the concrete evidence (code, text, figures, sources) the answer needs, not only pointers to it.

Answer with a JSON object and nothing else:
{"decision": "CONTINUE" or "FINISH", "reason": "one sentence"}
Use CONTINUE when important information is still missing, FINISH when the findings suffice.`,
		Synthesize: `You are an expert who answers questions from research findings.

Question: {input}

Findings:
{findings}

Write a complete, accurate answer to the question using only the findings. Reference the evidence precisely (file paths and line numbers, names, sources). Structure the answer with markdown sections, lists and code blocks where they help. If the findings leave part of the question open, say so.`,
		FallbackStep: "Search for information relevant to the question",
	}
}

// withDefaults returns p with its empty fields set to the defaults.
func (p Prompts) withDefaults() Prompts {
	d := DefaultPrompts()
	for _, f := range []struct {
		dst *string
		def string
	}{
		{&p.Planner, d.Planner},
		{&p.Executor, d.Executor},
		{&p.ExecutorTask, d.ExecutorTask},
		{&p.Refine, d.Refine},
		{&p.Synthesize, d.Synthesize},
		{&p.FallbackStep, d.FallbackStep},
	} {
		if strings.TrimSpace(*f.dst) == "" {
			*f.dst = f.def
		}
	}
	return p
}
