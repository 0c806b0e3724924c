package runs

import (
	"errors"
	"time"
)

// Status is the state of a run.
type Status string

// The statuses of a run.
const (
	// StatusPending: created, not started.
	StatusPending Status = "pending"
	// StatusRunning: executing.
	StatusRunning Status = "running"
	// StatusWaiting: paused at a human check; Resume with a decision.
	StatusWaiting Status = "waiting"
	// StatusInterrupted: stopped while running (cancelled, or the manager
	// closed); Resume continues it.
	StatusInterrupted Status = "interrupted"
	// StatusAchieved: the goal was reached.
	StatusAchieved Status = "achieved"
	// StatusFailed: out of iterations (final), or stopped by an error
	// (Run.Error set; Resume retries).
	StatusFailed Status = "failed"
	// StatusAborted: a human aborted it at a human check.
	StatusAborted Status = "aborted"
)

// Final reports whether a run with status s and error text runErr can no
// longer be resumed.
func (s Status) Final(runErr string) bool {
	switch s {
	case StatusAchieved, StatusAborted:
		return true
	case StatusFailed:
		return runErr == ""
	}
	return false
}

// Decisions for [Manager.Resume] of a waiting run. The agent also accepts
// "yes", "continue" (approve) and treats anything else as abort.
const (
	DecisionApprove = "approve"
	DecisionAbort   = "abort"
)

// Errors of the manager; the errors returned wrap them.
var (
	// ErrNotFound: no run has this ID.
	ErrNotFound = errors.New("run not found")
	// ErrBusy: the run is executing in this manager.
	ErrBusy = errors.New("run is executing")
	// ErrNotPending: Start of a run that was started before (use Resume).
	ErrNotPending = errors.New("run is not pending")
	// ErrFinal: the run has ended and cannot be resumed.
	ErrFinal = errors.New("run has ended")
	// ErrDecisionRequired: Resume of a run waiting at a human check
	// without a decision.
	ErrDecisionRequired = errors.New("run is waiting at a human check: a decision is required")
	// ErrNotActive: Cancel of a run that is not executing in this manager.
	ErrNotActive = errors.New("run is not executing")
	// ErrNoModel: Create without a model, in the Config or the project's
	// .retrai.yml.
	ErrNoModel = errors.New("no model configured")
	// ErrClosed: the manager is closed.
	ErrClosed = errors.New("manager is closed")
)

// Config describes a run. Create fills unset fields from the project's
// .retrai.yml and defaults.
type Config struct {
	// Goal is the goal's registered name; empty: detected from the
	// project (goals.Detect).
	Goal string `json:"goal"`
	// Cwd is the project directory; empty: the current directory. It is
	// stored absolute.
	Cwd string `json:"cwd"`
	// Model is the model spec passed to Options.Models, e.g.
	// "openai:gpt-4o-mini"; empty: the model of .retrai.yml.
	Model string `json:"model"`
	// MaxIterations is the iteration limit; 0: .retrai.yml's, else
	// agent.DefaultMaxIterations.
	MaxIterations int `json:"max_iterations"`
	// HITL asks for a human check after every iteration; .retrai.yml's
	// hitl_enabled turns it on too.
	HITL bool `json:"hitl"`
	// Instructions are added to the agent's kickoff message.
	Instructions string `json:"instructions,omitempty"`
}

// Run is the record of a run.
type Run struct {
	// ID identifies the run; it is also its checkpoint thread.
	ID string `json:"id"`
	Config
	// Status is where the run is.
	Status Status `json:"status"`
	// Iteration is the number of completed iterations.
	Iteration int `json:"iteration"`
	// TotalTokens is the token usage so far.
	TotalTokens int `json:"total_tokens"`
	// Reason is the last goal check's reason, or how the run ended.
	Reason string `json:"reason,omitempty"`
	// Error is the error that stopped the run (StatusFailed, resumable).
	Error string `json:"error,omitempty"`
	// Question is the pending human check's question (StatusWaiting).
	Question string `json:"question,omitempty"`
	// CreatedAt and UpdatedAt are in UTC.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Resumable reports whether Resume may continue the run (when it is not
// executing).
func (r Run) Resumable() bool {
	return r.Status != StatusPending && !r.Status.Final(r.Error)
}
