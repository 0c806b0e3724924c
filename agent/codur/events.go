package codur

import (
	"time"

	"github.com/agentgraph/agentgraph/events"
)

// The kinds of Codur's own events, beside the SDK's (see package events).
// Its nodes write them with graph.StreamWriter; events.Bridge publishes
// them.
const (
	KindDecision  events.Kind = "codur.decision"
	KindToolRound events.Kind = "codur.tool_round"
	KindVerify    events.Kind = "codur.verify"
	KindRepair    events.Kind = "codur.repair"
)

// Decision reports how a phase (or the review) routed the task.
type Decision struct {
	// Phase is the node that decided; Action what it decided.
	Phase  Phase  `json:"phase"`
	Action Action `json:"action"`
	// Agent is the agent delegated to, for ActionDelegate.
	Agent string `json:"agent,omitempty"`
	// Tools are the names of the tool calls, for ActionTool.
	Tools []string `json:"tools,omitempty"`
	// Confidence is the pre-plan's confidence (0 for the other phases).
	Confidence float64 `json:"confidence,omitempty"`
	// Reason explains the decision.
	Reason string `json:"reason,omitempty"`
	// Fallback reports that the model's answer was not usable and the
	// phase fell back to its default.
	Fallback bool `json:"fallback,omitempty"`
}

// EventKind implements events.Payload.
func (Decision) EventKind() events.Kind { return KindDecision }

// ToolRound reports one round of the execute node's tool loop.
type ToolRound struct {
	// Agent ran the round; Round counts from 1.
	Agent string `json:"agent"`
	Round int    `json:"round"`
	// Format is how the calls were found: "native", "fenced", "tagged",
	// "json", "call" (a tool(args) line), "extracted" (by the planner
	// model, see WithToolCallExtraction), or "" when the answer had none.
	Format string `json:"format,omitempty"`
	// Tools are the names of the calls.
	Tools []string `json:"tools,omitempty"`
	// LimitReached reports calls left unrun because the loop hit its
	// limit.
	LimitReached bool `json:"limit_reached,omitempty"`
}

// EventKind implements events.Payload.
func (ToolRound) EventKind() events.Kind { return KindToolRound }

// Verification reports a check of the program's output.
type Verification struct {
	// Iteration is the review's number (from 1).
	Iteration int `json:"iteration"`
	// Passed reports matching output.
	Passed bool `json:"passed"`
	// Case names the failing case ("" for the plain run, or when all
	// passed); Hidden reports a hidden one, whose Expected is left empty.
	Case   string `json:"case,omitempty"`
	Hidden bool   `json:"hidden,omitempty"`
	// Expected and Actual are the outputs, ExitCode the program's status.
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	ExitCode int    `json:"exit_code"`
	// TimedOut is the time limit of a program killed by it, 0 otherwise.
	TimedOut time.Duration `json:"timed_out_ns,omitempty"`
	// Runs counts the program's runs (the plain one and the cases).
	Runs int `json:"runs"`
	// Restored are the protected files (expected outputs) the agent
	// changed, which the review put back before verifying.
	Restored []string `json:"restored,omitempty"`
}

// EventKind implements events.Payload.
func (Verification) EventKind() events.Kind { return KindVerify }

// RepairAttempted reports the local repair search of a review.
type RepairAttempted struct {
	// Tried is how many candidate programs were run.
	Tried int `json:"tried"`
	// Fixed names the repair that made the output match, "" if none did.
	Fixed string `json:"fixed,omitempty"`
	// Partial reports candidates run in a copy of the program's own
	// directory only: the workspace was too large to copy whole.
	Partial bool `json:"partial,omitempty"`
	// OutOfTime is the repair search's time limit when it ran out before
	// the last candidate (see WithRepairTime), 0 otherwise.
	OutOfTime time.Duration `json:"out_of_time_ns,omitempty"`
	// Skipped says why no candidate ran, when none did (a workspace too
	// large to copy: candidates never run on the user's files).
	Skipped string `json:"skipped,omitempty"`
}

// EventKind implements events.Payload.
func (RepairAttempted) EventKind() events.Kind { return KindRepair }
