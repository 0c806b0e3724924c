package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	agtemporal "github.com/agentgraph/agentgraph/temporal"
)

// customKeyword is the user's own search attribute, which the test's
// visibility hook sets.
var customKeyword = sdktemporal.NewSearchAttributeKeyKeyword("AgentgraphTestCustomer")

// visibleOptions are the options of the "visibletest" workflow: the
// package's search attributes, and a hook adding the user's own.
func visibleOptions() []agtemporal.Option {
	return []agtemporal.Option{
		agtemporal.WithSearchAttributes(),
		agtemporal.WithVisibility(func(p agtemporal.Progress) agtemporal.Visibility {
			return agtemporal.Visibility{
				SearchAttributes: []sdktemporal.SearchAttributeUpdate{customKeyword.ValueSet("customer-" + p.Thread)},
				Memo:             map[string]any{"customer": "acme", "status": "hook cannot overwrite " + agtemporal.MemoKey},
			}
		}),
	}
}

// registerSearchAttributes registers the package's search attributes and
// the test's own in the dev server's default namespace.
func registerSearchAttributes(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: "default",
		SearchAttributes: map[string]enumspb.IndexedValueType{
			agtemporal.SearchAttributeStatus.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
			agtemporal.SearchAttributeStep.GetName():   enumspb.INDEXED_VALUE_TYPE_INT,
			agtemporal.SearchAttributeNodes.GetName():  enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
			customKeyword.GetName():                    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		},
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		require.NoError(t, err)
	}
}

// A paused run's progress — its status, step, pending interrupts with
// their payloads, the answers in — is in its memo and search attributes:
// Describe and a visibility query answer with every worker stopped. The
// run finishes when a worker comes back, and says so.
func TestProgressIsVisibleWithNoWorkerUp(t *testing.T) {
	it := newITest(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	registerSearchAttributes(ctx, t, it.c)
	g, err := askGraph("ask1", "ask2")(it.saver)
	require.NoError(t, err)
	w, err := agtemporal.New("visibletest", g, visibleOptions()...)
	require.NoError(t, err)
	thread := "visible-" + it.queue
	run, err := w.Start(ctx, it.c, thread, St{}, client.StartWorkflowOptions{TaskQueue: it.queue})
	require.NoError(t, err)
	ids := pausedIDs(ctx, t, it.c, thread)
	require.NoError(t, agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask1"], "one"))

	for _, cmd := range it.workers {
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
	}
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = agtemporal.Query(qctx, it.c, thread)
	qcancel()
	require.Error(t, err, "a query was answered with no worker up")

	ri, err := agtemporal.Describe(ctx, it.c, thread)
	require.NoError(t, err)
	require.True(t, ri.Known)
	require.Equal(t, "Running", ri.Execution)
	require.Equal(t, "visibletest", ri.WorkflowType)
	require.Equal(t, agtemporal.ProgressWaiting, ri.Status)
	require.Equal(t, thread, ri.Thread)
	require.Equal(t, 1, ri.Step)
	require.ElementsMatch(t, []string{"ask1", "ask2"}, ri.Next)
	require.Equal(t, []string{ids["ask1"]}, ri.Answered)
	summaries := map[string]string{}
	for _, in := range ri.Interrupts {
		require.Equal(t, ids[in.Node], in.ID)
		summaries[in.Node] = in.Summary
	}
	require.Equal(t, map[string]string{"ask1": `"approve ask1?"`, "ask2": `"approve ask2?"`}, summaries)

	// The hook's memo field sits beside the package's, which it cannot
	// overwrite.
	d, err := it.c.DescribeWorkflowExecution(ctx, thread, "")
	require.NoError(t, err)
	var customer string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(d.GetWorkflowExecutionInfo().GetMemo().GetFields()["customer"], &customer))
	require.Equal(t, "acme", customer)

	// Visibility queries find the run by the package's search attributes
	// and by the hook's (the server indexes them shortly after).
	for _, q := range []string{
		`AgentgraphStatus = "waiting" AND AgentgraphNodes = "ask2" AND AgentgraphStep = 1`,
		`AgentgraphTestCustomer = "customer-` + thread + `"`,
	} {
		require.Equal(t, []string{thread}, listUntilFound(ctx, t, it.c, q+` AND WorkflowId = "`+thread+`"`), q)
	}

	it.workers = startWorkers(t, 1, it.env)
	require.NoError(t, agtemporal.AnswerChecked(ctx, it.c, thread, ids["ask2"], "two"))
	var st agtemporal.Status
	require.NoError(t, run.Get(ctx, &st))
	ri, err = agtemporal.Describe(ctx, it.c, thread)
	require.NoError(t, err)
	require.Equal(t, agtemporal.ProgressFinished, ri.Status)
	require.Equal(t, "Completed", ri.Execution)
	require.Equal(t, st.Step, ri.Step)
	require.Empty(t, ri.Interrupts)
}

// listUntilFound lists the workflows that query matches until there are
// some (visibility is eventually consistent) and returns their IDs.
func listUntilFound(ctx context.Context, t *testing.T, c client.Client, query string) []string {
	t.Helper()
	for {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		require.NoError(t, err, query)
		if len(res.GetExecutions()) > 0 {
			var ids []string
			for _, e := range res.GetExecutions() {
				ids = append(ids, e.GetExecution().GetWorkflowId())
			}
			return ids
		}
		require.NoError(t, ctx.Err(), "no workflow matches %s", query)
		time.Sleep(100 * time.Millisecond)
	}
}

// The memo follows the run — running, waiting with the interrupt's
// payload and then the answer in, finished — and cuts a large payload to
// MaxSummaryBytes on a rune boundary, saying so.
func TestMemoFollowsTheRunAndCutsLargePayloads(t *testing.T) {
	b := graph.New[St]()
	b.AddNode("before", appendNode("before"))
	b.AddNode("ask", func(ctx context.Context, s St) (St, error) {
		v, err := graph.InterruptAs[string](ctx, strings.Repeat("é", agtemporal.MaxSummaryBytes))
		if err != nil {
			return s, err
		}
		return St{Log: state.Items("ask got " + v)}, nil
	})
	b.AddEdge(graph.Start, "before")
	b.AddEdge("before", "ask")
	g, err := b.Compile(graph.WithCheckpointer(checkpoint.NewMemory()))
	require.NoError(t, err)
	w, env := register(t, g)
	var memos []agtemporal.Progress
	env.OnUpsertMemo(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		memo := args.Get(0).(map[string]any)
		memos = append(memos, memo[agtemporal.MemoKey].(agtemporal.Progress))
	})
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(agtemporal.QueryState)
		require.NoError(t, err)
		var st agtemporal.Status
		require.NoError(t, v.Get(&st))
		env.SignalWorkflow(agtemporal.SignalResume, agtemporal.ResumeSignal{ID: st.Interrupts[0].ID, Value: json.RawMessage(`"yes"`)})
	}, time.Hour)
	s := runToEnd(t, env, w)
	require.Equal(t, []string{"before", "ask got yes"}, s.Log.Get())

	var states []string
	var waiting []agtemporal.Progress
	for _, p := range memos {
		states = append(states, p.Status)
		if p.Status == agtemporal.ProgressWaiting {
			waiting = append(waiting, p)
		}
	}
	require.Equal(t, []string{"running", "waiting", "running", "finished"}, slices.Compact(states))
	require.Len(t, waiting, 2, "the pause, then the answer in")
	require.Len(t, waiting[0].Interrupts, 1)
	in := waiting[0].Interrupts[0]
	require.Equal(t, "ask", in.Node)
	require.True(t, in.Truncated)
	require.LessOrEqual(t, len(in.Summary), agtemporal.MaxSummaryBytes)
	require.True(t, utf8.ValidString(in.Summary), "the summary was cut inside a rune")
	require.True(t, strings.HasPrefix(in.Summary, `"éé`))
	require.Empty(t, waiting[0].Answered)
	require.Equal(t, []string{in.ID}, waiting[1].Answered)
	require.Equal(t, "t", memos[len(memos)-1].Thread)
}
