package codur

import (
	"fmt"

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
	// Plan is the full planning's reasoning for the current iteration
	// (the step a CLI agent is given with the task).
	Plan state.Value[string]
	// Solved says what made the last verification pass (zero when none
	// did).
	Solved state.Value[Solution]
	// RepairSearched is the SHA-256 (hex) of the program the last local
	// repair search ran on: an unchanged program is not searched again.
	RepairSearched state.Value[string]
	// Restored are the protected files (expected outputs) an agent
	// changed and the review put back, one entry a time it did.
	Restored state.Append[string]
}

// Solver is what made a verification pass.
type Solver string

// The solvers.
const (
	// SolvedByAgent is an agent delegated to (Solution.Agent), a model or
	// a CLI.
	SolvedByAgent Solver = "agent"
	// SolvedByPlanner is the tool calls of a model planning phase (the
	// full planning, or the quick classification): Solution.Phase.
	SolvedByPlanner Solver = "planner"
	// SolvedByPrePlan is the tool calls of the textual pre-plan: a
	// pattern on the task's wording, no model.
	SolvedByPrePlan Solver = "pre_plan"
	// SolvedByRepair is a local repair (Solution.Repair), no model.
	SolvedByRepair Solver = "repair"
)

// Solution says what made a run's verification pass, and when.
type Solution struct {
	// By is the solver.
	By Solver `json:"by"`
	// Iteration is the review that passed, from 1.
	Iteration int `json:"iteration"`
	// Agent is the agent's reference, for SolvedByAgent.
	Agent string `json:"agent,omitempty"`
	// Phase is the phase that routed the iteration.
	Phase Phase `json:"phase,omitempty"`
	// Repair names the local repair, for SolvedByRepair.
	Repair string `json:"repair,omitempty"`
}

// String describes the solution: "agent llm:default on iteration 2",
// "local repair off_by_one_range on iteration 1" …; "" for the zero
// Solution.
func (s Solution) String() string {
	switch s.By {
	case SolvedByAgent:
		return fmt.Sprintf("agent %s on iteration %d", s.Agent, s.Iteration)
	case SolvedByPlanner:
		return fmt.Sprintf("the %s model's tool calls on iteration %d", s.Phase, s.Iteration)
	case SolvedByPrePlan:
		return fmt.Sprintf("the textual pre-plan's tool calls on iteration %d", s.Iteration)
	case SolvedByRepair:
		return fmt.Sprintf("local repair %s on iteration %d", s.Repair, s.Iteration)
	}
	return ""
}

// Input returns the input of a run on task. verify makes the review check
// the program whatever the task says.
func Input(task string, verify bool) State {
	in := State{
		Task:           state.Set(task),
		Messages:       state.Msgs(state.Human(task)),
		NextAction:     state.Set(ActionContinue),
		DecidedBy:      state.Set(Phase("")),
		SelectedAgent:  state.Set(""),
		ToolCalls:      state.Set[[]ToolCall](nil),
		AgentOutput:    state.Set(""),
		FinalResponse:  state.Set(""),
		Iterations:     state.Set(0),
		Verify:         state.Set(verify),
		Verified:       state.Set(false),
		Plan:           state.Set(""),
		RepairSearched: state.Set(""),
		Solved:         state.Set(Solution{}),
	}
	return in
}
