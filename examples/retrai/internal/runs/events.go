package runs

import (
	"github.com/agentgraph/agentgraph/events"
)

// The kinds of the events the manager adds to the agent's (see
// retrai.New) on its bus.
const (
	// KindModelProgress is the kind of [ModelProgress].
	KindModelProgress events.Kind = "runs.model_progress"
	// KindProgress is the kind of [Progress].
	KindProgress events.Kind = "runs.progress"
	// KindEnded is the kind of [Ended].
	KindEnded events.Kind = "runs.ended"
)

// ModelProgress reports the progress of a model call of a run (see
// llm.Progress): the run's nodes write it with graph.StreamWriter, from
// the hook the manager gives the run's context.
type ModelProgress struct {
	// State is "attempt" (the model is being waited for), "first_byte"
	// (it started answering), "retry_wait" (the attempt failed and the
	// call waits DelayMS before the next) or "gave_up" (the call failed):
	// an llm.ProgressKind's String.
	State string `json:"state"`
	// Model names the model.
	Model string `json:"model"`
	// Attempt is the attempt (from 1) and MaxAttempts the most the call
	// makes.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts"`
	// Reason, StatusCode, RetryAfterMS, DelayMS and Error describe a
	// failed attempt: Reason is an llm.FailureReason ("rate_limited",
	// "timeout", …).
	Reason       string `json:"reason,omitempty"`
	StatusCode   int    `json:"status_code,omitempty"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
	DelayMS      int64  `json:"delay_ms,omitempty"`
	Error        string `json:"error,omitempty"`
}

// EventKind implements events.Payload.
func (ModelProgress) EventKind() events.Kind { return KindModelProgress }

// Progress follows each of the agent's retrai.GoalCheck events: how many
// iterations in a row, this one included, changed no file of the project
// and ended with the same check result as the one before — 0 when this
// one made progress. An iteration spent reading or running commands
// without effect counts; one that edits files, or whose check reports a
// different result, does not.
type Progress struct {
	// Iteration is the iteration of the goal check.
	Iteration int `json:"iteration"`
	// NoProgress is the number of iterations without progress.
	NoProgress int `json:"no_progress"`
}

// EventKind implements events.Payload.
func (Progress) EventKind() events.Kind { return KindProgress }

// Ended is the last event of an execution of a run, published once the
// run's record is updated (and the run can be resumed), unless the run
// waits for a human: then the last is the agent's retrai.HumanCheck.
type Ended struct {
	// Status is the run's new status. An execution that finds the run
	// taken over by another process ends with StatusRunning and Live set:
	// the record is that process's.
	Status Status `json:"status"`
	// Reason, Iteration and TotalTokens are the run's.
	Reason      string `json:"reason,omitempty"`
	Iteration   int    `json:"iteration"`
	TotalTokens int    `json:"total_tokens"`
	// Error is the run's error, for StatusError (and Live).
	Error string `json:"error,omitempty"`
	// Live reports that another process executes the run.
	Live bool `json:"live,omitempty"`
}

// EventKind implements events.Payload.
func (Ended) EventKind() events.Kind { return KindEnded }
