package planexec

import "github.com/agentgraph/agentgraph/events"

// The kinds of the plan-and-execute agent's own events, beside the SDK's
// (see package events). Its nodes write them with graph.StreamWriter, and
// events.Bridge publishes them; the tool calls and their results are the
// SDK's events.ToolCall and events.ToolResult.
const (
	// KindPlan is the kind of [PlanMade].
	KindPlan events.Kind = "planexec.plan"
	// KindStep is the kind of [StepStarted].
	KindStep events.Kind = "planexec.step"
	// KindFinding is the kind of [FindingRecorded].
	KindFinding events.Kind = "planexec.finding"
	// KindDecision is the kind of [DecisionMade].
	KindDecision events.Kind = "planexec.decision"
)

// PlanMade reports the plan the planner made.
type PlanMade struct {
	// Iteration is the planner-executor-refinery cycle (from 1) and
	// MaxIterations the run's limit.
	Iteration     int `json:"iteration"`
	MaxIterations int `json:"max_iterations"`
	// Steps are the plan's steps.
	Steps []string `json:"steps"`
	// Fallback reports that the model's answer was not a usable JSON
	// array of steps, so the plan is the one fallback step (see
	// Prompts.FallbackStep).
	Fallback bool `json:"fallback,omitempty"`
}

// EventKind implements events.Payload.
func (PlanMade) EventKind() events.Kind { return KindPlan }

// StepStarted reports that the executor starts a step of the plan.
type StepStarted struct {
	// Iteration is the cycle of the plan.
	Iteration int `json:"iteration"`
	// Index is the step's position in the plan (from 1) and Total the
	// plan's length.
	Index int `json:"index"`
	Total int `json:"total"`
	// Step is the step's text.
	Step string `json:"step"`
}

// EventKind implements events.Payload.
func (StepStarted) EventKind() events.Kind { return KindStep }

// FindingRecorded reports the finding the aggregate node recorded for a
// step.
type FindingRecorded struct {
	// Key is its key in State.Findings ("step_N: <step>").
	Key string `json:"key"`
	// Text is the finding: the step's tool results and the executor's
	// final answer, separated by lines of "---".
	Text string `json:"text"`
}

// EventKind implements events.Payload.
func (FindingRecorded) EventKind() events.Kind { return KindFinding }

// DecisionMade reports the refinery's decision.
type DecisionMade struct {
	// Decision is Continue or Finish.
	Decision Decision `json:"decision"`
	// Reason explains it.
	Reason string `json:"reason"`
	// Forced reports a Finish forced by the iteration limit, without
	// asking the model.
	Forced bool `json:"forced,omitempty"`
	// Fallback reports that the model's answer was not a usable JSON
	// decision, so the decision follows the plan: Continue while steps
	// remain, else Finish.
	Fallback bool `json:"fallback,omitempty"`
}

// EventKind implements events.Payload.
func (DecisionMade) EventKind() events.Kind { return KindDecision }
