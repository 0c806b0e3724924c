package retrai

import "github.com/agentgraph/agentgraph/events"

// The kinds of the events of the retrAI agent's own, beside the SDK's
// (see package events). Its nodes write them with graph.StreamWriter, and
// events.Bridge publishes them.
const (
	// KindIterationStarted is the kind of [IterationStarted].
	KindIterationStarted events.Kind = "retrai.iteration_started"
	// KindBaselineRecorded is the kind of [BaselineRecorded].
	KindBaselineRecorded events.Kind = "retrai.baseline_recorded"
	// KindGoalCheck is the kind of [GoalCheck].
	KindGoalCheck events.Kind = "retrai.goal_check"
	// KindHumanCheck is the kind of [HumanCheck].
	KindHumanCheck events.Kind = "retrai.human_check"
	// KindHumanDecision is the kind of [HumanDecision].
	KindHumanDecision events.Kind = "retrai.human_decision"
	// KindFinished is the kind of [Finished].
	KindFinished events.Kind = "retrai.finished"
)

// IterationStarted reports that the plan node starts an iteration.
type IterationStarted struct {
	// Iteration is the iteration (from 1) and MaxIterations the run's
	// limit.
	Iteration     int `json:"iteration"`
	MaxIterations int `json:"max_iterations"`
}

// EventKind implements events.Payload.
func (IterationStarted) EventKind() events.Kind { return KindIterationStarted }

// BaselineRecorded reports what the goal recorded of the project before
// the first iteration (see goals.Baseliner).
type BaselineRecorded struct {
	// Summary describes it, as goals.Baseline.Summary.
	Summary string `json:"summary"`
}

// EventKind implements events.Payload.
func (BaselineRecorded) EventKind() events.Kind { return KindBaselineRecorded }

// GoalCheck reports the goal check that ends an iteration.
type GoalCheck struct {
	// Goal names the goal.
	Goal string `json:"goal"`
	// Iteration is the iteration it ends and MaxIterations the run's limit.
	Iteration     int `json:"iteration"`
	MaxIterations int `json:"max_iterations"`
	// Achieved and Reason are the check's outcome.
	Achieved bool   `json:"achieved"`
	Reason   string `json:"reason"`
	// Passed and Failed count tests, for goals that run tests.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// Stuck counts the consecutive checks, this one included, that
	// reported the same failure (0 when achieved).
	Stuck int `json:"stuck"`
	// TotalTokens is the run's token usage so far.
	TotalTokens int `json:"total_tokens"`
}

// EventKind implements events.Payload.
func (GoalCheck) EventKind() events.Kind { return KindGoalCheck }

// HumanCheck reports that the human_check node paused the run for a
// human's decision (resume it with one, see [Approved]). The SDK's
// events.Interrupt of the pause carries the interrupt's ID.
type HumanCheck struct {
	// Question is what the human is asked.
	Question string `json:"question"`
	// Reason is the last goal check's.
	Reason string `json:"reason"`
	// Iteration is the iteration just done.
	Iteration int `json:"iteration"`
}

// EventKind implements events.Payload.
func (HumanCheck) EventKind() events.Kind { return KindHumanCheck }

// HumanDecision reports the human's answer to a [HumanCheck].
type HumanDecision struct {
	// Decision is the resume value, as text.
	Decision string `json:"decision"`
	// Approved reports whether it lets the run go on (see [Approved]).
	Approved bool `json:"approved"`
	// Iteration is the iteration of the check.
	Iteration int `json:"iteration"`
}

// EventKind implements events.Payload.
func (HumanDecision) EventKind() events.Kind { return KindHumanDecision }

// Finished reports the outcome of the run: its goal achieved, out of
// iterations, or aborted by a human.
type Finished struct {
	// Outcome is OutcomeAchieved, OutcomeFailed or OutcomeAborted.
	Outcome string `json:"outcome"`
	// Reason explains it.
	Reason string `json:"reason"`
	// Iteration is the last iteration and TotalTokens the run's token
	// usage.
	Iteration   int `json:"iteration"`
	TotalTokens int `json:"total_tokens"`
}

// EventKind implements events.Payload.
func (Finished) EventKind() events.Kind { return KindFinished }
