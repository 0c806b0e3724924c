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

// WithHooks observes the graph's runs with h. Hooks given by several
// WithHooks options all run: their Start hooks in the order given (each
// receiving the context the one before returned), their End hooks in the
// reverse order, like deferred calls.
func WithHooks(h Hooks) CompileOption {
	return compileOption(func(c *compileConfig) {
		if c.hooks == nil {
			c.hooks = &h
			return
		}
		prev := *c.hooks
		c.hooks = &Hooks{
			RunStart:  chainStart(prev.RunStart, h.RunStart),
			RunEnd:    chainEnd(prev.RunEnd, h.RunEnd),
			TaskStart: chainStart(prev.TaskStart, h.TaskStart),
			TaskEnd:   chainEnd(prev.TaskEnd, h.TaskEnd),
		}
	})
}

// chainStart calls first, then second with the context first returned.
func chainStart[I any](first, second func(context.Context, I) context.Context) func(context.Context, I) context.Context {
	switch {
	case first == nil:
		return second
	case second == nil:
		return first
	}
	return func(ctx context.Context, info I) context.Context {
		return second(first(ctx, info), info)
	}
}

// chainEnd calls second, then first: the reverse order of chainStart.
func chainEnd[I any](first, second func(context.Context, I, error)) func(context.Context, I, error) {
	switch {
	case first == nil:
		return second
	case second == nil:
		return first
	}
	return func(ctx context.Context, info I, err error) {
		second(ctx, info, err)
		first(ctx, info, err)
	}
}
