package agent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/agent/internal/agenttest"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// shop has a "refund" tool that needs approval and a "lookup" tool that
// does not; it records what ran.
type shop struct {
	mu  sync.Mutex
	ran []string
}

type refundArgs struct {
	Order  string `json:"order" jsonschema:"required"`
	Amount int    `json:"amount" jsonschema:"required"`
}

func (s *shop) record(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, line)
}

func (s *shop) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

func (s *shop) tools() []tools.Tool {
	return []tools.Tool{
		tools.New("refund", "Refund an order.", func(ctx context.Context, a refundArgs) (string, error) {
			s.record(fmt.Sprintf("refund %s %d", a.Order, a.Amount))
			return fmt.Sprintf("refunded %d EUR on %s", a.Amount, a.Order), nil
		}),
		tools.New("lookup", "Look an order up.", func(ctx context.Context, a struct {
			Order string `json:"order"`
		}) (string, error) {
			s.record("lookup " + a.Order)
			return a.Order + ": delivered", nil
		}),
	}
}

// threeCalls is a model whose first message calls refund twice and lookup
// once, and which then answers.
func threeCalls() llm.Model {
	return llm.NewScriptedByTurn(
		llm.Reply{ToolCalls: []llms.ToolCall{
			state.ToolCall("c1", "refund", `{"order":"A1","amount":30}`),
			state.ToolCall("c2", "lookup", `{"order":"A1"}`),
			state.ToolCall("c3", "refund", `{"order":"B2","amount":500}`),
		}},
		llm.Reply{Text: "Done."},
	)
}

func pendingRequest(t *testing.T, err error) agent.ApprovalRequest {
	t.Helper()
	intr, ok := errors.AsType[*graph.Interrupted](err)
	require.True(t, ok, "want *graph.Interrupted, got %v", err)
	require.Len(t, intr.Interrupts, 1)
	require.Equal(t, agent.ApprovalNode, intr.Interrupts[0].Node)
	req, err := graph.PayloadAs[agent.ApprovalRequest](intr.Interrupts[0])
	require.NoError(t, err)
	return req
}

func resume(decisions ...agent.Decision) graph.Command[agent.ReActState] {
	return graph.Command[agent.ReActState]{Resume: decisions}
}

// All the reviewed calls of one model message are in one interrupt, with
// each tool's name, arguments and description; nothing runs before the
// answer, not even the call that needs no review.
func TestToolApprovalAsksOnceForEveryReviewedCallOfAMessage(t *testing.T) {
	var s shop
	g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithToolApproval("refund"))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
	req := pendingRequest(t, err)
	require.Equal(t, agent.ApprovalRequest{Calls: []agent.ReviewCall{
		{ID: "c1", Tool: "refund", Args: `{"order":"A1","amount":30}`, Description: "Refund an order."},
		{ID: "c3", Tool: "refund", Args: `{"order":"B2","amount":500}`, Description: "Refund an order."},
	}}, req)
	require.Empty(t, s.got())
}

// Approve runs a call as written, Edit with the reviewer's arguments (and
// the model's message shows them), Reject not at all: the model reads the
// reviewer's text as the call's result.
func TestToolApprovalAppliesApproveEditAndReject(t *testing.T) {
	tests := []struct {
		name      string
		decisions []agent.Decision
		ran       []string
		messages  []string
	}{
		{
			name:      "approve both",
			decisions: []agent.Decision{agent.Approve(), agent.Approve()},
			ran:       []string{"lookup A1", "refund A1 30", "refund B2 500"},
			messages: []string{
				"human: Refund my orders.",
				`ai:  call(c1 refund {"order":"A1","amount":30}) call(c2 lookup {"order":"A1"}) call(c3 refund {"order":"B2","amount":500})`,
				"tool:  result(c1 refund refunded 30 EUR on A1)",
				"tool:  result(c2 lookup A1: delivered)",
				"tool:  result(c3 refund refunded 500 EUR on B2)",
				"ai: Done.",
			},
		},
		{
			name:      "edit one, reject the other",
			decisions: []agent.Decision{agent.Edit(`{"order":"A1","amount":25}`), agent.Reject("Refunds above 100 EUR need a manager.")},
			ran:       []string{"lookup A1", "refund A1 25"},
			messages: []string{
				"human: Refund my orders.",
				`ai:  call(c1 refund {"order":"A1","amount":25}) call(c2 lookup {"order":"A1"}) call(c3 refund {"order":"B2","amount":500})`,
				"tool:  result(c3 refund Refunds above 100 EUR need a manager.)",
				"tool:  result(c1 refund refunded 25 EUR on A1)",
				"tool:  result(c2 lookup A1: delivered)",
				"ai: Done.",
			},
		},
		{
			name:      "reject both",
			decisions: []agent.Decision{agent.Reject(""), agent.Reject("no")},
			ran:       []string{"lookup A1"},
			messages: []string{
				"human: Refund my orders.",
				`ai:  call(c1 refund {"order":"A1","amount":30}) call(c2 lookup {"order":"A1"}) call(c3 refund {"order":"B2","amount":500})`,
				"tool:  result(c1 refund The user rejected this call of refund: it was not run.)",
				"tool:  result(c3 refund no)",
				"tool:  result(c2 lookup A1: delivered)",
				"ai: Done.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s shop
			g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()),
				agent.WithToolApproval("refund"))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
			pendingRequest(t, err)
			out, err := g.Resume(t.Context(), resume(tt.decisions...), graph.WithThread("t"))
			require.NoError(t, err)
			require.ElementsMatch(t, tt.ran, s.got())
			require.Empty(t, cmp.Diff(tt.messages, agenttest.Summary(out.Messages.List())))
		})
	}
}

// When every call of the message is rejected, the model is called again
// at once and reads the rejections.
func TestToolApprovalRejectingEveryCallGoesBackToTheModel(t *testing.T) {
	var s shop
	model := llm.NewScriptedByTurn(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "refund", `{"order":"A1","amount":30}`)}},
		llm.Reply{Text: "I could not refund it.", Expect: func(msgs []state.Message) error {
			if got := msgs[len(msgs)-1].ToolResults(); len(got) != 1 || got[0].Content != "no" {
				return fmt.Errorf("the model does not see the rejection: %v", got)
			}
			return nil
		}},
	)
	g, err := agent.NewReAct(model, s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()), agent.WithToolApproval("refund"))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund A1."), graph.WithThread("t"))
	pendingRequest(t, err)
	out, err := g.Resume(t.Context(), resume(agent.Reject("no")), graph.WithThread("t"))
	require.NoError(t, err)
	require.Empty(t, s.got())
	last, _ := out.Messages.Last()
	require.Equal(t, "I could not refund it.", last.Text())
}

// An answer of the right type that does not fit the request is not used:
// the run asks again, saying why, and nothing runs until a fitting answer.
func TestToolApprovalAsksAgainAfterAnAnswerThatDoesNotFit(t *testing.T) {
	tests := []struct {
		name      string
		decisions []agent.Decision
		problem   string
	}{
		{"too few decisions", []agent.Decision{agent.Approve()}, "1 decisions for 2 calls: give one decision per call, in order"},
		{"edited arguments not an object", []agent.Decision{agent.Approve(), agent.Edit(`[1]`)},
			"decision 2 (call c3 of refund): the edited arguments are not a JSON object"},
		{"unknown kind", []agent.Decision{{Kind: "maybe"}, agent.Approve()},
			`decision 1 (call c1 of refund): kind "maybe" is not approve, edit or reject`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s shop
			g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()),
				agent.WithToolApproval("refund"))
			require.NoError(t, err)
			_, err = g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
			first := pendingRequest(t, err)
			_, err = g.Resume(t.Context(), resume(tt.decisions...), graph.WithThread("t"))
			again := pendingRequest(t, err)
			require.Equal(t, tt.problem, again.Problem)
			require.Equal(t, first.Calls, again.Calls)
			require.Empty(t, s.got())
			_, err = g.Resume(t.Context(), resume(agent.Approve(), agent.Reject("")), graph.WithThread("t"))
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"lookup A1", "refund A1 30"}, s.got())
		})
	}
}

// An answer of another type is refused by Resume and the request stays
// pending.
func TestToolApprovalRefusesAnAnswerOfAnotherType(t *testing.T) {
	var s shop
	g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithToolApproval("refund"))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
	pendingRequest(t, err)
	_, err = g.Resume(t.Context(), graph.Command[agent.ReActState]{Resume: "yes"}, graph.WithThread("t"))
	_, ok := errors.AsType[*graph.ResumeTypeError](err)
	require.True(t, ok, "want *graph.ResumeTypeError, got %v", err)
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	require.Empty(t, s.got())
}

// The request is saved with the run: a new saver and a newly compiled
// agent on the same SQLite file — what a restarted process has — read it
// and answer it, and each approved call runs once.
func TestToolApprovalSurvivesARestartWithSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	var s shop
	open := func() (*graph.Graph[agent.ReActState], *sqlite.Saver) {
		saver, err := sqlite.Open(t.Context(), path)
		require.NoError(t, err)
		g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(saver), agent.WithToolApproval("refund"))
		require.NoError(t, err)
		return g, saver
	}
	g, saver := open()
	_, err := g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
	pendingRequest(t, err)
	require.NoError(t, saver.Close())

	g, saver = open()
	defer saver.Close()
	snap, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	req, err := graph.PayloadAs[agent.ApprovalRequest](snap.Interrupts[0])
	require.NoError(t, err)
	require.Equal(t, []string{"c1", "c3"}, []string{req.Calls[0].ID, req.Calls[1].ID})
	out, err := g.Resume(t.Context(), resume(agent.Approve(), agent.Reject("")), graph.WithThread("t"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"lookup A1", "refund A1 30"}, s.got())
	last, _ := out.Messages.Last()
	require.Equal(t, "Done.", last.Text())
}

// New input on a thread waiting for approval drops the request, as in
// LangGraph: the reviewed calls never run and stay unanswered.
func TestToolApprovalNewInputDropsThePendingRequest(t *testing.T) {
	var s shop
	model := llm.NewScriptedByTurn(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "refund", `{"order":"A1","amount":30}`)}},
		llm.Reply{Text: "What else?"},
	)
	g, err := agent.NewReAct(model, s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()), agent.WithToolApproval("refund"))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund A1."), graph.WithThread("t"))
	pendingRequest(t, err)
	out, err := g.Invoke(t.Context(), input("Never mind."), graph.WithThread("t"))
	require.NoError(t, err)
	require.Empty(t, s.got())
	require.Equal(t, []string{
		"human: Refund A1.",
		`ai:  call(c1 refund {"order":"A1","amount":30})`,
		"human: Never mind.",
		"ai: What else?",
	}, agenttest.Summary(out.Messages.List()))
}

// With graph.RefuseInputWhileInterrupted, new input on a thread waiting
// for approval is refused with a *graph.PendingInterruptError, nothing is
// written, and the request can still be answered.
func TestToolApprovalRefuseInputKeepsThePendingRequest(t *testing.T) {
	var s shop
	g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()),
		agent.WithToolApproval("refund"),
		agent.WithCompileOptions(graph.WithRunDefaults(graph.RefuseInputWhileInterrupted())))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund my orders."), graph.WithThread("t"))
	pendingRequest(t, err)
	before, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)

	_, err = g.Invoke(t.Context(), input("Never mind."), graph.WithThread("t"))
	perr, ok := errors.AsType[*graph.PendingInterruptError](err)
	require.True(t, ok, "want *graph.PendingInterruptError, got %v", err)
	require.Equal(t, "t", perr.Thread)
	require.Equal(t, before.Interrupts, perr.Interrupts)
	after, err := g.GetState(t.Context(), graph.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, before.CheckpointID, after.CheckpointID)

	_, err = g.Resume(t.Context(), resume(agent.Approve(), agent.Approve()), graph.WithThread("t"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"lookup A1", "refund A1 30", "refund B2 500"}, s.got())
	// A thread that is not paused takes new input.
	_, err = g.Invoke(t.Context(), input("Thanks."), graph.WithThread("t"))
	require.ErrorContains(t, err, "script") // the scripted model has no third reply
	_, isPending := errors.AsType[*graph.PendingInterruptError](err)
	require.False(t, isPending)
}

// An agent that asks for approval without a checkpointer fails, and the
// error names agent.WithCheckpointer.
func TestToolApprovalWithoutCheckpointerNamesWithCheckpointer(t *testing.T) {
	var s shop
	g, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithToolApproval("refund"))
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Refund my orders."))
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	require.ErrorContains(t, err, "agent.WithCheckpointer")
	require.Empty(t, s.got())
}

// WithToolApproval names tools of the agent.
func TestToolApprovalOfAnUnknownToolFails(t *testing.T) {
	var s shop
	_, err := agent.NewReAct(threeCalls(), s.tools(), agent.WithToolApproval("delete"))
	require.EqualError(t, err, `agent: WithToolApproval("delete"): the agent has no such tool`)
	_, err = agent.NewReAct(threeCalls(), nil, agent.WithToolApproval("refund"))
	require.EqualError(t, err, `agent: WithToolApproval(["refund"]): the agent has no tools`)
}

// A tool that asks a human in an agent without a checkpointer fails the
// run, and the error names agent.WithCheckpointer.
func TestToolThatAsksWithoutCheckpointerNamesWithCheckpointer(t *testing.T) {
	ask := tools.New("ask", "Ask a human.", func(ctx context.Context, a struct{}) (string, error) {
		return graph.InterruptAs[string](ctx, "ok?")
	})
	model := llm.NewScriptedByTurn(llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "ask", `{}`)}}, llm.Reply{Text: "Done."})
	g, err := agent.NewReAct(model, []tools.Tool{ask})
	require.NoError(t, err)
	_, err = g.Invoke(t.Context(), input("Ask."))
	require.ErrorIs(t, err, graph.ErrNoCheckpointer)
	require.ErrorContains(t, err, "agent.WithCheckpointer")
}

// Near the recursion limit the agent counts the approval's step: with too
// few steps left for approval, tools and model, it gives up on the tools
// gracefully instead of asking a human for calls it could not finish.
func TestToolApprovalCountsItsStepNearTheRecursionLimit(t *testing.T) {
	var s shop
	model := llm.NewScriptedByTurn(
		llm.Reply{ToolCalls: []llms.ToolCall{state.ToolCall("c1", "refund", `{"order":"A1","amount":30}`)}},
	)
	g, err := agent.NewReAct(model, s.tools(), agent.WithCheckpointer(checkpoint.NewMemory()), agent.WithToolApproval("refund"))
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), input("Refund A1."), graph.WithThread("t"), graph.WithRecursionLimit(3))
	require.NoError(t, err)
	last, _ := out.Messages.Last()
	require.Equal(t, agent.NeedMoreSteps, last.Text())
	require.Empty(t, s.got())
}
