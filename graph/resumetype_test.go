package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
)

type approvalState struct {
	Approved state.Value[bool]
	Note     state.Value[string]
}

type decision struct {
	Approve bool   `json:"approve"`
	Note    string `json:"note"`
	Tags    []int  `json:"tags"`
}

// newApproval compiles a graph whose one node waits for a T on the saver.
func newApproval[T any](t *testing.T, saver checkpoint.Saver, use func(T, *approvalState)) *graph.Graph[approvalState] {
	t.Helper()
	b := graph.New[approvalState]()
	b.AddNode("approve", func(ctx context.Context, s approvalState) (approvalState, error) {
		v, err := graph.InterruptAs[T](ctx, "refund 30 EUR?")
		if err != nil {
			return s, err
		}
		var out approvalState
		use(v, &out)
		return out, nil
	})
	b.AddEdge(graph.Start, "approve")
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

func TestResumeRefusesAnAnswerOfTheWrongTypeAndKeepsTheInterruptPending(t *testing.T) {
	saver := checkpoint.NewMemory()
	g := newApproval(t, saver, func(ok bool, s *approvalState) { s.Approved.Set(ok) })
	th := graph.WithThread("t")
	_, err := g.Invoke(t.Context(), approvalState{}, th)
	var intr *graph.Interrupted
	require.ErrorAs(t, err, &intr)
	require.JSONEq(t, `{"type":"boolean"}`, intr.Interrupts[0].Want)

	_, err = g.Resume(t.Context(), graph.Command[approvalState]{Resume: "yes"}, th)
	var rte *graph.ResumeTypeError
	require.ErrorAs(t, err, &rte)
	require.Equal(t, intr.Interrupts[0].ID, rte.Interrupt.ID)
	require.Contains(t, err.Error(), `answer is "yes", want boolean`)

	snap, err := g.GetState(t.Context(), th)
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1, "the question is still pending")

	out, err := g.Resume(t.Context(), graph.Command[approvalState]{Resume: true}, th)
	require.NoError(t, err)
	require.True(t, out.Approved.Get())
}

// The check holds in a process that did not ask: what the interrupt waits
// for travels with it in the checkpoint.
func TestResumeChecksTheAnswerAfterARestart(t *testing.T) {
	saver := checkpoint.NewMemory()
	first := newApproval(t, saver, func(d decision, s *approvalState) { s.Approved.Set(d.Approve) })
	th := graph.WithThread("t")
	_, err := first.Invoke(t.Context(), approvalState{}, th)
	require.Error(t, err)

	second := newApproval(t, saver, func(d decision, s *approvalState) { s.Approved.Set(d.Approve); s.Note.Set(d.Note) })
	tests := []struct {
		name   string
		answer any
		ok     bool
	}{
		{"a field of the wrong type", map[string]any{"approve": "yes"}, false},
		{"a list item of the wrong type", map[string]any{"approve": true, "tags": []any{1, "two"}}, false},
		{"a scalar for a struct", true, false},
		{"a field's name in another letter case", map[string]any{"APPROVE": "no"}, false},
		{"a struct of the type itself", decision{Approve: true, Note: "ok"}, true},
		{"a map with unknown fields, as encoding/json ignores them", map[string]any{"approve": true, "note": "fine", "extra": 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				_, err := second.Resume(t.Context(), graph.Command[approvalState]{Resume: tc.answer}, th)
				var rte *graph.ResumeTypeError
				require.ErrorAs(t, err, &rte)
				return
			}
			// A fitting answer is checked, not consumed, by the refusals
			// before it: fork a copy of the thread for each.
			snap, err := second.GetState(t.Context(), th)
			require.NoError(t, err)
			require.Len(t, snap.Interrupts, 1)
			require.NoError(t, checkpoint.CopyThread(t.Context(), saver, "t", "t-"+tc.name))
			out, err := second.Resume(t.Context(), graph.Command[approvalState]{Resume: tc.answer}, graph.WithThread("t-"+tc.name))
			require.NoError(t, err)
			require.True(t, out.Approved.Get())
		})
	}
}

// An interrupt's payload reads back as its type in any process.
func TestPayloadAsReadsThePayloadBackAfterACheckpoint(t *testing.T) {
	saver := checkpoint.NewMemory()
	b := graph.New[approvalState]()
	b.AddNode("ask", func(ctx context.Context, s approvalState) (approvalState, error) {
		_, err := graph.InterruptAs[bool](ctx, decision{Note: "refund", Tags: []int{1, 2}})
		return s, err
	})
	b.AddEdge(graph.Start, "ask")
	g, err := b.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), approvalState{}, graph.WithThread("t"))
	require.Error(t, err)
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	d, err := graph.PayloadAs[decision](snap.Interrupts[0])
	require.NoError(t, err)
	require.Equal(t, decision{Note: "refund", Tags: []int{1, 2}}, d)
}

// An integer's answer is a whole number: 1.5 and 1e3 are refused before
// the node would fail to read them.
func TestResumeRefusesAFractionForAnInteger(t *testing.T) {
	for _, answer := range []any{1.5, "1e3", json.Number("1e3")} {
		saver := checkpoint.NewMemory()
		g := newApproval(t, saver, func(n int, s *approvalState) { s.Approved.Set(n > 0) })
		th := graph.WithThread("t")
		_, err := g.Invoke(t.Context(), approvalState{}, th)
		require.Error(t, err)
		_, err = g.Resume(t.Context(), graph.Command[approvalState]{Resume: answer}, th)
		var rte *graph.ResumeTypeError
		require.ErrorAs(t, err, &rte, "%v", answer)
	}
	saver := checkpoint.NewMemory()
	g := newApproval(t, saver, func(n int, s *approvalState) { s.Approved.Set(n > 0) })
	th := graph.WithThread("t")
	_, err := g.Invoke(t.Context(), approvalState{}, th)
	require.Error(t, err)
	out, err := g.Resume(t.Context(), graph.Command[approvalState]{Resume: 3}, th)
	require.NoError(t, err)
	require.True(t, out.Approved.Get())
}
