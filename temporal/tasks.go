package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/graph"
)

// TaskRequest is the argument of a graph's task activity.
type TaskRequest struct {
	Thread string `json:"thread"`
	RunID  string `json:"run_id"`
	// From is the checkpoint whose next step the task belongs to.
	From string `json:"from"`
	// ID and Node name the task.
	ID   string `json:"id"`
	Node string `json:"node"`
	// Answers answer the task's pending interrupts by ID.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// TaskResult is what a task activity returns: the interrupts the task
// raised, if it paused.
type TaskResult struct {
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Paused reports a task that stopped at a breakpoint compiled into a
	// subgraph: it runs again, on past it, when the run goes on.
	Paused bool `json:"paused,omitempty"`
}

// Task is the task activity: it runs one task of the thread's next step
// (the node with its middleware, retry policy and timeout, then its
// router) through the graph's engine ([graph.WithTasks]) and saves its
// writes, interrupts or error as the step's pending writes, leaving the
// step to a later step activity. A task whose writes are saved already —
// by an earlier attempt whose worker died after the node returned — does
// not run again.
func (w *Workflow[S]) Task(ctx context.Context, req TaskRequest) (TaskResult, error) {
	if req.Thread == "" || req.ID == "" || req.From == "" {
		return TaskResult{}, errf("temporal: task request needs a thread, a checkpoint and a task ID (thread %q, checkpoint %q, task %q)", req.Thread, req.From, req.ID)
	}
	defer heartbeat(ctx)()
	thread := graph.WithThread(req.Thread)
	before, err := w.g.GetState(ctx, thread)
	if err != nil {
		return TaskResult{}, toActivityError(err)
	}
	if before.CheckpointID != req.From {
		return TaskResult{}, errf("temporal: task %s (%s) belongs to the step after checkpoint %s of thread %s, which has moved on to %s: "+
			"another run wrote to the thread, or the step was ended without the task", req.ID, req.Node, req.From, req.Thread, before.CheckpointID)
	}
	i := slices.IndexFunc(before.Tasks, func(tk graph.TaskInfo) bool { return tk.ID == req.ID })
	if i < 0 {
		return TaskResult{}, toActivityError(fmt.Errorf("temporal: task %s (%s) of thread %s: %w", req.ID, req.Node, req.Thread, graph.ErrUnknownTask))
	}
	if before.Tasks[i].Done {
		return TaskResult{}, nil
	}
	cmd, err := resumeCommand[S](req.Answers, before.Interrupts)
	if err != nil {
		return TaskResult{}, err
	}
	opts := []graph.RunOption{thread, graph.WithRunID(req.RunID), graph.WithTasks(req.ID)}
	// The step activity that ends the step sends the state; a task sends
	// its own events only.
	keep := func(_ bool, ev graph.Event) bool { return ev.Mode != graph.ModeValues || ev.Namespace != "" }
	runErr := w.run(ctx, req.Thread, nil, &cmd, opts, keep)
	var intr *graph.Interrupted
	switch {
	case runErr == nil:
		return TaskResult{}, nil
	case errors.As(runErr, &intr) && len(intr.Interrupts) == 0:
		// A breakpoint compiled into a subgraph of the task.
		return TaskResult{Paused: true}, nil
	case errors.As(runErr, &intr):
		after, err := w.g.GetState(ctx, thread)
		if err != nil {
			return TaskResult{}, toActivityError(err)
		}
		ins, err := withTasks(intr.Interrupts, after)
		return TaskResult{Interrupts: ins}, err
	case errors.Is(runErr, graph.ErrNotInterrupted) && len(cmd.ResumeMap) > 0:
		// Another attempt of this task (Temporal retries one whose
		// heartbeats stopped, though it may still run) used the answers
		// first: its outcome counts.
		after, err := w.g.GetState(ctx, thread)
		if err != nil {
			return TaskResult{}, toActivityError(err)
		}
		if i := slices.IndexFunc(after.Tasks, func(tk graph.TaskInfo) bool { return tk.ID == req.ID }); i >= 0 && after.Tasks[i].Done {
			return TaskResult{}, nil
		}
		return TaskResult{}, fmt.Errorf("temporal: task %s (%s) of thread %s: another attempt answered its interrupts and has not finished: %w", req.ID, req.Node, req.Thread, runErr)
	default:
		return TaskResult{}, toActivityError(runErr)
	}
}

// activityOptions returns the options of the activities that run tasks
// of node ("" for none in particular).
func (w *Workflow[S]) activityOptions(node string) workflow.ActivityOptions {
	if o, ok := w.cfg.nodeActivity[node]; ok && node != "" {
		return o
	}
	return w.cfg.activity
}

// runTasks is the workflow loop when tasks are activities: a step
// activity plans the first step; then, step by step, each task runs in a
// task activity of its own, the tasks of a step in parallel, and a step
// activity ends the step and plans the next. A step with a single task
// to run runs it in that step activity, saving a round trip.
func (w *Workflow[S]) runTasks(ctx workflow.Context, in Input, runID string, status *Status,
	await func() (map[string]json.RawMessage, error), progress func()) (Status, error) {
	req := StepRequest{Thread: in.Thread, RunID: runID, Start: !in.Continue, Continue: in.Continue, Writes: in.Writes, Plan: true, Limit: 1}
	if in.Continue {
		req = StepRequest{Thread: in.Thread, RunID: runID, Continue: true, Report: true, Limit: 1}
	}
	node := ""
	steps, activities, owned := max(in.Steps, 0), 0, false
	// ending names the nodes of the step the next step activity ends;
	// released is the checkpoint whose breakpoint before was answered.
	var ending []string
	released := ""
	for {
		var res StepResult
		actx := workflow.WithActivityOptions(ctx, w.activityOptions(node))
		if err := workflow.ExecuteActivity(actx, w.name+activitySuffix, req).Get(ctx, &res); err != nil {
			return *status, err
		}
		steps += res.Ran
		activities++
		*status = res.Status
		status.Steps, status.Activities = steps, activities
		if !res.Done {
			progress()
		}
		if hit := breakpointHits(w.after, ending); res.Ran > 0 && len(status.Interrupts) == 0 && len(hit) > 0 {
			// A breakpoint after the last nodes pauses too, as in process.
			status.After = hit
			if _, err := await(); err != nil {
				return *status, err
			}
			// Going on past it passes a breakpoint before the next step
			// too, as Resume does.
			status.After, released = nil, status.CheckpointID
		}
		if status.Done {
			return *status, nil
		}
		owned = owned || res.Owned
		// (Not right after going on past a breakpoint after the step: the
		// new run would not know it passes the one before the next.)
		if res.Ran > 0 && !status.Paused() && released != status.CheckpointID && w.continueAsNew(ctx, activities) {
			return *status, workflow.NewContinueAsNewError(ctx, w.name, Input{Thread: in.Thread, Continue: true, Steps: steps})
		}
		if steps >= w.cfg.recursionLimit && len(status.Interrupts) == 0 {
			return *status, w.recursionError(*status)
		}
		if len(status.Interrupts) == 0 && status.CheckpointID != released {
			var next []string
			for _, t := range status.Tasks {
				if !t.Done {
					next = append(next, t.Node)
				}
			}
			if hit := breakpointHits(w.before, next); len(hit) > 0 {
				status.Before = hit
				if _, err := await(); err != nil {
					return *status, err
				}
				status.Before, released = nil, status.CheckpointID
			}
		}
		// Run the step's tasks until none is left to run but one at most.
		var answers map[string]json.RawMessage
		for {
			if status.Paused() {
				var err error
				if answers, err = await(); err != nil {
					return *status, err
				}
			}
			var todo []Task
			for _, t := range status.Tasks {
				if !t.Done {
					todo = append(todo, t)
				}
			}
			if len(todo) <= 1 {
				node = ""
				if len(todo) == 1 {
					node = todo[0].Node
				}
				break
			}
			// Tasks start in the step's order, at most the graph's
			// MaxConcurrency at a time (one after the other with 1, as in
			// process); after a failure no other starts.
			limit := w.maxConc
			if limit <= 0 {
				limit = len(todo)
			}
			futures := make([]workflow.Future, len(todo))
			// The first failure cancels the step's other tasks, as in
			// process (an interrupt does not).
			bctx, cancel := workflow.WithCancel(ctx)
			start := func(i int) {
				t := todo[i]
				treq := TaskRequest{Thread: in.Thread, RunID: runID, From: status.CheckpointID, ID: t.ID, Node: t.Node}
				for _, it := range status.Interrupts {
					if it.Task == t.ID && answers != nil {
						if treq.Answers == nil {
							treq.Answers = map[string]json.RawMessage{}
						}
						treq.Answers[it.ID] = answers[it.ID]
					}
				}
				tctx := workflow.WithActivityOptions(bctx, w.activityOptions(t.Node))
				futures[i] = workflow.ExecuteActivity(tctx, w.name+taskSuffix, treq)
			}
			for i := range min(limit, len(todo)) {
				start(i)
			}
			var (
				firstErr error
				raised   []Interrupt
				stopped  []string
			)
			for i, f := range futures {
				if f == nil {
					break // not started: a task before it failed
				}
				var tr TaskResult
				err := f.Get(ctx, &tr)
				activities++
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				case tr.Paused:
					stopped = append(stopped, todo[i].Node)
				case len(tr.Interrupts) > 0:
					raised = append(raised, tr.Interrupts...)
				default:
					j := slices.IndexFunc(status.Tasks, func(t Task) bool { return t.ID == todo[i].ID })
					status.Tasks[j].Done = true
				}
				if next := i + limit; next < len(todo) && firstErr == nil {
					start(next)
				}
			}
			cancel()
			status.Activities = activities
			if firstErr != nil {
				return *status, firstErr
			}
			status.Interrupts, answers = raised, nil
			if len(raised) == 0 && len(stopped) > 0 {
				status.Before = sortedSet(stopped)
				continue // waits, then runs the stopped tasks on
			}
			status.Before = nil
			if len(raised) == 0 {
				node = ""
				break
			}
		}
		ending = ending[:0]
		for _, t := range status.Tasks {
			ending = append(ending, t.Node)
		}
		req = StepRequest{Thread: in.Thread, RunID: runID, Continue: in.Continue && !owned, Plan: true, Limit: 1,
			From: status.CheckpointID, Answers: answers}
	}
}

// breakpointHits returns the nodes of nodes that are in set, sorted, each
// once.
func breakpointHits(set map[string]bool, nodes []string) []string {
	var hit []string
	for _, n := range nodes {
		if set[n] {
			hit = append(hit, n)
		}
	}
	return sortedSet(hit)
}

// sortedSet returns names sorted, each once, in a new slice (nil for
// none).
func sortedSet(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
