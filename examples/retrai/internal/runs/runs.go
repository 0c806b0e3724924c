package runs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is the state of a run.
type Status string

// The statuses of a run.
const (
	// StatusPending: created, not started.
	StatusPending Status = "pending"
	// StatusRunning: executing, in this process or another one that holds
	// the run's thread lease. [Manager.Get] and [Manager.List] report a run
	// recorded running whose lease nobody holds (its process died) as
	// StatusInterrupted.
	StatusRunning Status = "running"
	// StatusWaiting: paused at a human check; Resume with a decision.
	StatusWaiting Status = "waiting"
	// StatusInterrupted: stopped while running (cancelled, the manager
	// closed, or its process died); Resume continues it.
	StatusInterrupted Status = "interrupted"
	// StatusError: stopped by an error (a model or tool failure, …; Run.Error
	// says which); Resume retries from the last checkpoint.
	StatusError Status = "error"
	// StatusAchieved: the goal was reached.
	StatusAchieved Status = "achieved"
	// StatusFailed: the goal was not reached within the iteration limit.
	StatusFailed Status = "failed"
	// StatusAborted: a human aborted it at a human check.
	StatusAborted Status = "aborted"
)

// Final reports whether a run with status s has ended for good: achieved,
// failed (goal not met) or aborted.
func (s Status) Final() bool {
	switch s {
	case StatusAchieved, StatusFailed, StatusAborted:
		return true
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
	// ErrLive: the run is executing in another process, which holds its
	// thread's lease; the error is a [*LiveError].
	ErrLive = errors.New("run is live in another process")
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
	// ErrConfigEndpoint: Create of a run whose model comes from the
	// project's .retrai.yml and names a provider endpoint (a base URL),
	// without Options.AllowConfigEndpoint. A project file must not decide
	// where the user's provider credentials — and code — are sent.
	ErrConfigEndpoint = errors.New("the project's config may not set the model's endpoint")
)

// LiveError reports a run that is executing in another process (or another
// Manager): the lease of its checkpoint thread is held. It matches ErrLive.
type LiveError struct {
	// RunID is the run.
	RunID string
	// Holder describes who holds the lease, e.g. "pid 1234 on build-7".
	Holder string
	// Expires is when the lease expires unless its holder renews it: a
	// holder that died no longer does, and the run can be resumed then.
	Expires time.Time
}

func (e *LiveError) Error() string {
	return fmt.Sprintf("run %s is live in %s (lease expires %s unless renewed): it cannot be resumed while it runs",
		e.RunID, e.Holder, e.Expires.Local().Format(time.RFC3339))
}

// Is reports whether target is ErrLive.
func (e *LiveError) Is(target error) bool { return target == ErrLive }

// holderOf returns where a lease holder description says the holder runs:
// the graph describes a run's holder as "pid N on host", or as "run ID (pid N
// on host)" when the run has an ID.
func holderOf(holder string) string {
	if _, rest, ok := strings.Cut(holder, " ("); ok && strings.HasPrefix(holder, "run ") && strings.HasSuffix(rest, ")") {
		return strings.TrimSuffix(rest, ")")
	}
	return holder
}

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
	// Error is the error that stopped the run (StatusError).
	Error string `json:"error,omitempty"`
	// Question is the pending human check's question (StatusWaiting).
	Question string `json:"question,omitempty"`
	// CreatedAt and UpdatedAt are in UTC.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Resumable reports whether Resume may continue the run: it is waiting,
// interrupted or stopped on an error. A running run is not; a run recorded
// running whose process died is reported interrupted by [Manager.Get].
func (r Run) Resumable() bool {
	switch r.Status {
	case StatusWaiting, StatusInterrupted, StatusError:
		return true
	}
	return false
}

// upgrade brings a run record written by an earlier version to the current
// vocabulary: a run that stopped on an error was "failed" with Error set,
// and is StatusError now. It reports whether it changed r.
func (r *Run) upgrade() bool {
	if r.Status == StatusFailed && r.Error != "" {
		r.Status = StatusError
		return true
	}
	return false
}
