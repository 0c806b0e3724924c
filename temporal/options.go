package temporal

import (
	"context"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/graph"
)

// DefaultInlineStateLimit is the largest encoded state, in bytes, that
// travels inline in activity results, query answers and the workflow's
// result when no [WithInlineStateLimit] is given. Larger states stay in the
// graph's checkpoint.Saver only and are passed by reference (thread and
// checkpoint ID): Temporal refuses payloads above 2 MB and warns above
// 512 KB, and every inline state is written to the workflow's history.
const DefaultInlineStateLimit = 64 << 10

// DefaultStepsPerActivity is how many supersteps one step activity runs
// under [WithStepsPerActivity] when n is out of range.
const DefaultStepsPerActivity = 1

// DefaultContinueAsNewAfter is how many step activities one workflow run
// executes before it continues as new when no [WithContinueAsNewAfter] is
// given.
const DefaultContinueAsNewAfter = 1000

// Option configures a [Workflow].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	activity       workflow.ActivityOptions
	nodeActivity   map[string]workflow.ActivityOptions
	perStep        bool // WithStepsPerActivity: supersteps, not tasks, are activities
	stepsPer       int
	inlineLimit    int
	recursionLimit int
	continueAfter  int
	events         func(ctx context.Context, thread string, ev graph.Event)
	modes          graph.Mode
	// searchAttributes and visibility: see WithSearchAttributes and
	// WithVisibility.
	searchAttributes bool
	visibility       func(Progress) Visibility
}

func defaultConfig() config {
	return config{
		activity: workflow.ActivityOptions{
			StartToCloseTimeout: time.Hour,
			HeartbeatTimeout:    30 * time.Second,
			// A cancelled workflow waits for its step to stop (the graph's
			// context is cancelled at the next heartbeat), so that no step
			// writes checkpoints after the workflow closed.
			WaitForCancellation: true,
		},
		stepsPer:       DefaultStepsPerActivity,
		inlineLimit:    DefaultInlineStateLimit,
		recursionLimit: graph.DefaultRecursionLimit,
		continueAfter:  DefaultContinueAsNewAfter,
	}
}

// WithActivityOptions sets the options of the activities that run the
// graph's supersteps: task queue, timeouts and the retry policy for
// failures outside the graph's nodes (a killed worker, a saver that cannot
// be reached). The default is a start-to-close timeout of one hour, a
// heartbeat timeout of 30 s (the activity heartbeats at a third of it, so
// a killed worker is noticed within it) and Temporal's default retry
// policy. A node's own [graph.RetryPolicy] and [graph.WithNodeTimeout] run
// inside the activity as they do in process; a node that fails for good
// fails the workflow without an activity retry. Use [RetryPolicy] to turn
// a graph.RetryPolicy into Temporal's.
//
// Takeover after a killed worker: Temporal declares an attempt dead when
// no heartbeat came within HeartbeatTimeout, and retries the activity on
// another worker (after the retry policy's first interval). A task
// activity holds no thread lease: its retry runs at once. A step activity
// — one that ends a step, running its single task, or every activity under
// [WithStepsPerActivity] — needs the thread's lease, which the dead
// attempt held. A step activity holds it for the activity's
// HeartbeatTimeout (it runs the graph with graph.WithLeaseTTL of that
// time, whatever the graph was compiled with): on the same machine the
// SQLite and PostgreSQL savers see that the holder's process died and hand
// the lease over at once; from another machine it is taken when it
// expires, at most a heartbeat timeout after the holder's last renewal.
// Until then the attempt fails with a retryable error of type
// [ErrTypeLeaseHeld] whose next retry is set to the lease's expiry, not to
// the retry policy's backoff (which doubles from try to try). So recovery
// takes about the heartbeat timeout. Taking the lease then is safe: a holder that was
// declared dead but still runs has its next write refused by the saver (a
// checkpoint.FencedError, see docs/durability.md), and Temporal drops its
// result. A shorter TTL costs one lease renewal per TTL/3 per running
// activity. (The workflow task itself may wait for Temporal's sticky queue
// timeout, 5 s by default, when the killed worker had the workflow in its
// cache: see worker.Options.StickyScheduleToStartTimeout.)
func WithActivityOptions(o workflow.ActivityOptions) Option {
	return optionFunc(func(c *config) { c.activity = o })
}

// WithStepsPerActivity makes whole supersteps the workflow's activities,
// instead of tasks (see the package doc), and sets how many supersteps one
// activity runs (n ≥ 1; 2 is taken as 3, since the engine's Resume cannot
// stop after two). A step's tasks then run in parallel inside one
// activity, on one worker, and [WithNodeActivityOptions] does not apply. Every superstep is checkpointed either way, so a retried activity
// resumes from the last one and re-runs only the tasks of its step that
// had not finished; larger n saves Temporal round trips at the cost of
// coarser progress in the workflow's history and queries, and an interrupt
// still ends its activity at once.
func WithStepsPerActivity(n int) Option {
	return optionFunc(func(c *config) {
		c.perStep = true
		switch {
		case n == 2:
			c.stepsPer = 3
		case n >= 1:
			c.stepsPer = n
		}
	})
}

// WithNodeActivityOptions sets the options of the activities that run
// the tasks of node — its own task queue (workers with a GPU, say),
// timeouts or retry policy for failures outside the node — instead of
// those of [WithActivityOptions]. A step whose only task is of node runs
// with them too, its merge included.
func WithNodeActivityOptions(node string, o workflow.ActivityOptions) Option {
	return optionFunc(func(c *config) {
		if c.nodeActivity == nil {
			c.nodeActivity = map[string]workflow.ActivityOptions{}
		}
		c.nodeActivity[node] = o
	})
}

// WithInlineStateLimit sets the largest encoded state, in bytes, that
// activity results, queries and the workflow's result carry inline (see
// [DefaultInlineStateLimit]); a negative n never inlines the state. It is
// capped at [MaxInlineStateLimit], below Temporal's payload limit.
func WithInlineStateLimit(n int) Option {
	return optionFunc(func(c *config) { c.inlineLimit = min(n, MaxInlineStateLimit) })
}

// MaxInlineStateLimit caps [WithInlineStateLimit]: Temporal refuses
// payloads over 2 MB by default, and a result carries more than the state.
const MaxInlineStateLimit = 1 << 20

// WithRecursionLimit bounds the supersteps of one workflow run, as
// [graph.WithRecursionLimit] does an in-process run (default
// [graph.DefaultRecursionLimit]): a run that would take more fails with an
// error of type [ErrTypeRecursion]. It counts the supersteps that run
// nodes; Invoke counts the step that applies the input too, so a graph
// that runs within a limit of n in process runs within n-1 here.
func WithRecursionLimit(n int) Option {
	return optionFunc(func(c *config) {
		if n >= 1 {
			c.recursionLimit = n
		}
	})
}

// WithEvents streams the events of every run the worker executes, of the
// given modes, to fn, on the worker that runs the step. Temporal's
// activities cannot stream to the workflow's starter, so events reach a
// caller outside Temporal through the worker side: fn typically publishes
// them on the events bus or a message queue, keyed by thread. fn is called
// from the activity's goroutine and must not block for long.
func WithEvents(modes graph.Mode, fn func(ctx context.Context, thread string, ev graph.Event)) Option {
	return optionFunc(func(c *config) { c.events, c.modes = fn, modes })
}

// WithContinueAsNewAfter makes a workflow run that has executed n step
// activities (or whose history passed 8 MB, or that Temporal suggests
// should) continue as a new run of
// the same workflow ID with an [Input] that continues the thread, so that
// the history of a long run stays small (default
// [DefaultContinueAsNewAfter]). The new run counts the supersteps of the
// earlier ones against the recursion limit. A run never continues as new
// while it waits for answers.
func WithContinueAsNewAfter(n int) Option {
	return optionFunc(func(c *config) {
		if n >= 1 {
			c.continueAfter = n
		}
	})
}
