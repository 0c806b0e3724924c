package temporal

import (
	"errors"
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
)

// Types of the application errors a graph's workflow fails with, as
// [sdktemporal.ApplicationError.Type] reports them. None of them is
// retried by Temporal: a node's own [graph.RetryPolicy] has already run.
const (
	// ErrTypeNode is a node, branch or router that failed for good (a
	// [graph.NodeError]); [AsNodeError] reads it back.
	ErrTypeNode = "agentgraph.NodeError"
	// ErrTypeInvalidUpdate is a [graph.InvalidUpdateError].
	ErrTypeInvalidUpdate = "agentgraph.InvalidUpdateError"
	// ErrTypeRecursion is a run that reached its [WithRecursionLimit].
	ErrTypeRecursion = "agentgraph.RecursionError"
	// ErrTypeGraph is any other error of the graph that retrying cannot
	// cure: a branch choosing an undeclared node, a checkpoint of another
	// graph shape, a graph without a checkpointer, an input that cannot be
	// decoded.
	ErrTypeGraph = "agentgraph.GraphError"
	// ErrTypeLeaseHeld is a thread whose lease another holder — typically
	// the attempt of the activity that Temporal declared dead — still
	// holds: a retryable error whose next retry comes when the lease
	// expires (see [WithActivityOptions]).
	ErrTypeLeaseHeld = "agentgraph.LeaseHeldError"
)

// leaseRetryMargin is added to the time until a held lease expires
// before the next attempt: the saver's clock and the worker's differ a
// little, and an attempt that comes too early only waits again.
const leaseRetryMargin = 100 * time.Millisecond

// NodeFailure is the detail of an [ErrTypeNode] error: what a
// [graph.NodeError] carries, with the node's error as text (its Go type
// does not cross processes).
type NodeFailure struct {
	Node     string `json:"node"`
	TaskID   string `json:"task_id,omitempty"`
	Attempts int    `json:"attempts"`
	// Message is the node's error message.
	Message string `json:"message"`
	// Timeout reports that the node's last attempt ran past its
	// [graph.WithNodeTimeout].
	Timeout bool `json:"timeout,omitempty"`
}

// RemoteError is the error of a node that failed in a worker, as
// [AsNodeError] rebuilds it: the message, and whether it was a timeout.
type RemoteError struct {
	Message string
	Timeout bool
}

func (e *RemoteError) Error() string { return e.Message }

// Is reports whether target is [graph.ErrNodeTimeout] for a timed-out node.
func (e *RemoteError) Is(target error) bool { return e.Timeout && target == graph.ErrNodeTimeout }

// AsNodeError finds, in the error of a workflow run (as
// client.WorkflowRun.Get returns it) or of an activity, the node that
// failed the run, and returns it as a [*graph.NodeError] whose Err is a
// [*RemoteError].
func AsNodeError(err error) (*graph.NodeError, bool) {
	var app *sdktemporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeNode || !app.HasDetails() {
		return nil, false
	}
	var f NodeFailure
	if app.Details(&f) != nil {
		return nil, false
	}
	return &graph.NodeError{Node: f.Node, TaskID: f.TaskID, Attempts: f.Attempts,
		Err: &RemoteError{Message: f.Message, Timeout: f.Timeout}}, true
}

// toActivityError turns the error of a graph run into the error the step
// activity returns: errors of the graph that a retry cannot cure become
// non-retryable application errors of the types above; anything else (a
// saver that failed, a thread lease held by a dead worker) is returned as
// is, for Temporal to retry — a lease held by another holder with its
// next retry when the lease expires.
func toActivityError(err error) error {
	var (
		nodeErr  *graph.NodeError
		invalid  *graph.InvalidUpdateError
		undecl   *graph.UndeclaredDestinationError
		shape    *graph.ShapeMismatchError
		recurErr *graph.RecursionError
		held     *checkpoint.LeaseHeldError
	)
	switch {
	case errors.As(err, &nodeErr):
		f := NodeFailure{Node: nodeErr.Node, TaskID: nodeErr.TaskID, Attempts: nodeErr.Attempts,
			Message: nodeErr.Err.Error(), Timeout: errors.Is(nodeErr.Err, graph.ErrNodeTimeout)}
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNode, err, f)
	case errors.As(err, &invalid):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidUpdate, err)
	case errors.As(err, &recurErr):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeRecursion, err)
	case errors.As(err, &held):
		// Retry when the lease expires, not on the retry policy's backoff,
		// which may come long after (it doubles from try to try).
		return sdktemporal.NewApplicationErrorWithOptions(err.Error(), ErrTypeLeaseHeld, sdktemporal.ApplicationErrorOptions{
			Cause: err, NextRetryDelay: max(time.Until(held.Expires)+leaseRetryMargin, leaseRetryMargin),
		})
	case errors.As(err, &undecl), errors.As(err, &shape),
		errors.Is(err, graph.ErrNoCheckpointer), errors.Is(err, graph.ErrNotCompiled),
		errors.Is(err, graph.ErrAmbiguousResume), errors.Is(err, graph.ErrNothingToResume),
		errors.Is(err, graph.ErrNotInterrupted), errors.Is(err, graph.ErrNoThread),
		errors.Is(err, graph.ErrUnknownTask):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeGraph, err)
	}
	return err
}

// RetryPolicy returns Temporal's retry policy for p: the same initial
// interval, backoff factor, maximum interval and attempts. Temporal has no
// jitter and no RetryOn function: errors that must not be retried are
// failed as non-retryable application errors instead.
func RetryPolicy(p graph.RetryPolicy) *sdktemporal.RetryPolicy {
	attempts := p.MaxAttempts
	if attempts < 1 {
		attempts = 1
	}
	rp := &sdktemporal.RetryPolicy{
		InitialInterval:    p.InitialInterval,
		BackoffCoefficient: p.BackoffFactor,
		MaximumInterval:    p.MaxInterval,
		MaximumAttempts:    int32(min(attempts, 1<<30)),
	}
	if rp.BackoffCoefficient < 1 {
		rp.BackoffCoefficient = 1
	}
	if rp.InitialInterval <= 0 {
		rp.InitialInterval = time.Second
	}
	return rp
}

func errf(format string, args ...any) error {
	return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeGraph, nil)
}
