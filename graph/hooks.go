package graph

import "context"

// Hooks observe runs, for tracing and metrics; every field is optional.
// Each Start hook returns the context the observed work runs with (a span
// attached, say); the matching End hook receives that context. Hooks are
// called from the goroutines that run the tasks, so they must be safe for
// concurrent use.
type Hooks struct {
	// RunStart is called when a run (or a subgraph's nested run) starts.
	RunStart func(ctx context.Context, run RunInfo) context.Context
	// RunEnd is called when it ends; err is nil on success and an
	// [*Interrupted] when the run paused.
	RunEnd func(ctx context.Context, run RunInfo, err error)
	// TaskStart is called before a node task runs (once, whatever its
	// retries).
	TaskStart func(ctx context.Context, task TaskRun) context.Context
	// TaskEnd is called after it finished, failed or interrupted.
	TaskEnd func(ctx context.Context, task TaskRun, err error)
}

// RunInfo describes a run to [Hooks].
type RunInfo struct {
	Graph     string
	ThreadID  string
	Namespace string
}

// TaskRun describes a task to [Hooks].
type TaskRun struct {
	Node      string
	TaskID    string
	Step      int
	Namespace string
	// Attempts is how many times the node ran (set for TaskEnd).
	Attempts int
	// Interrupted is set for TaskEnd when the task paused the run.
	Interrupted bool
}

// WithHooks observes the graph's runs with h.
func WithHooks(h Hooks) CompileOption { return func(c *compileConfig) { c.hooks = &h } }
