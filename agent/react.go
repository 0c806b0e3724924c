package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/internal/modelcall"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Names of the nodes of the ReAct graph.
const (
	// AgentNode calls the model.
	AgentNode = "agent"
	// ToolsNode runs the tool calls of the model's last message, each call
	// in a task of its own.
	ToolsNode = "tools"
)

// NeedMoreSteps is the text of the AI message the agent appends instead of
// the model's tool calls when the run is about to reach its recursion
// limit (LangGraph's wording).
const NeedMoreSteps = "Sorry, need more steps to process this request."

// ReActState is the state of the ReAct agent: the conversation.
type ReActState struct {
	// Messages is the conversation: the input, the model's AI messages and
	// the tool messages, in order. The system prompt is not stored in it.
	// Its JSON key is "messages", as in LangGraph's MessagesState.
	Messages state.Messages `json:"messages"`
}

func getMessages(s ReActState) state.Messages { return s.Messages }

func setMessages(m []state.Message) ReActState { return ReActState{Messages: state.Msgs(m...)} }

// Option configures [NewReAct].
type Option func(*config)

type config struct {
	system      string
	saver       checkpoint.Saver
	toolOpts    []tools.ToolNodeOption
	callOpts    []llm.CallOption
	compileOpts []graph.CompileOption
	middleware  []graph.Middleware[ReActState]
	approve     []string
}

// WithSystemPrompt puts a system message with text before the conversation
// in every model call. It is not stored in the state.
func WithSystemPrompt(text string) Option {
	return func(c *config) { c.system = text }
}

// WithCheckpointer compiles the graph with graph.WithCheckpointer(s), so
// that a thread keeps its conversation across runs; runs then need
// graph.WithThread.
func WithCheckpointer(s checkpoint.Saver) Option {
	return func(c *config) { c.saver = s }
}

// WithMaxToolConcurrency bounds how many tool calls of one model message
// run at once (default: all of them), across the tasks that run them (see
// tools.WithMaxConcurrency).
func WithMaxToolConcurrency(n int) Option {
	return WithToolNodeOptions(tools.WithMaxConcurrency(n))
}

// WithToolNodeOptions configures the "tools" node (per-call timeout,
// failing on tool errors, logger).
func WithToolNodeOptions(opts ...tools.ToolNodeOption) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

// WithCallOptions adds options to every model call (temperature, maximum
// tokens, tool choice, …). The tools are bound by the agent itself.
func WithCallOptions(opts ...llm.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

// WithCompileOptions adds options to the compilation of the graph (hooks,
// breakpoints, a name, a cache, …). They apply after the agent's own, so
// they may override the name ("react") and the checkpointer.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// WithNodeMiddleware wraps the agent's nodes ("agent" and "tools") in mw,
// the first outermost (see graph.Middleware; package agent/middleware has
// error handling for nodes, and middleware for the model and the tools,
// which wrap the model and tools given to NewReAct instead).
func WithNodeMiddleware(mw ...graph.Middleware[ReActState]) Option {
	return func(c *config) { c.middleware = append(c.middleware, mw...) }
}

// NewReAct returns a compiled ReAct agent graph: the "agent" node calls
// model with the tools bound, and while the model's answer has tool calls
// the "tools" node runs them and the model is called again. With no tools
// the graph is a single model call.
//
// As in LangGraph's create_react_agent, each tool call is a task of the
// "tools" node of its own (a graph.Send made by tools.SendCondition, whose
// argument is the conversation of the AI message with only that call), and
// appends one tool message; the calls of one answer run concurrently, in
// one superstep, and their messages are merged in the order of the calls.
// With a checkpointer, the graph saves each call's tool message as soon as
// the call has finished, so a run resumed after a crash or a failure runs
// only the calls that had not finished.
//
// Each model call is reported as an events.ModelCall on the run's custom
// stream (events.Bridge publishes it).
//
// It fails if model is nil, if two tools share a name or a tool is invalid
// (see [tools.Set.Add]).
func NewReAct(model llm.Model, ts []tools.Tool, opts ...Option) (*graph.Graph[ReActState], error) {
	if model == nil {
		return nil, errors.New("agent: nil model")
	}
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	a := &react{model: model, system: cfg.system, callOpts: cfg.callOpts}

	b := graph.New[ReActState]()
	if len(cfg.middleware) > 0 {
		b.Use(cfg.middleware...)
	}
	b.AddNode(AgentNode, a.call)
	b.AddEdge(graph.Start, AgentNode)
	if len(ts) == 0 && len(cfg.approve) > 0 {
		return nil, fmt.Errorf("agent: WithToolApproval(%q): the agent has no tools", cfg.approve)
	}
	if len(ts) == 0 {
		b.AddEdge(AgentNode, graph.End)
	} else {
		tn, err := tools.NewToolNode(ts, cfg.toolOpts...)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.defs = tn.Definitions()
		b.AddNode(ToolsNode, toolsNode(tn))
		if len(cfg.approve) == 0 {
			b.AddBranch(AgentNode, tools.SendCondition(getMessages, setMessages, ToolsNode), graph.WithDestinations(ToolsNode, graph.End))
		} else {
			ap, err := newApproval(cfg.approve, tn)
			if err != nil {
				return nil, err
			}
			a.approval = ap
			b.AddNode(ApprovalNode, ap.node)
			b.AddBranch(AgentNode, ap.route, graph.WithDestinations(ApprovalNode, ToolsNode, graph.End))
			b.AddBranch(ApprovalNode, ap.afterReview, graph.WithDestinations(ToolsNode, AgentNode))
		}
		b.AddEdge(ToolsNode, AgentNode)
	}

	copts := []graph.CompileOption{graph.WithName("react")}
	if cfg.saver != nil {
		copts = append(copts, graph.WithCheckpointer(cfg.saver))
	}
	g, err := b.Compile(append(copts, cfg.compileOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return g, nil
}

// toolsNode is the "tools" node: tn's, with the error of a tool that asks
// a human in an agent without a checkpointer naming WithCheckpointer.
func toolsNode(tn *tools.ToolNode) graph.NodeFunc[ReActState] {
	run := tools.Node(tn, getMessages, setMessages)
	return func(ctx context.Context, s ReActState) (ReActState, error) {
		out, err := run(ctx, s)
		return out, noCheckpointer(err)
	}
}

type react struct {
	model    llm.Model
	system   string
	defs     []llms.Tool
	callOpts []llm.CallOption
	approval *approval // nil without WithToolApproval
}

// call is the "agent" node.
func (a *react) call(ctx context.Context, s ReActState) (ReActState, error) {
	msgs := s.Messages.List()
	if a.system != "" {
		msgs = append([]state.Message{state.System(a.system)}, msgs...)
	}
	opts := a.callOpts
	if len(a.defs) > 0 {
		opts = append(opts[:len(opts):len(opts)], llm.WithTools(a.defs))
	}
	resp, err := modelcall.Generate(ctx, a.model, "", 0, msgs, opts...)
	if err != nil {
		return ReActState{}, fmt.Errorf("agent: %w", err)
	}
	msg := resp.Message
	need := 2 // the tools, then this node again
	if a.approval != nil && a.approval.needsReview(msg) {
		need = 3 // the approval first
	}
	if len(msg.ToolCalls()) > 0 && graph.RemainingSteps(ctx) < need {
		sorry := state.AI(NeedMoreSteps)
		sorry.ID = msg.ID
		msg = sorry
	}
	return ReActState{Messages: state.Msgs(msg)}, nil
}
