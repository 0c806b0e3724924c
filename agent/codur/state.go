package codur

import (
	"github.com/agentgraph/agentgraph/state"
)

// Action is what the graph does next, as decided by a planning phase or by
// the review.
type Action string

// The actions.
const (
	// ActionContinue passes the task to the next planning phase (or, from
	// the review, back to the first phase for another iteration).
	ActionContinue Action = "continue"
	// ActionDelegate hands the task to an agent of the registry.
	ActionDelegate Action = "delegate"
	// ActionTool runs tool calls directly, without an agent.
	ActionTool Action = "tool"
	// ActionEnd ends the run.
	ActionEnd Action = "end"
)

// Phase names the node that took a decision.
type Phase string

// The phases that can decide how a task is handled, and the review.
const (
	// PhaseTextual is the textual pre-plan (patterns, no model).
	PhaseTextual Phase = TextualPrePlanNode
	// PhasePrePlan is the quick classification.
	PhasePrePlan Phase = LLMPrePlanNode
	// PhasePlan is the full planning.
	PhasePlan Phase = LLMPlanNode
	// PhaseReview is the review.
	PhaseReview Phase = ReviewNode
)

// ToolCall is a tool call a planning phase asked for, run by the tool node.
type ToolCall struct {
	// Tool is the tool's name; Args the JSON text of its arguments.
	Tool string `json:"tool"`
	Args string `json:"args"`
}

// State is the state of the Codur graph. [Input] builds the input of a
// run.
type State struct {
	// Task is the user's task, as given.
	Task state.Value[string]
	// Messages is the conversation the agents see: the task, the agents'
	// answers, tool results and verification failures, pruned by the
	// [PruningPolicy] at each review.
	Messages state.Messages
	// NextAction is the last decision of a phase or of the review.
	NextAction state.Value[Action]
	// DecidedBy is the phase that took the current iteration's routing
	// decision.
	DecidedBy state.Value[Phase]
	// SelectedAgent is the agent reference ("llm:<profile>" or
	// "agent:<name>") the task is delegated to.
	SelectedAgent state.Value[string]
	// ToolCalls are the calls the tool node runs.
	ToolCalls state.Value[[]ToolCall]
	// AgentOutput is the text of the last agent answer or tool results.
	AgentOutput state.Value[string]
	// FinalResponse is the answer of the run.
	FinalResponse state.Value[string]
	// Iterations counts the reviews.
	Iterations state.Value[int]
	// Verify asks the review to verify even when the task does not read as
	// a fix task (the challenge runner sets it).
	Verify state.Value[bool]
	// Verified reports that the last verification passed.
	Verified state.Value[bool]
	// Repairs are the local repairs that fixed the program, by pattern
	// name ("off_by_one_range+remove_continue_guard" for a combination).
	Repairs state.Append[string]
	// Failures are the verification failures so far, oldest first.
	Failures state.Append[string]
	// Tokens counts the tokens of every model call of the run.
	Tokens state.Sum[int]
}

// Input returns the input of a run on task. verify makes the review check
// the program whatever the task says.
func Input(task string, verify bool) State {
	in := State{
		Task:          state.Set(task),
		Messages:      state.Msgs(state.Human(task)),
		NextAction:    state.Set(ActionContinue),
		DecidedBy:     state.Set(Phase("")),
		SelectedAgent: state.Set(""),
		ToolCalls:     state.Set[[]ToolCall](nil),
		AgentOutput:   state.Set(""),
		FinalResponse: state.Set(""),
		Iterations:    state.Set(0),
		Verify:        state.Set(verify),
		Verified:      state.Set(false),
	}
	return in
}
