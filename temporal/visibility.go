package temporal

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// MemoKey is the memo field in which a graph's workflow keeps its
// [Progress]: Temporal's server holds it, so it answers with no worker
// running ([Describe] reads it; so does `temporal workflow describe`).
const MemoKey = "agentgraph"

// States of a run, as [Progress.Status] and [SearchAttributeStatus]
// report them.
const (
	ProgressRunning   = "running"
	ProgressWaiting   = "waiting"
	ProgressFinished  = "finished"
	ProgressFailed    = "failed"
	ProgressCancelled = "cancelled"
)

// Search attributes a graph's workflow upserts with its progress under
// [WithSearchAttributes], so that `temporal workflow list --query
// 'AgentgraphStatus="waiting"'` finds the runs waiting for a human. They
// must be registered in the namespace first:
//
//	temporal operator search-attribute create --name AgentgraphStatus --type Keyword
//	temporal operator search-attribute create --name AgentgraphStep --type Int
//	temporal operator search-attribute create --name AgentgraphNodes --type KeywordList
var (
	// SearchAttributeStatus is the run's [Progress.Status].
	SearchAttributeStatus = sdktemporal.NewSearchAttributeKeyKeyword("AgentgraphStatus")
	// SearchAttributeStep is the superstep of the run's latest checkpoint.
	SearchAttributeStep = sdktemporal.NewSearchAttributeKeyInt64("AgentgraphStep")
	// SearchAttributeNodes names the nodes of the next step, or of the
	// pending interrupts when the run waits.
	SearchAttributeNodes = sdktemporal.NewSearchAttributeKeyKeywordList("AgentgraphNodes")
)

// MaxSummaryBytes bounds [InterruptSummary.Summary], and MaxSummaries the
// interrupts a [Progress] summarizes: the memo is written to the
// workflow's history at every change.
const (
	MaxSummaryBytes = 512
	MaxSummaries    = 16
)

// Progress is where a run stands, as its workflow keeps it in its memo
// (under [MemoKey]) at every change: after every step, when it pauses and
// is answered, and when it ends.
type Progress struct {
	// Status is one of ProgressRunning, ProgressWaiting, ProgressFinished,
	// ProgressFailed and ProgressCancelled.
	Status string `json:"status"`
	Thread string `json:"thread"`
	// CheckpointID is the thread's latest checkpoint.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Step is the superstep of that checkpoint.
	Step int `json:"step"`
	// Next names the tasks of the next superstep.
	Next []string `json:"next,omitempty"`
	// Interrupts summarizes the pending interrupts (the first
	// [MaxSummaries]); Omitted counts those left out.
	Interrupts []InterruptSummary `json:"interrupts,omitempty"`
	Omitted    int                `json:"omitted,omitempty"`
	// Before and After name the nodes of a static breakpoint the run
	// waits at.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	// Answered lists the interrupts answered so far while the run waits.
	Answered []string `json:"answered,omitempty"`
	// Error is the message of the error that failed the run (at most
	// [MaxSummaryBytes] bytes of it).
	Error string `json:"error,omitempty"`
}

// InterruptSummary is a pending interrupt as [Progress] reports it.
type InterruptSummary struct {
	ID   string `json:"id"`
	Node string `json:"node"`
	// Summary is the interrupt's payload in JSON, cut to at most
	// [MaxSummaryBytes] bytes (Truncated then); [Query] returns it whole.
	Summary   string `json:"summary,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Visibility is what a [WithVisibility] hook adds to a run's search
// attributes and memo.
type Visibility struct {
	// SearchAttributes are upserted as they are (each must be registered
	// in the namespace; a nil value's ValueUnset() removes one).
	SearchAttributes []sdktemporal.SearchAttributeUpdate
	// Memo fields are upserted beside [MemoKey] (a nil value removes one).
	Memo map[string]any
}

// WithSearchAttributes makes a run upsert [SearchAttributeStatus],
// [SearchAttributeStep] and [SearchAttributeNodes] with its progress, for
// `temporal workflow list --query` to find runs by status or node. They
// must be registered in the namespace first (see
// [SearchAttributeStatus]): a workflow upserting an unregistered search
// attribute has its workflow task failed by the server.
func WithSearchAttributes() Option {
	return optionFunc(func(c *config) { c.searchAttributes = true })
}

// WithVisibility calls fn with the run's progress at every change, and
// upserts the search attributes and memo fields it returns: the user's
// own, a customer ID or a ticket, say. fn runs in workflow code: it must
// be deterministic, and quick.
func WithVisibility(fn func(Progress) Visibility) Option {
	return optionFunc(func(c *config) { c.visibility = fn })
}

// versionVisibility marks the workflow code that keeps its progress in
// its memo, so that runs started before it replay.
const (
	changeVisibility  = "agentgraph.visibility"
	versionVisibility = workflow.Version(1)
)

// progressOf returns the Progress of a run at st.
func progressOf(st Status) Progress {
	p := Progress{Status: ProgressRunning, Thread: st.Thread, CheckpointID: st.CheckpointID, Step: st.Step,
		Next: st.Next, Before: st.Before, After: st.After, Answered: st.Answered}
	switch {
	case st.Done:
		p.Status = ProgressFinished
	case st.Paused():
		p.Status = ProgressWaiting
	}
	for i, in := range st.Interrupts {
		if i == MaxSummaries {
			p.Omitted = len(st.Interrupts) - i
			break
		}
		s, cut := clip(string(in.Value), MaxSummaryBytes)
		p.Interrupts = append(p.Interrupts, InterruptSummary{ID: in.ID, Node: in.Node, Summary: s, Truncated: cut})
	}
	return p
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// publisher upserts a run's progress into its memo (and search
// attributes) when it changed.
type publisher struct {
	w    *config
	on   bool
	last *Progress
}

// newPublisher returns the publisher of a run: on unless the run started
// on workflow code that did not publish (it replays as it ran).
func newPublisher(ctx workflow.Context, cfg *config) *publisher {
	v := workflow.GetVersion(ctx, changeVisibility, workflow.DefaultVersion, versionVisibility)
	return &publisher{w: cfg, on: v >= versionVisibility}
}

// publish upserts p when it differs from what was published last. A
// failure to upsert is logged: visibility never fails a run.
func (pb *publisher) publish(ctx workflow.Context, p Progress) {
	if !pb.on || pb.last != nil && reflect.DeepEqual(*pb.last, p) {
		return
	}
	pb.last = &p
	// A cancelled run still says so.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	log := workflow.GetLogger(ctx)
	memo := map[string]any{MemoKey: p}
	var attrs []sdktemporal.SearchAttributeUpdate
	if pb.w.searchAttributes {
		nodes := p.Next
		if p.Status == ProgressWaiting && len(p.Interrupts) > 0 {
			nodes = nil
			for _, in := range p.Interrupts {
				nodes = append(nodes, in.Node)
			}
		}
		attrs = append(attrs, SearchAttributeStatus.ValueSet(p.Status), SearchAttributeStep.ValueSet(int64(p.Step)),
			SearchAttributeNodes.ValueSet(sortedSet(nodes)))
	}
	if pb.w.visibility != nil {
		v := pb.w.visibility(p)
		attrs = append(attrs, v.SearchAttributes...)
		for k, val := range v.Memo {
			if k != MemoKey {
				memo[k] = val
			}
		}
	}
	if err := workflow.UpsertMemo(ctx, memo); err != nil {
		log.Warn("agentgraph: upserting the run's memo", "thread", p.Thread, "error", err)
	}
	if len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			log.Warn("agentgraph: upserting the run's search attributes", "thread", p.Thread, "error", err)
		}
	}
}

// end publishes how the run ended: st with err, the error Run returns.
func (pb *publisher) end(ctx workflow.Context, st Status, err error) {
	var can *workflow.ContinueAsNewError
	p := progressOf(st)
	switch {
	case err == nil:
		p.Status = ProgressFinished
	case errors.As(err, &can):
		return // the next run goes on
	case sdktemporal.IsCanceledError(err):
		p.Status = ProgressCancelled
	default:
		p.Status = ProgressFailed
		p.Error, _ = clip(err.Error(), MaxSummaryBytes)
	}
	pb.publish(ctx, p)
}

// RunInfo is what [Describe] returns: a run's [Progress] from its memo,
// and its workflow's status on the server.
type RunInfo struct {
	Progress
	// WorkflowType names the graph's workflow.
	WorkflowType string
	// Execution is the workflow's status on the server ("Running",
	// "Completed", "Failed", …), which tells a run that failed or was
	// terminated outside the graph.
	Execution string
	// Known reports that the run has published a Progress (a run started
	// by an older version of this package, or whose first workflow task
	// has not run, has none).
	Known bool
}

// Describe returns the progress of the latest run of workflowID from its
// memo, through the server alone: it answers with every worker stopped,
// unlike [Query]. Its Progress is as of the run's last change: a step
// that is running is not in it yet.
func Describe(ctx context.Context, c client.Client, workflowID string) (RunInfo, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return RunInfo{}, fmt.Errorf("temporal: describing %s: %w", workflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	ri := RunInfo{WorkflowType: info.GetType().GetName(), Execution: info.GetStatus().String()}
	if p, ok := info.GetMemo().GetFields()[MemoKey]; ok {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &ri.Progress); err != nil {
			return ri, fmt.Errorf("temporal: decoding the progress of %s: %w", workflowID, err)
		}
		ri.Known = true
	}
	return ri, nil
}
