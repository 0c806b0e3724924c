package temporal

import (
	"context"
	"encoding/json"
	"errors"
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
		return TaskResult{}, errf("temporal: %v: task %s (%s) of thread %s", graph.ErrUnknownTask, req.ID, req.Node, req.Thread)
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
	case errors.As(runErr, &intr):
		after, err := w.g.GetState(ctx, thread)
		if err != nil {
			return TaskResult{}, toActivityError(err)
		}
		ins, err := withTasks(intr.Interrupts, after)
		return TaskResult{Interrupts: ins}, err
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
	await func() (map[string]json.RawMessage, error)) (Status, error) {
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
		if hit := breakpointHits(w.after, ending); res.Ran > 0 && len(status.Interrupts) == 0 && len(hit) > 0 {
			// A breakpoint after the last nodes pauses too, as in process.
			status.After = hit
			if _, err := await(); err != nil {
				return *status, err
			}
			status.After = nil
		}
		if status.Done {
			return *status, nil
		}
		owned = owned || res.Owned
		if res.Ran > 0 && !status.Paused() && w.continueAsNew(ctx, activities) {
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
			futures := make([]workflow.Future, len(todo))
			for i, t := range todo {
				treq := TaskRequest{Thread: in.Thread, RunID: runID, From: status.CheckpointID, ID: t.ID, Node: t.Node}
				for _, it := range status.Interrupts {
					if it.Task == t.ID && answers != nil {
						if treq.Answers == nil {
							treq.Answers = map[string]json.RawMessage{}
						}
						treq.Answers[it.ID] = answers[it.ID]
					}
				}
				tctx := workflow.WithActivityOptions(ctx, w.activityOptions(t.Node))
				futures[i] = workflow.ExecuteActivity(tctx, w.name+taskSuffix, treq)
			}
			var (
				firstErr error
				raised   []Interrupt
			)
			for i, f := range futures {
				var tr TaskResult
				err := f.Get(ctx, &tr)
				activities++
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				case len(tr.Interrupts) > 0:
					raised = append(raised, tr.Interrupts...)
				default:
					j := slices.IndexFunc(status.Tasks, func(t Task) bool { return t.ID == todo[i].ID })
					status.Tasks[j].Done = true
				}
			}
			status.Activities = activities
			if firstErr != nil {
				return *status, firstErr
			}
			status.Interrupts, answers = raised, nil
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
		if set[n] && !slices.Contains(hit, n) {
			hit = append(hit, n)
		}
	}
	slices.Sort(hit)
	return hit
}
