package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agentgraph/agentgraph/graph"
)

// Step is the step activity: it runs at most req.Limit supersteps of the
// thread — starting the run on req.Writes, or resuming the thread with
// req.Answers — through the graph's own engine, and reports where the run
// stands. Every superstep is checkpointed and every finished task's
// writes are saved at once, so a retried attempt (after a killed worker,
// say) resumes from the saver and re-runs only the tasks that had not
// finished. It heartbeats while the graph runs when the activity has a
// heartbeat timeout.
func (w *Workflow[S]) Step(ctx context.Context, req StepRequest) (StepResult, error) {
	if req.Thread == "" || req.Limit < 1 {
		return StepResult{}, errf("temporal: step request needs a thread and a limit ≥ 1 (thread %q, limit %d)", req.Thread, req.Limit)
	}
	defer heartbeat(ctx)()
	thread := graph.WithThread(req.Thread)
	// The state before the run tells a retried first activity from a new
	// run, answers from answers an earlier attempt gave, how many steps a
	// batch ran, and whether another run wrote to the thread since this
	// run's last step.
	before, err := w.g.GetState(ctx, thread)
	if err != nil {
		return StepResult{}, toActivityError(err)
	}
	if !req.Start && !req.Continue && before.Metadata.RunID != req.RunID {
		return StepResult{}, errf("temporal: thread %s was written by another run (%q) since the last step of this one (%s): "+
			"two runs of one thread at once interleave their steps; give each thread one workflow ID", req.Thread, before.Metadata.RunID, req.RunID)
	}
	opts := []graph.RunOption{thread, graph.WithRunID(req.RunID)}
	if hb := heartbeatTimeout(ctx); hb > 0 {
		// The thread's lease lives as long as the attempt's heartbeat:
		// once Temporal declares this attempt dead, the next one finds the
		// thread free (a holder that still runs is fenced).
		opts = append(opts, graph.WithLeaseTTL(hb))
	}
	switch {
	case req.Plan:
		// Up to the next step's tasks: they run as activities of their own.
		// The workflow honours the graph's breakpoints itself.
		opts = append(opts, graph.WithInterruptBefore("*"), graph.WithInterruptAfter())
	case req.Limit == 1:
		// One superstep: a breakpoint after every node pauses the run
		// cleanly once the step is checkpointed. (A recursion limit cannot
		// say "one step": Resume runs limit+2 supersteps.)
		opts = append(opts, graph.WithInterruptAfter("*"))
	}
	// A checkpoint of this workflow run means an earlier attempt of this
	// activity got that far: resume instead of starting over.
	ours := before.CheckpointID != "" && before.Metadata.RunID == req.RunID
	// An earlier attempt of a Plan request may have planned already: a
	// retried start finds the input saved, a retried step a thread past
	// the checkpoint it was to step from.
	planned := req.Plan && (req.Start && ours || req.From != "" && before.CheckpointID != req.From)
	filter := eventFilter{merge: req.Plan && !req.Start, oneStep: req.Plan || req.Limit == 1}
	var runErr error
	switch {
	case req.Report || planned:
	case req.Start && !ours:
		input, err := decodeWrites[S](req.Writes)
		if err != nil {
			return StepResult{}, errf("%v", err)
		}
		if req.Limit > 1 && !req.Plan {
			opts = append(opts, graph.WithRecursionLimit(req.Limit))
		}
		runErr = w.run(ctx, req.Thread, &input, nil, opts, filter.keep)
	default:
		cmd, err := resumeCommand[S](req.Answers, before.Interrupts)
		if err != nil {
			return StepResult{}, err
		}
		if req.Limit > 1 && !req.Plan {
			// Resume runs limit+2 supersteps (the engine counts from the
			// step of the checkpoint it resumes): 2 runs as 3.
			opts = append(opts, graph.WithRecursionLimit(max(req.Limit-2, 1)))
		}
		// A Resume starts with a values event of the state it resumes
		// from; at the boundary between two activities of a run it is
		// not news.
		runErr = w.run(ctx, req.Thread, nil, &cmd, opts, filter.continuing(len(cmd.ResumeMap) == 0))
	}
	var (
		intr *graph.Interrupted
		rec  *graph.RecursionError
	)
	res := StepResult{}
	stepped, nested := false, false
	switch {
	case req.Report:
	case planned:
		stepped = !req.Start
	case runErr == nil:
		res.Done = true
		stepped = req.Plan
	case errors.As(runErr, &intr) && req.Plan && len(intr.Before) > 0 && len(intr.Interrupts) == 0:
		// The breakpoint that ends a Plan request.
		intr, stepped = nil, !req.Start
	case errors.As(runErr, &intr) && !req.Plan && req.Limit == 1 && len(intr.After) > 0:
		// The breakpoint that ends a one-step activity.
		intr, stepped = nil, true
	case errors.As(runErr, &intr):
		res.Before, res.After = intr.Before, intr.After
		// A breakpoint compiled into a subgraph pauses with nothing named:
		// it is reported as a breakpoint before the step's open tasks.
		nested = len(intr.Before) == 0 && len(intr.After) == 0 && len(intr.Interrupts) == 0
	case errors.As(runErr, &rec):
		// The step budget of this activity is spent; the workflow asks
		// for more (or stops at its own recursion limit).
	default:
		return StepResult{}, toActivityError(runErr)
	}
	after, err := w.g.GetState(ctx, thread)
	if err != nil {
		return StepResult{}, toActivityError(err)
	}
	res.Thread, res.CheckpointID, res.Step, res.Next = req.Thread, after.CheckpointID, after.Metadata.Step, after.Next
	res.Owned = after.Metadata.RunID == req.RunID
	if intr != nil {
		res.Interrupts, err = withTasks(intr.Interrupts, after)
	} else {
		res.Interrupts, err = withTasks(after.Interrupts, after)
	}
	if err != nil {
		return StepResult{}, err
	}
	res.Tasks = tasks(after)
	if nested {
		for _, tk := range after.Tasks {
			if !tk.Done {
				res.Before = append(res.Before, tk.Name)
			}
		}
		res.Before = sortedSet(res.Before)
	}
	if intr == nil && !res.Done && len(after.Interrupts) > 0 && !req.Report && !planned {
		return StepResult{}, errf("temporal: thread %s has pending interrupts but the run did not pause", req.Thread)
	}
	switch {
	case req.Plan || req.Report:
		if stepped {
			res.Ran = 1
		}
		res.Done = res.Done || len(after.Next) == 0 && len(after.Interrupts) == 0 && after.CheckpointID != ""
	case stepped:
		res.Ran = 1
		res.Done = len(after.Next) == 0
	case req.Limit > 1:
		// Approximate: the checkpoint steps between the two states.
		res.Ran = min(max(after.Metadata.Step-before.Metadata.Step, 0), req.Limit)
		// The engine reports its recursion limit before it looks for
		// tasks: a run that used its last step finished if nothing is next.
		res.Done = res.Done || rec != nil && len(after.Next) == 0
	}
	vals, err := json.Marshal(after.Values)
	if err != nil {
		return StepResult{}, errf("temporal: encoding the state of thread %s: %v", req.Thread, err)
	}
	res.Size = len(vals)
	if w.cfg.inlineLimit >= 0 && len(vals) <= w.cfg.inlineLimit {
		res.Values = vals
	}
	return res, nil
}

// run runs the graph on input, or resumes it with cmd, passing the
// events keep keeps to the configured sink.
func (w *Workflow[S]) run(ctx context.Context, thread string, input *S, cmd *graph.Command[S], opts []graph.RunOption, keep func(first bool, ev graph.Event) bool) error {
	if w.cfg.events == nil {
		var err error
		if input != nil {
			_, err = w.g.Invoke(ctx, *input, opts...)
		} else {
			_, err = w.g.Resume(ctx, *cmd, opts...)
		}
		return err
	}
	opts = append(opts, graph.WithStreamModes(w.cfg.modes))
	seq := w.g.StreamResume
	if input != nil {
		seq = func(ctx context.Context, _ graph.Command[S], opts ...graph.RunOption) iter.Seq2[graph.Event, error] {
			return w.g.Stream(ctx, *input, opts...)
		}
	}
	var c graph.Command[S]
	if cmd != nil {
		c = *cmd
	}
	first := true
	for ev, err := range seq(ctx, c, opts...) {
		if err != nil {
			return err
		}
		if keep(first, ev) {
			w.cfg.events(ctx, thread, ev)
		}
		first = false
	}
	return nil
}

// eventFilter is the event filter of a step activity. merge drops the
// updates of tasks that ran in activities of their own (they sent them);
// oneStep drops the breakpoint that ends the activity; continuation drops
// the values event a Resume starts with: at the boundary between two
// activities it is not news.
type eventFilter struct {
	merge, oneStep, continuation bool
}

// continuing returns the filter with continuation set as given.
func (f eventFilter) continuing(continuation bool) func(bool, graph.Event) bool {
	f.continuation = continuation
	return f.keep
}

// keep reports whether the run's event ev (first: the run's first) is sent.
func (f eventFilter) keep(first bool, ev graph.Event) bool {
	switch {
	case first && f.continuation && ev.Mode == graph.ModeValues:
		return false
	case f.merge && ev.Mode == graph.ModeUpdates && ev.Cached && ev.Namespace == "":
		return false
	}
	_, breakpoint := ev.Payload.(graph.Breakpoint)
	return !(breakpoint && f.oneStep && ev.Mode == graph.ModeInterrupts)
}

// resumeCommand answers the pending interrupts among answers (those not
// pending were answered by an earlier attempt of the activity).
func resumeCommand[S any](answers map[string]json.RawMessage, pending []graph.Interruption) (graph.Command[S], error) {
	cmd := graph.Command[S]{}
	for id, raw := range answers {
		if !slices.ContainsFunc(pending, func(in graph.Interruption) bool { return in.ID == id }) {
			continue
		}
		var v any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &v); err != nil {
				return cmd, errf("temporal: the answer to interrupt %s is not JSON: %v", id, err)
			}
		}
		if cmd.ResumeMap == nil {
			cmd.ResumeMap = map[string]any{}
		}
		cmd.ResumeMap[id] = v
	}
	return cmd, nil
}

// withTasks encodes ins, naming the task of snap that raised each.
func withTasks[S any](ins []graph.Interruption, snap *graph.Snapshot[S]) ([]Interrupt, error) {
	var out []Interrupt
	for _, in := range ins {
		b, err := json.Marshal(in.Value)
		if err != nil {
			return nil, errf("temporal: the payload of interrupt %s of node %s cannot be encoded: %v", in.ID, in.Node, err)
		}
		it := Interrupt{ID: in.ID, Node: in.Node, Namespace: in.Namespace, Value: b}
		for _, tk := range snap.Tasks {
			if slices.ContainsFunc(tk.Interrupts, func(r graph.Interruption) bool { return r.ID == in.ID }) {
				it.Task = tk.ID
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// tasks returns the tasks of snap's next step.
func tasks[S any](snap *graph.Snapshot[S]) []Task {
	out := make([]Task, 0, len(snap.Tasks))
	for _, tk := range snap.Tasks {
		out = append(out, Task{ID: tk.ID, Node: tk.Name, Done: tk.Done})
	}
	return out
}

// heartbeatTimeout is the heartbeat timeout of the activity of ctx, 0
// outside an activity or for one without.
func heartbeatTimeout(ctx context.Context) time.Duration {
	if !activity.IsActivity(ctx) {
		return 0
	}
	return activity.GetInfo(ctx).HeartbeatTimeout
}

// heartbeat heartbeats the activity of ctx at a third of its heartbeat
// timeout, if it has one, until the function it returns is called; that
// function returns once the heartbeats stopped.
func heartbeat(ctx context.Context) (stop func()) {
	hb := heartbeatTimeout(ctx)
	if hb <= 0 {
		return func() {}
	}
	every := hb / 3
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// Values returns the state st reports: decoded from its inline Values, or
// read from the graph's saver by reference (thread and checkpoint ID).
func (w *Workflow[S]) Values(ctx context.Context, st Status) (S, error) {
	var s S
	if len(st.Values) > 0 && !bytes.Equal(st.Values, []byte("null")) {
		if err := json.Unmarshal(st.Values, &s); err != nil {
			return s, fmt.Errorf("temporal: decoding the state of thread %s: %w", st.Thread, err)
		}
		return s, nil
	}
	if st.Thread == "" || st.CheckpointID == "" {
		return s, errors.New("temporal: the status names no checkpoint")
	}
	snap, err := w.g.GetState(ctx, graph.WithThread(st.Thread), graph.WithCheckpointID(st.CheckpointID))
	if err != nil {
		return s, err
	}
	return snap.Values, nil
}
