package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// ApprovalNode is the node of the ReAct graph that asks a human to review
// the tool calls of [WithToolApproval]'s tools before they run.
const ApprovalNode = "approval"

// WithToolApproval makes the agent ask a human before it runs a call of
// one of the named tools, as LangChain's HumanInTheLoopMiddleware does.
// When the model's message calls any of them, the graph goes from the
// "agent" node to the [ApprovalNode], which pauses the run with one
// interrupt for all of the message's calls that need review: its payload
// is an [ApprovalRequest] (tool, arguments and description of each call),
// and it waits for a []Decision, one per call in the same order, given to
// [graph.Graph.Resume]:
//
//	_, err := g.Invoke(ctx, in, graph.WithThread("t1"))
//	intr, _ := errors.AsType[*graph.Interrupted](err)
//	req, _ := graph.PayloadAs[agent.ApprovalRequest](intr.Interrupts[0])
//	out, err := g.Resume(ctx, graph.Command[agent.ReActState]{
//		Resume: []agent.Decision{agent.Approve(), agent.Reject("not above 100 EUR")},
//	}, graph.WithThread("t1"))
//
// [Approve] runs the call as the model wrote it, [Edit] runs it with other
// arguments (the model's message is rewritten, so it sees what ran), and
// [Reject] does not run it: the call is answered by a tool message with
// the reviewer's text, which the model reads. The calls of the message
// that need no review run with the approved ones, in one superstep.
//
// An answer of another type is refused by Resume ([*graph.ResumeTypeError])
// and the request stays pending; an answer of the right type that does not
// fit the request (a wrong number of decisions, edited arguments that are
// not a JSON object) is not used either: the run pauses again with the
// same request, its Problem saying what was wrong.
//
// The agent needs a checkpointer ([WithCheckpointer]); the request is
// saved with the run, so any process that compiles the same agent on the
// same checkpointer can answer it, after a restart too.
//
// New input on a thread that waits for approval (Invoke rather than
// Resume) drops the request, as in LangGraph: the reviewed calls never
// run and stay unanswered in the conversation, which most providers then
// refuse. Runs given graph.RefuseInputWhileInterrupted (for every run:
// WithCompileOptions(graph.WithRunDefaults(graph.RefuseInputWhileInterrupted())))
// refuse such input with a *graph.PendingInterruptError instead, and the
// request stays pending.
//
// NewReAct fails if a name is not one of its tools.
func WithToolApproval(toolNames ...string) Option {
	return func(c *config) { c.approve = append(c.approve, toolNames...) }
}

// ApprovalRequest is the payload of the interrupt of [WithToolApproval]:
// the calls of one model message that wait for a human's decision.
type ApprovalRequest struct {
	// Calls are the calls to review, in the order of the message.
	Calls []ReviewCall `json:"calls"`
	// Problem, when the run asks again, says why the previous answer was
	// not used.
	Problem string `json:"problem,omitempty"`
}

// ReviewCall is one tool call to review.
type ReviewCall struct {
	// ID is the ID of the call.
	ID string `json:"id"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Args are the arguments the model wrote, as JSON.
	Args string `json:"args"`
	// Description is the tool's description.
	Description string `json:"description"`
}

// DecisionKind is what a reviewer decided about a call.
type DecisionKind string

// The kinds of [Decision].
const (
	// Approved runs the call as the model wrote it.
	Approved DecisionKind = "approve"
	// Edited runs the call with the decision's Args.
	Edited DecisionKind = "edit"
	// Rejected does not run the call; the model reads the decision's
	// Message as its result.
	Rejected DecisionKind = "reject"
)

// Decision is a reviewer's answer about one call of an [ApprovalRequest].
type Decision struct {
	// Kind is approve, edit or reject.
	Kind DecisionKind `json:"kind"`
	// Args are the arguments to run an edited call with: a JSON object.
	Args string `json:"args,omitempty"`
	// Message is what the model reads for a rejected call; empty, it reads
	// that the user rejected the call.
	Message string `json:"message,omitempty"`
}

// Approve returns the decision to run a call as it is.
func Approve() Decision { return Decision{Kind: Approved} }

// Edit returns the decision to run a call with args, a JSON object, in
// place of the model's arguments.
func Edit(args string) Decision { return Decision{Kind: Edited, Args: args} }

// Reject returns the decision not to run a call; message (may be empty)
// is what the model reads instead of its result.
func Reject(message string) Decision { return Decision{Kind: Rejected, Message: message} }

// approval is the approval node and the routing around it.
type approval struct {
	tools map[string]tools.Tool // the tools whose calls are reviewed
}

func newApproval(names []string, tn *tools.ToolNode) (*approval, error) {
	a := &approval{tools: map[string]tools.Tool{}}
	for _, name := range names {
		i := slices.IndexFunc(tn.Tools(), func(t tools.Tool) bool { return t.Name() == name })
		if i < 0 {
			return nil, fmt.Errorf("agent: WithToolApproval(%q): the agent has no such tool", name)
		}
		a.tools[name] = tn.Tools()[i]
	}
	return a, nil
}

// needsReview reports whether a call of m needs a decision.
func (a *approval) needsReview(m state.Message) bool {
	return slices.ContainsFunc(m.ToolCalls(), func(c llms.ToolCall) bool { return a.reviewed(c) })
}

func (a *approval) reviewed(c llms.ToolCall) bool {
	return c.FunctionCall != nil && a.tools[c.FunctionCall.Name] != nil
}

// route follows the "agent" node: to the approval node when a call of the
// model's message needs review, else as tools.SendCondition.
func (a *approval) route(ctx context.Context, s ReActState) (graph.Route[ReActState], error) {
	last, ok := s.Messages.Last()
	if !ok {
		return graph.Route[ReActState]{}, tools.ErrNoMessages
	}
	if a.needsReview(last) {
		return graph.To[ReActState](ApprovalNode), nil
	}
	return tools.SendCondition(getMessages, setMessages, ToolsNode)(ctx, s)
}

// afterReview follows the approval node: the calls of the reviewed message
// that no tool message answers yet (approved, edited, or not reviewed) go
// to the "tools" node, one task each; when there are none (all rejected),
// the model is called again.
func (a *approval) afterReview(ctx context.Context, s ReActState) (graph.Route[ReActState], error) {
	ai, answered := lastAI(s.Messages.List())
	var sends []graph.Send[ReActState]
	for _, one := range tools.SplitCalls(ai) {
		if c := one.ToolCalls()[0]; !answered[c.ID] {
			sends = append(sends, graph.Send[ReActState]{Node: ToolsNode, Arg: setMessages([]state.Message{one})})
		}
	}
	if len(sends) == 0 {
		return graph.To[ReActState](AgentNode), nil
	}
	return graph.Route[ReActState]{Sends: sends}, nil
}

// lastAI returns the last AI message of msgs and the IDs of the calls the
// tool messages after it answer.
func lastAI(msgs []state.Message) (state.Message, map[string]bool) {
	answered := map[string]bool{}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == llms.ChatMessageTypeAI {
			return m, answered
		}
		for _, r := range m.ToolResults() {
			answered[r.ToolCallID] = true
		}
	}
	return state.Message{}, answered
}

// node is the approval node: it asks for decisions about the calls of the
// last message that need review, and writes the message with edited
// arguments and a tool message for each rejected call.
func (a *approval) node(ctx context.Context, s ReActState) (ReActState, error) {
	last, ok := s.Messages.Last()
	if !ok || last.Role != llms.ChatMessageTypeAI {
		return ReActState{}, errors.New("agent: the approval node runs after a model message")
	}
	var req ApprovalRequest
	for _, c := range last.ToolCalls() {
		if a.reviewed(c) {
			req.Calls = append(req.Calls, ReviewCall{ID: c.ID, Tool: c.FunctionCall.Name,
				Args: c.FunctionCall.Arguments, Description: a.tools[c.FunctionCall.Name].Description()})
		}
	}
	var decisions []Decision
	for {
		d, err := graph.InterruptAs[[]Decision](ctx, req)
		if err != nil {
			return ReActState{}, noCheckpointer(err)
		}
		if req.Problem = checkDecisions(req.Calls, d); req.Problem == "" {
			decisions = d
			break
		}
	}
	byID := make(map[string]Decision, len(decisions))
	for i, c := range req.Calls {
		byID[c.ID] = decisions[i]
	}
	msg := last
	msg.Parts = slices.Clone(last.Parts)
	var rejected []state.Message
	for i, p := range msg.Parts {
		c, ok := p.(llms.ToolCall)
		if !ok {
			continue
		}
		d, reviewed := byID[c.ID]
		switch {
		case !reviewed:
		case d.Kind == Edited:
			fc := *c.FunctionCall
			fc.Arguments = d.Args
			c.FunctionCall = &fc
			msg.Parts[i] = c
		case d.Kind == Rejected:
			text := d.Message
			if text == "" {
				text = fmt.Sprintf("The user rejected this call of %s: it was not run.", c.FunctionCall.Name)
			}
			rejected = append(rejected, state.Tool(c.ID, c.FunctionCall.Name, text))
		}
	}
	return ReActState{Messages: state.Msgs(append([]state.Message{msg}, rejected...)...)}, nil
}

// checkDecisions returns what is wrong with decisions as the answer to a
// request for calls, or "".
func checkDecisions(calls []ReviewCall, decisions []Decision) string {
	if len(decisions) != len(calls) {
		return fmt.Sprintf("%d decisions for %d calls: give one decision per call, in order", len(decisions), len(calls))
	}
	for i, d := range decisions {
		switch d.Kind {
		case Approved, Rejected:
		case Edited:
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(d.Args), &obj); err != nil || obj == nil {
				return fmt.Sprintf("decision %d (call %s of %s): the edited arguments are not a JSON object", i+1, calls[i].ID, calls[i].Tool)
			}
		default:
			return fmt.Sprintf("decision %d (call %s of %s): kind %q is not approve, edit or reject", i+1, calls[i].ID, calls[i].Tool, d.Kind)
		}
	}
	return ""
}

// noCheckpointer names agent.WithCheckpointer in the error of an interrupt
// in an agent compiled without a checkpointer.
func noCheckpointer(err error) error {
	if errors.Is(err, graph.ErrNoCheckpointer) {
		return fmt.Errorf("agent: build the agent with agent.WithCheckpointer to pause it: %w", err)
	}
	return err
}
