package temporal

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/client"
)

// Start starts a run of the graph on input in thread as a workflow of c.
// opts.TaskQueue must name the workers' task queue; opts.ID defaults to
// the thread, so that one thread has at most one open run: starting
// another while one is open fails (with Temporal's
// serviceerror.WorkflowExecutionAlreadyStarted) instead of handing back
// the open run and dropping input, unless opts says otherwise.
func (w *Workflow[S]) Start(ctx context.Context, c client.Client, thread string, input S, opts client.StartWorkflowOptions) (client.WorkflowRun, error) {
	in, err := w.Input(thread, input)
	if err != nil {
		return nil, err
	}
	if opts.ID == "" {
		opts.ID = thread
		opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	}
	return c.ExecuteWorkflow(ctx, opts, w.name, in)
}

// Answer answers the interrupt id of the open run of workflowID with
// value, which is sent as JSON (see [ResumeSignal]). An empty id goes on
// past a static breakpoint.
func Answer(ctx context.Context, c client.Client, workflowID, id string, value any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("temporal: encoding the answer to interrupt %s: %w", id, err)
	}
	return c.SignalWorkflow(ctx, workflowID, "", SignalResume, ResumeSignal{ID: id, Value: b})
}

// Query returns the [Status] of the latest run of workflowID: where it
// stands, its pending interrupts, and its state when small enough.
func Query(ctx context.Context, c client.Client, workflowID string) (Status, error) {
	var st Status
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryState)
	if err != nil {
		return st, err
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("temporal: decoding the status of %s: %w", workflowID, err)
	}
	return st, nil
}

// AnswerChecked answers like [Answer], through the [UpdateResume] update:
// it returns once the run accepted the answer, and fails (wrapping the
// server's rejection) when the run does not wait on interrupt id or has
// its answer already.
func AnswerChecked(ctx context.Context, c client.Client, workflowID, id string, value any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("temporal: encoding the answer to interrupt %s: %w", id, err)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: UpdateResume,
		Args: []any{ResumeSignal{ID: id, Value: b}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("temporal: answering interrupt %s of %s: %w", id, workflowID, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("temporal: answering interrupt %s of %s: %w", id, workflowID, err)
	}
	return nil
}
