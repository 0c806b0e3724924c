package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentgraph/agentgraph/graph"
)

// Names of the signal, update and query of a graph's workflow.
const (
	// SignalResume carries a [ResumeSignal]: the answer to one interrupt.
	SignalResume = "agentgraph.resume"
	// UpdateResume carries a [ResumeSignal] as an update: unlike the
	// signal, an answer to an interrupt the run is not waiting on (or one
	// answered already, by signal or by update) is refused, and the caller
	// learns it (an application error of type [ErrTypeNotWaiting] or
	// [ErrTypeAnswered]).
	UpdateResume = "agentgraph.answer"
	// QueryState returns the run's [Status].
	QueryState = "agentgraph.state"
	// activitySuffix names a graph's step activity after its workflow.
	activitySuffix = ".step"
	// taskSuffix names a graph's task activity after its workflow.
	taskSuffix = ".task"
)

// Workflow runs a compiled graph as a Temporal workflow. The graph must
// have a checkpoint.Saver that every worker of the task queue reaches
// (checkpoint/postgres for workers on several machines, checkpoint/sqlite
// for workers sharing one disk): the state lives there, and the workflow
// passes references to it.
//
// The workflow code runs the superstep loop: it runs each task of a step
// in a task activity (or the whole step, or [WithStepsPerActivity] steps,
// in a step activity), asks a step activity to end the step, learns where
// the run stands — the checkpoint ID, the next tasks, the pending
// interrupts — and either finishes, waits for the answers to the
// interrupts, or goes on with the next step. Nodes, routers, branches and
// reducers all run in activities, inside the graph's own engine, so code
// that calls models never runs in workflow code and the run's writes merge
// in the same order as in process.
type Workflow[S any] struct {
	name string
	g    *graph.Graph[S]
	cfg  config
	// before and after are the graph's compiled breakpoints.
	before, after map[string]bool
	// maxConc bounds the task activities of a step that run at once (the
	// graph's MaxConcurrency; 0 for no bound).
	maxConc int
}

// New returns the workflow of g, registered under name (its activities
// are named name+".step" and name+".task"). The state type S must be a struct of field types
// of package state, as every graph's is.
func New[S any](name string, g *graph.Graph[S], opts ...Option) (*Workflow[S], error) {
	if name == "" {
		return nil, errors.New("temporal: the workflow needs a name")
	}
	if g == nil {
		return nil, errors.New("temporal: nil graph")
	}
	if _, err := encodeWrites(*new(S)); err != nil {
		return nil, err
	}
	w := &Workflow[S]{name: name, g: g, cfg: defaultConfig(), before: map[string]bool{}, after: map[string]bool{},
		maxConc: g.MaxConcurrency()}
	before, after := g.Breakpoints()
	for _, n := range before {
		w.before[n] = true
	}
	for _, n := range after {
		w.after[n] = true
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&w.cfg)
		}
	}
	return w, nil
}

// Name returns the workflow type name the graph is registered under.
func (w *Workflow[S]) Name() string { return w.name }

// Registry is what [Workflow.Register] registers with: a worker.Worker,
// or the test environment of package testsuite.
type Registry interface {
	worker.WorkflowRegistry
	worker.ActivityRegistry
}

// Register registers the workflow and its activities with r.
func (w *Workflow[S]) Register(r Registry) {
	r.RegisterWorkflowWithOptions(w.Run, workflow.RegisterOptions{Name: w.name})
	r.RegisterActivityWithOptions(w.Step, activity.RegisterOptions{Name: w.name + activitySuffix})
	r.RegisterActivityWithOptions(w.Task, activity.RegisterOptions{Name: w.name + taskSuffix})
}

// Input is the argument of a graph's workflow.
type Input struct {
	// Thread is the graph thread the run works on.
	Thread string `json:"thread"`
	// Writes is the run's input: the writes of the input state, each
	// field's write in its checkpoint encoding (see [Workflow.Input]).
	Writes map[string]json.RawMessage `json:"writes,omitempty"`
	// Continue resumes the thread from its latest checkpoint (as
	// [graph.Graph.Resume] with an empty Command) instead of starting a
	// run with Writes: for a thread whose run failed or paused before.
	Continue bool `json:"continue,omitempty"`
	// Steps counts the supersteps taken by the runs this one continues
	// (see [WithContinueAsNewAfter]), for the recursion limit.
	Steps int `json:"steps,omitempty"`
}

// Input returns the workflow argument that runs the graph on input in
// thread, as [graph.Graph.Invoke] would.
func (w *Workflow[S]) Input(thread string, input S) (Input, error) {
	if thread == "" {
		return Input{}, graph.ErrNoThread
	}
	ws, err := encodeWrites(input)
	if err != nil {
		return Input{}, err
	}
	return Input{Thread: thread, Writes: ws}, nil
}

// Interrupt is a pending [graph.Interruption] as a workflow reports it:
// its payload in JSON.
type Interrupt struct {
	ID        string          `json:"id"`
	Node      string          `json:"node"`
	Namespace string          `json:"ns,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	// Task is the ID of the task that raised it.
	Task string `json:"task,omitempty"`
}

// Task is a task of the next superstep, as a [Status] reports it.
type Task struct {
	ID   string `json:"id"`
	Node string `json:"node"`
	// Done reports that the task finished and its writes are saved.
	Done bool `json:"done,omitempty"`
}

// ResumeSignal answers one interrupt: the payload of [SignalResume].
type ResumeSignal struct {
	// ID is the [Interrupt] answered; empty to go on past a static
	// breakpoint.
	ID string `json:"id"`
	// Value is the answer in JSON: the node's [graph.Interrupt] returns it
	// decoded into an any (read it with [graph.InterruptAs]).
	Value json.RawMessage `json:"value,omitempty"`
}

// Status is where a run stands: the answer of [QueryState], the result
// of each step activity, and the workflow's result.
type Status struct {
	Thread string `json:"thread"`
	// CheckpointID is the thread's latest checkpoint: with Thread, the
	// reference to the state in the graph's saver.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Step is the superstep of that checkpoint.
	Step int `json:"step"`
	// Next names the tasks of the next superstep.
	Next []string `json:"next,omitempty"`
	// Tasks are the tasks of the next superstep, those done included.
	Tasks []Task `json:"tasks,omitempty"`
	// Interrupts are the pending dynamic interrupts.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Answered lists, sorted, the IDs of the pending interrupts answered
	// so far while the run waits ("" for a static breakpoint).
	Answered []string `json:"answered,omitempty"`
	// Before and After name the nodes of a static breakpoint the run
	// paused at.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	// Done reports that the run finished.
	Done bool `json:"done,omitempty"`
	// Values is the state in JSON (each field's checkpoint encoding of its
	// value), when it is at most the inline limit (see
	// [WithInlineStateLimit]); nil otherwise: read the state from the
	// saver with [Workflow.Values].
	Values json.RawMessage `json:"values,omitempty"`
	// Size is the length of the state's JSON encoding.
	Size int `json:"size"`
	// Steps counts the supersteps this workflow run has taken.
	Steps int `json:"steps"`
	// Activities counts the step activities this workflow run has
	// completed.
	Activities int `json:"activities"`
}

// Paused reports whether the run waits for answers.
func (s Status) Paused() bool { return len(s.Interrupts) > 0 || len(s.Before) > 0 || len(s.After) > 0 }

// StepRequest is the argument of a graph's step activity.
type StepRequest struct {
	Thread string `json:"thread"`
	// RunID marks the checkpoints of one workflow run, so that a retried
	// first activity resumes what an earlier attempt started.
	RunID string `json:"run_id"`
	// Start runs the graph on Writes; otherwise the thread resumes.
	Start bool `json:"start,omitempty"`
	// Continue marks the first activity of a run that continues a thread
	// another run wrote (see [Input.Continue]).
	Continue bool                       `json:"continue,omitempty"`
	Writes   map[string]json.RawMessage `json:"writes,omitempty"`
	// Answers answer pending interrupts by ID.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Limit is how many supersteps to run at most.
	Limit int `json:"limit"`
	// Plan stops the run before the tasks of its next step (a run of
	// tasks as activities): the activity runs the current step's tasks
	// that have not run (one at most, or none), ends the step and plans
	// the next.
	Plan bool `json:"plan,omitempty"`
	// From is the checkpoint whose step a Plan request ends: a thread
	// past it was stepped by an earlier attempt, which is reported, not
	// run again.
	From string `json:"from,omitempty"`
	// Report runs nothing: the activity reports where the thread stands.
	Report bool `json:"report,omitempty"`
}

// Run is the workflow function: it runs the graph on in and returns the
// run's final [Status]. A paused run waits for a [SignalResume] or an
// [UpdateResume] per pending interrupt, in any order, and then goes on.
// Both go through one gate: the first answer to an interrupt that
// reaches the workflow counts; any other answer to it — and any answer to
// an interrupt the run does not wait on — is refused: an update fails,
// a signal is logged and dropped. No answer outlives its pause, so a
// second answer never passes a later breakpoint. [QueryState] answers with the
// current Status at any time, also after the run.
func (w *Workflow[S]) Run(ctx workflow.Context, in Input) (_ Status, err error) {
	if in.Thread == "" {
		return Status{}, errf("%v", graph.ErrNoThread)
	}
	// The run keeps its progress in its memo (and search attributes), so
	// that it can be read with no worker up.
	pub := newPublisher(ctx, &w.cfg)
	info := workflow.GetInfo(ctx)
	runID := info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID
	status := Status{Thread: in.Thread}
	defer func() { pub.end(ctx, status, err) }()
	progress := func(closing bool) {
		p := progressOf(status)
		if closing {
			// Answered: the run goes on, and nothing is pending until its
			// next step says otherwise.
			p.Status = ProgressRunning
			p.Interrupts, p.Omitted, p.Before, p.After = nil, 0, nil, nil
		}
		pub.publish(ctx, p)
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (Status, error) { return status, nil }); err != nil {
		return status, err
	}
	// Every answer, by signal or by update, goes through one gate: the
	// first to an interrupt counts, any other is refused.
	gate := &answerGate{thread: in.Thread, status: &status, changed: progress}
	await, err := gate.wire(ctx)
	if err != nil {
		return status, err
	}
	if !w.cfg.perStep {
		return w.runTasks(ctx, in, runID, &status, await, func() { progress(false) })
	}
	actx := workflow.WithActivityOptions(ctx, w.cfg.activity)
	req := StepRequest{Thread: in.Thread, RunID: runID, Start: !in.Continue, Continue: in.Continue, Writes: in.Writes}
	steps, activities, owned := max(in.Steps, 0), 0, false
	for {
		req.Limit = min(w.cfg.stepsPer, w.cfg.recursionLimit-steps)
		if req.Limit == 2 {
			req.Limit = 1 // a resumed batch runs at least 3 steps (see WithStepsPerActivity)
		}
		if req.Limit < 1 {
			return status, w.recursionError(status)
		}
		var res StepResult
		if err := workflow.ExecuteActivity(actx, w.name+activitySuffix, req).Get(ctx, &res); err != nil {
			return status, err
		}
		steps += res.Ran
		activities++
		status = res.Status
		status.Steps, status.Activities = steps, activities
		if status.Done {
			return status, nil
		}
		progress(false)
		// A continuing run owns the thread once it wrote a checkpoint; a
		// step that paused at once may not have.
		owned = owned || res.Owned
		req = StepRequest{Thread: in.Thread, RunID: runID, Continue: in.Continue && !owned}
		if !status.Paused() {
			if w.continueAsNew(ctx, activities) {
				return status, workflow.NewContinueAsNewError(ctx, w.name, Input{Thread: in.Thread, Continue: true, Steps: steps})
			}
			continue
		}
		answers, err := await()
		if err != nil {
			return status, err
		}
		if len(answers) > 0 {
			req.Answers = answers
		}
	}
}

// recursionError fails a run that reached its recursion limit.
func (w *Workflow[S]) recursionError(status Status) error {
	return sdktemporal.NewNonRetryableApplicationError(
		fmt.Sprintf("temporal: recursion limit of %d reached without hitting a stop condition (next nodes: %s); raise it with temporal.WithRecursionLimit",
			w.cfg.recursionLimit, strings.Join(status.Next, ", ")),
		ErrTypeRecursion, nil)
}

// continueAsNew reports whether a run that is not waiting for answers
// should continue as new now.
func (w *Workflow[S]) continueAsNew(ctx workflow.Context, activities int) bool {
	info := workflow.GetInfo(ctx)
	return activities >= w.cfg.continueAfter || info.GetContinueAsNewSuggested() ||
		info.GetCurrentHistorySize() > continueAsNewHistoryBytes
}

// waitsOn reports whether a run at st waits for the answer id: the ID of
// a pending interrupt, or "" at a static breakpoint.
func waitsOn(st Status, id string) bool {
	if len(st.Interrupts) == 0 {
		return st.Paused() && id == ""
	}
	return slices.ContainsFunc(st.Interrupts, func(in Interrupt) bool { return in.ID == id })
}

// continueAsNewHistoryBytes is the history size past which a run
// continues as new whatever its activity count: Temporal warns at 10 MB
// and fails a workflow at 50 MB, and each step may inline up to the
// inline limit of state.
const continueAsNewHistoryBytes = 8 << 20

// StepResult is what a step activity returns: the [Status] of the run
// and how many supersteps the activity ran.
type StepResult struct {
	Status
	Ran int `json:"ran"`
	// Owned reports that the thread's latest checkpoint is of this
	// workflow run.
	Owned bool `json:"owned,omitempty"`
}
