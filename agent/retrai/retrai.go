package retrai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Names of the nodes of the retrAI graph.
const (
	// PlanNode calls the model with the tools bound.
	PlanNode = "plan"
	// ActNode runs the tool calls the model asked for.
	ActNode = "act"
	// EvaluateNode checks the goal and counts the iteration.
	EvaluateNode = "evaluate"
	// HumanCheckNode pauses the run for a human's approval (HITL runs).
	HumanCheckNode = "human_check"
	// BaselineNode records the project's tests before the model changes
	// anything, for goals that implement goals.Baseliner.
	BaselineNode = "baseline"
)

// Defaults of the retrAI agent.
const (
	// DefaultMaxIterations is the iteration limit of a run whose state
	// sets none.
	DefaultMaxIterations = 50
	// DefaultContextMessages is how many messages, besides the system
	// prompt, the plan node sends to the model (see [llm.Trim]).
	DefaultContextMessages = 60
	// DefaultToolOutputChars caps the text of each tool result kept in
	// the conversation; longer output keeps its head and tail.
	DefaultToolOutputChars = 8000
	// DefaultStuckAfter is the number of consecutive iterations with the
	// same failure after which the status message asks the model to try
	// another approach.
	DefaultStuckAfter = 3
)

// Outcomes of a finished retrAI run, as returned by [State.Outcome]
// and carried by its [Finished] event.
const (
	OutcomeAchieved = "achieved"
	OutcomeFailed   = "failed"
	OutcomeAborted  = "aborted"
)

// ToolCall is a tool call the model asked for and the act node has
// not run yet.
type ToolCall struct {
	// ID is the call's ID, echoed by its result.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Args is the JSON text of the arguments.
	Args string `json:"args"`
}

// ToolResult is the outcome of one tool call run by the act node.
type ToolResult struct {
	// CallID is the ID of the call.
	CallID string `json:"call_id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Output is what the model is shown, truncated to the tool output
	// limit.
	Output string `json:"output"`
	// IsError reports a call that failed (an unknown tool, bad arguments,
	// a tool error); Output then explains it to the model.
	IsError bool `json:"is_error,omitempty"`
}

// ActCall is the tool call an act task runs: one of the calls of a
// model turn, which the plan node sends to the act node each in a task of
// its own.
type ActCall struct {
	// Turn identifies the model's turn: the ID of its AI message.
	Turn string `json:"turn"`
	// Index is the call's position among the turn's calls (from 0).
	Index int `json:"index"`
	// Call is the call.
	Call ToolCall `json:"call"`
}

// State is the state of the retrAI agent. [Input] builds the
// input of a new run.
type State struct {
	// Messages is the conversation: the kickoff message, the model's AI
	// messages, the tool results and the goal status messages. The system
	// prompt is not stored: the plan node rebuilds it from the goal.
	Messages state.Messages
	// PendingToolCalls are the calls of the model's last answer, until
	// the act step has run them (the evaluate node clears them).
	PendingToolCalls state.Value[[]ToolCall]
	// ToolResults are the results of the last act step, in call order:
	// the plan node empties the list when it records tool calls, and each
	// act task appends the result of its call.
	ToolResults state.Append[ToolResult]
	// ActCall is set only in the input of an act task (the argument of a
	// graph.Send of the plan node's branch), never in the run's state: the
	// one tool call the task runs (see [New]).
	ActCall state.Value[ActCall]
	// GoalAchieved and GoalReason are the outcome of the last goal check.
	GoalAchieved state.Value[bool]
	GoalReason   state.Value[string]
	// Iteration counts the completed iterations (goal checks).
	Iteration state.Value[int]
	// MaxIterations is the run's limit; zero means DefaultMaxIterations.
	MaxIterations state.Value[int]
	// HITLEnabled asks for a human check after every iteration.
	HITLEnabled state.Value[bool]
	// ModelName names the model, for its events.ModelCall events.
	ModelName state.Value[string]
	// Cwd is the project directory the tools and the goal check work in.
	Cwd state.Value[string]
	// RunID identifies the run (and its checkpoint thread).
	RunID state.Value[string]
	// TotalTokens is the run's token usage.
	TotalTokens state.Sum[int]
	// Aborted reports that a human aborted the run at a human check.
	Aborted state.Value[bool]
	// StuckIterations counts the consecutive goal checks that reported
	// the same failure as LastFailure.
	StuckIterations state.Value[int]
	LastFailure     state.Value[string]
	// GoalBaseline is what the goal recorded before the first iteration
	// (see goals.Baseliner); nil for goals that record nothing. Every
	// goal check gets it.
	GoalBaseline state.Value[*goals.Baseline]
}

// Limit returns the run's iteration limit.
func (s State) Limit() int {
	if n := s.MaxIterations.Get(); n > 0 {
		return n
	}
	return DefaultMaxIterations
}

// Outcome returns how the run ended — OutcomeAchieved, OutcomeAborted or
// OutcomeFailed (out of iterations) — or "" if it has not ended.
func (s State) Outcome() string {
	switch {
	case s.GoalAchieved.Get():
		return OutcomeAchieved
	case s.Aborted.Get():
		return OutcomeAborted
	case s.Iteration.Get() >= s.Limit():
		return OutcomeFailed
	}
	return ""
}

// Run describes a new run for [Input].
type Run struct {
	// RunID identifies the run (and should be its checkpoint thread).
	RunID string
	// Cwd is the project directory.
	Cwd string
	// ModelName names the model.
	ModelName string
	// MaxIterations is the iteration limit (0: DefaultMaxIterations).
	MaxIterations int
	// HITL asks for a human check after every iteration.
	HITL bool
	// Instructions, if not empty, are added to the kickoff message.
	Instructions string
}

// Input returns the input state of a new run: its settings and the
// human kickoff message.
func Input(r Run) State {
	maxIter := r.MaxIterations
	if maxIter <= 0 {
		maxIter = DefaultMaxIterations
	}
	kickoff := "Start working towards the goal in the project directory " + r.Cwd +
		". Begin by exploring the project and running the check yourself, then fix what fails."
	if strings.TrimSpace(r.Instructions) != "" {
		kickoff += "\n\nAdditional instructions:\n" + strings.TrimSpace(r.Instructions)
	}
	in := State{
		Messages:         state.Msgs(state.Human(kickoff)),
		PendingToolCalls: state.Set[[]ToolCall](nil),
		GoalAchieved:     state.Set(false),
		GoalReason:       state.Set(""),
		Iteration:        state.Set(0),
		MaxIterations:    state.Set(maxIter),
		HITLEnabled:      state.Set(r.HITL),
		ModelName:        state.Set(r.ModelName),
		Cwd:              state.Set(r.Cwd),
		RunID:            state.Set(r.RunID),
		Aborted:          state.Set(false),
		StuckIterations:  state.Set(0),
		LastFailure:      state.Set(""),
	}
	in.ToolResults.Overwrite(nil)
	return in
}

// Option configures [New].
type Option func(*config)

type config struct {
	saver       checkpoint.Saver
	toolsFor    func(cwd string) ([]tools.Tool, error)
	toolOpts    []tools.Option
	compileOpts []graph.CompileOption
	callOpts    []llm.CallOption
	outputChars int
	window      int
	stuckAfter  int
}

// WithCheckpointer compiles the graph with graph.WithCheckpointer(s);
// it is needed for human checks and to resume runs, which then need
// graph.WithThread (the run ID).
func WithCheckpointer(s checkpoint.Saver) Option {
	return func(c *config) { c.saver = s }
}

// WithTools replaces the tools given to the model. toolsFor is called
// once per project directory (the state's Cwd). The default is
// tools.Coding on a workspace rooted at the project directory, with the
// tool output limit.
func WithTools(toolsFor func(cwd string) ([]tools.Tool, error)) Option {
	return func(c *config) { c.toolsFor = toolsFor }
}

// WithToolOptions adds options to the default tools (see WithTools),
// after the output limit: tools.WithSandbox(tools.SandboxRequired), say,
// refuses commands where the machine has no sandbox. It has no effect
// with WithTools.
func WithToolOptions(opts ...tools.Option) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

// WithCompileOptions adds options to the graph's compilation (hooks,
// a name, …), after the agent's own.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// WithCallOptions adds options to every model call (temperature,
// maximum tokens, …). The tools are bound by the agent itself.
func WithCallOptions(opts ...llm.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

// WithToolOutputLimit caps each tool result kept in the conversation
// at n characters (default DefaultToolOutputChars).
func WithToolOutputLimit(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.outputChars = n
		}
	}
}

// WithContextMessages sets how many messages besides the system
// prompt the model is sent (default DefaultContextMessages).
func WithContextMessages(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.window = n
		}
	}
}

// WithStuckAfter sets after how many consecutive iterations with the
// same failure the model is told to change its approach (default
// DefaultStuckAfter).
func WithStuckAfter(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.stuckAfter = n
		}
	}
}

// New returns the compiled retrAI agent graph working towards goal
// with model:
//
//	START → plan ─┬─ tool calls ──→ act → evaluate ─┬─ achieved / out of iterations → END
//	              └─ no tool calls ────→ evaluate   ├─ HITL → human_check ─┬─ approve → plan
//	                                                │                      └─ abort → END
//	                                                └─ otherwise → plan
//
// For goals that implement goals.Baseliner (the test goals) a baseline
// node comes first: START → baseline → plan.
//
// The nodes:
//
//   - baseline records the project's tests once, before the model changes
//     anything, in GoalBaseline; every goal check is held to it, so that
//     deleting, renaming or skipping a test does not reach the goal.
//   - plan sends the system prompt (the goal's, plus the project, the
//     limits, the tools and a strategy) and the last messages of the
//     conversation (see [WithContextMessages]) to the model with the
//     tools bound; it appends the model's answer, counts its tokens and
//     records its tool calls as pending.
//   - act runs the pending calls and appends their results, each
//     truncated to the tool output limit. Each call is a task of its own:
//     the plan node's branch sends one graph.Send per call to act, whose
//     argument carries the call in ActCall (with the project directory,
//     the run ID and the iteration), and each task appends one tool
//     message and one ToolResults entry, merged in call order. With a checkpointer, the graph saves each call's result as
//     soon as the call has finished, so a run resumed after a crash runs
//     only the calls that had not finished. The tasks of a turn still run
//     one at a time, in call order (a turn such as "patch the file, then
//     run the tests" depends on it, and two patches of one file must not
//     race): see below.
//   - evaluate runs goal.Check, appends a status message telling the model
//     how far it is (and to change approach when the same failure has
//     persisted for several iterations), counts the iteration and clears
//     the pending calls.
//   - human_check, for runs with HITLEnabled, pauses the run with
//     graph.Interrupt; resuming it with a value [Approved] accepts goes
//     on, anything else aborts the run.
//
// The goal is bound to the graph here, not stored in the state.
//
// The nodes write the agent's events with graph.StreamWriter: plan an
// [IterationStarted] and an events.ModelCall (the model, its text, its
// token usage), baseline a [BaselineRecorded], evaluate a [GoalCheck],
// human_check a [HumanCheck] when it pauses and a [HumanDecision] when it
// is answered, and evaluate or human_check a [Finished] when the run
// ends. Stream a run with graph.WithStreamModes(events.StreamModes) and
// give the stream to events.Bridge to publish them, with the SDK's events
// of the run: each node's start and end, a tool call per call of the
// model's answer and a tool result per act task (from the messages), the
// interrupt of a human check, and the run's end.
//
// Each tool call is a task of its own (a Send to the act node), so a run
// resumed after a crash does not run again the calls that had finished.
// The calls of a turn run one at a time, in the order of the calls (the
// graph's runs default to graph.WithMaxConcurrency(1)): a turn that
// patches a file and then runs the tests needs that order.
//
// Human checks and resuming need a checkpointer ([WithCheckpointer]).
// Each iteration takes at most four supersteps; long runs need
// graph.WithRecursionLimit of at least 4 × MaxIterations + 3.
func New(model llm.Model, goal goals.Goal, opts ...Option) (*graph.Graph[State], error) {
	if model == nil {
		return nil, errors.New("retrai: nil model")
	}
	if goal == nil {
		return nil, errors.New("retrai: nil goal")
	}
	cfg := config{outputChars: DefaultToolOutputChars, window: DefaultContextMessages, stuckAfter: DefaultStuckAfter}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.toolsFor == nil {
		topts := append([]tools.Option{tools.WithOutputLimit(cfg.outputChars)}, cfg.toolOpts...)
		cfg.toolsFor = func(cwd string) ([]tools.Tool, error) {
			ws, err := tools.NewWorkspace(cwd)
			if err != nil {
				return nil, err
			}
			return tools.Coding(ws, topts...), nil
		}
	}
	r := &agent{model: model, goal: goal, cfg: cfg, nodes: map[string]*tools.ToolNode{}}

	b := graph.New[State]()
	b.AddNode(PlanNode, r.plan)
	b.AddNode(ActNode, r.act)
	b.AddNode(EvaluateNode, r.evaluate)
	b.AddNode(HumanCheckNode, r.humanCheck)
	if _, ok := goal.(goals.Baseliner); ok {
		b.AddNode(BaselineNode, r.baseline)
		b.AddEdge(graph.Start, BaselineNode)
		b.AddEdge(BaselineNode, PlanNode)
	} else {
		b.AddEdge(graph.Start, PlanNode)
	}
	b.AddBranch(PlanNode, routeAfterPlan, graph.WithPathMap(map[string]string{
		routeToolCalls: ActNode, routeNoToolCalls: EvaluateNode}))
	b.AddEdge(ActNode, EvaluateNode)
	b.AddConditionalEdges(EvaluateNode, routeAfterEvaluate, graph.WithPathMap(map[string]string{
		routeDone: graph.End, routeHITL: HumanCheckNode, routeContinue: PlanNode}))
	b.AddConditionalEdges(HumanCheckNode, routeAfterHumanCheck, graph.WithPathMap(map[string]string{
		routeApprove: PlanNode, routeAbort: graph.End}))

	copts := []graph.CompileOption{graph.WithName("retrai"), graph.WithRunDefaults(graph.WithMaxConcurrency(1))}
	if cfg.saver != nil {
		copts = append(copts, graph.WithCheckpointer(cfg.saver))
	}
	g, err := b.Compile(append(copts, cfg.compileOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("retrai: %w", err)
	}
	return g, nil
}

// Keys of the routers' path maps, shown on the edges of the graph's
// renderings.
const (
	routeToolCalls   = "tool calls"
	routeNoToolCalls = "no tool calls"
	routeDone        = "achieved or out of iterations"
	routeHITL        = "HITL"
	routeContinue    = "continue"
	routeApprove     = "approve"
	routeAbort       = "abort"
)

// routeAfterPlan sends each pending tool call to the act node in a task of
// its own, or goes to evaluate when there are none.
func routeAfterPlan(_ context.Context, s State) (graph.Route[State], error) {
	calls := s.PendingToolCalls.Get()
	if len(calls) == 0 {
		return graph.To[State](routeNoToolCalls), nil
	}
	last, _ := s.Messages.Last()
	sends := make([]graph.Send[State], len(calls))
	for i, c := range calls {
		var arg State
		arg.ActCall.Set(ActCall{Turn: last.ID, Index: i, Call: c})
		arg.Cwd.Set(s.Cwd.Get())
		arg.RunID.Set(s.RunID.Get())
		arg.Iteration.Set(s.Iteration.Get())
		sends[i] = graph.Send[State]{Node: ActNode, Arg: arg}
	}
	return graph.Route[State]{Sends: sends}, nil
}

func routeAfterEvaluate(_ context.Context, s State) (string, error) {
	switch {
	case s.GoalAchieved.Get(), s.Iteration.Get() >= s.Limit():
		return routeDone, nil
	case s.HITLEnabled.Get():
		return routeHITL, nil
	}
	return routeContinue, nil
}

func routeAfterHumanCheck(_ context.Context, s State) (string, error) {
	if s.Aborted.Get() || s.Iteration.Get() >= s.Limit() {
		return routeAbort, nil
	}
	return routeApprove, nil
}

// agent is one compiled retrAI graph's nodes: its model, goal and
// options, and a tool node per project directory.
type agent struct {
	model llm.Model
	goal  goals.Goal
	cfg   config

	mu    sync.Mutex
	nodes map[string]*tools.ToolNode // by project directory
}

// toolNode returns the tool node of the project directory cwd.
func (r *agent) toolNode(cwd string) (*tools.ToolNode, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.nodes[cwd]; ok {
		return n, nil
	}
	ts, err := r.cfg.toolsFor(cwd)
	if err != nil {
		return nil, fmt.Errorf("tools for %s: %w", cwd, err)
	}
	n, err := tools.NewToolNode(ts)
	if err != nil {
		return nil, err
	}
	r.nodes[cwd] = n
	return n, nil
}

// plan is the "plan" node.
func (r *agent) plan(ctx context.Context, s State) (State, error) {
	it := s.Iteration.Get() + 1
	write := graph.StreamWriter(ctx)
	write(IterationStarted{Iteration: it, MaxIterations: s.Limit()})
	tn, err := r.toolNode(s.Cwd.Get())
	if err != nil {
		return State{}, fmt.Errorf("retrai: %w", err)
	}
	msgs := append([]state.Message{state.System(r.systemPrompt(s, tn))}, s.Messages.List()...)
	msgs = llm.Trim(msgs, r.cfg.window)
	opts := append(r.cfg.callOpts[:len(r.cfg.callOpts):len(r.cfg.callOpts)], llm.WithTools(tn.Definitions()))
	resp, err := llm.GenerateToGraph(ctx, r.model, msgs, opts...)
	if err != nil {
		return State{}, fmt.Errorf("retrai: model call: %w", err)
	}

	var out State
	u := resp.Usage
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	if !u.IsZero() {
		out.TotalTokens.Add(total)
	}
	write(events.ModelCall{
		Model:            s.ModelName.Get(),
		Text:             strings.TrimSpace(resp.Message.Text()),
		ToolCalls:        len(resp.Message.ToolCalls()),
		StopReason:       resp.StopReason,
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      total,
	})
	msg := resp.Message
	if msg.ID == "" {
		msg.ID = state.NewID() // it names the turn of the act tasks
	}
	var pending []ToolCall
	for _, c := range msg.ToolCalls() {
		pc := ToolCall{ID: c.ID}
		if c.FunctionCall != nil {
			pc.Name, pc.Args = c.FunctionCall.Name, c.FunctionCall.Arguments
		}
		pending = append(pending, pc)
	}
	out.Messages.Append(msg)
	out.PendingToolCalls.Set(pending)
	if len(pending) > 0 {
		out.ToolResults.Overwrite(nil)
	}
	return out, nil
}

// act is the "act" node. A task of it sent by the plan node runs the one
// call of its ActCall (the graph runs a turn's tasks one at a time, in call
// order); a task that has none (the node reached by a Command's Goto, say)
// runs the pending calls one after the other.
func (r *agent) act(ctx context.Context, s State) (State, error) {
	tn, err := r.toolNode(s.Cwd.Get())
	if err != nil {
		return State{}, fmt.Errorf("retrai: %w", err)
	}
	var out State
	if !s.ActCall.HasValue() {
		for _, c := range s.PendingToolCalls.Get() {
			if err := r.runCall(ctx, s, tn, c, &out); err != nil {
				return State{}, err
			}
		}
		out.PendingToolCalls.Set(nil)
		return out, nil
	}
	if err := r.runCall(ctx, s, tn, s.ActCall.Get().Call, &out); err != nil {
		return State{}, err
	}
	return out, nil
}

// runCall runs the tool call c and appends its result to out: a
// ToolResults entry and a tool message (whose events.ToolResult
// events.Bridge publishes).
func (r *agent) runCall(ctx context.Context, s State, tn *tools.ToolNode, c ToolCall, out *State) error {
	msgs, err := tn.RunCalls(ctx, []llms.ToolCall{state.ToolCall(c.ID, c.Name, c.Args)})
	if err != nil {
		return fmt.Errorf("retrai: tool %s: %w", c.Name, err)
	}
	for _, m := range msgs {
		for _, tr := range m.ToolResults() {
			res := ToolResult{
				CallID:  tr.ToolCallID,
				Name:    tr.Name,
				Output:  TruncateMiddle(tr.Content, r.cfg.outputChars),
				IsError: isToolError(tr.Content),
			}
			out.ToolResults.Append(res)
			out.Messages.Append(state.Tool(res.CallID, res.Name, res.Output))
		}
	}
	return nil
}

// isToolError reports a tool message written by tools.ToolNode for a call
// that could not be carried out.
func isToolError(content string) bool {
	return strings.HasPrefix(content, "Error: ") || strings.HasPrefix(content, "Error invoking tool ")
}

// baseline is the "baseline" node.
func (r *agent) baseline(ctx context.Context, s State) (State, error) {
	if s.GoalBaseline.Get() != nil {
		return State{}, nil
	}
	base, err := r.goal.(goals.Baseliner).Baseline(ctx, s.Cwd.Get())
	if err != nil {
		return State{}, fmt.Errorf("retrai: goal baseline %s: %w", r.goal.Name(), err)
	}
	graph.StreamWriter(ctx)(BaselineRecorded{Summary: base.Summary})
	var out State
	out.GoalBaseline.Set(base)
	return out, nil
}

// evaluate is the "evaluate" node.
func (r *agent) evaluate(ctx context.Context, s State) (State, error) {
	it := s.Iteration.Get() + 1
	limit := s.Limit()
	res, err := r.goal.Check(ctx, goals.State{
		RunID:         s.RunID.Get(),
		Iteration:     it,
		MaxIterations: limit,
		Messages:      s.Messages.List(),
		Baseline:      s.GoalBaseline.Get(),
	}, s.Cwd.Get())
	if err != nil {
		return State{}, fmt.Errorf("retrai: goal check %s: %w", r.goal.Name(), err)
	}

	stuck, signature := 0, ""
	if !res.Achieved {
		signature = failureSignature(res)
		stuck = 1
		if signature == s.LastFailure.Get() {
			stuck = s.StuckIterations.Get() + 1
		}
	}
	tokens := s.TotalTokens.Get()
	write := graph.StreamWriter(ctx)
	write(GoalCheck{
		Goal:          r.goal.Name(),
		Iteration:     it,
		MaxIterations: limit,
		Achieved:      res.Achieved,
		Reason:        res.Reason,
		Passed:        res.Details.Passed,
		Failed:        res.Details.Failed,
		Stuck:         stuck,
		TotalTokens:   tokens,
	})

	var out State
	out.Messages.Append(state.Human(r.statusMessage(res, it, limit, stuck)))
	out.PendingToolCalls.Set(nil)
	out.GoalAchieved.Set(res.Achieved)
	out.GoalReason.Set(res.Reason)
	out.Iteration.Set(it)
	out.StuckIterations.Set(stuck)
	out.LastFailure.Set(signature)

	switch {
	case res.Achieved:
		write(Finished{Outcome: OutcomeAchieved, Reason: res.Reason, Iteration: it, TotalTokens: tokens})
	case it >= limit:
		write(Finished{Outcome: OutcomeFailed, Reason: fmt.Sprintf("goal not achieved after %d iteration(s): %s", it, res.Reason),
			Iteration: it, TotalTokens: tokens})
	}
	return out, nil
}

// failureSignature identifies a failure for stuck detection: the number of
// failures when the check counts them, else its reason.
func failureSignature(res goals.Result) string {
	if res.Details.Failed > 0 {
		return fmt.Sprintf("%d failing", res.Details.Failed)
	}
	return res.Reason
}

// maxStatusDetail caps the failure details of a status message.
const maxStatusDetail = 4000

// statusMessage is what the evaluate node tells the model.
func (r *agent) statusMessage(res goals.Result, it, limit, stuck int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[goal check, iteration %d of %d] ", it, limit)
	if res.Achieved {
		fmt.Fprintf(&b, "Goal achieved: %s", res.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "Not achieved yet: %s\n", res.Reason)
	detail := ""
	for _, f := range res.Details.Failures {
		detail += "\n--- " + f.Name + "\n" + strings.TrimSpace(f.Output) + "\n"
	}
	if detail == "" && strings.TrimSpace(res.Details.Output) != "" {
		detail = "\nOutput of " + res.Details.Command + ":\n" + strings.TrimSpace(res.Details.Output) + "\n"
	}
	if detail != "" {
		b.WriteString(TruncateMiddle(detail, maxStatusDetail))
	}
	left := limit - it
	if left <= 0 {
		b.WriteString("\nNo iterations are left: the run stops here.")
		return b.String()
	}
	fmt.Fprintf(&b, "\n%d iteration(s) left. Keep going: decide your next change from the result above, make it, and verify it by running the check.", left)
	if stuck >= r.cfg.stuckAfter {
		fmt.Fprintf(&b, "\n\nYou are stuck: the check has reported the same failure for %d iterations in a row. Your current approach is not working. Step back, re-read the failing output and the code, search the code base or the web, and try a different approach.", stuck)
	}
	return b.String()
}

// humanCheck is the "human_check" node.
func (r *agent) humanCheck(ctx context.Context, s State) (State, error) {
	it := s.Iteration.Get()
	write := graph.StreamWriter(ctx)
	question := fmt.Sprintf("Iteration %d of %d done: %s. Continue (approve) or stop (abort)?", it, s.Limit(), s.GoalReason.Get())
	answer, err := graph.Interrupt(ctx, map[string]any{
		"question":  question,
		"iteration": it,
		"reason":    s.GoalReason.Get(),
	})
	if err != nil {
		// The run pauses here; it re-runs this node when resumed.
		write(HumanCheck{Question: question, Reason: s.GoalReason.Get(), Iteration: it})
		return State{}, err
	}
	ok := Approved(answer)
	write(HumanDecision{Decision: fmt.Sprint(answer), Approved: ok, Iteration: it})
	var out State
	if !ok {
		out.Aborted.Set(true)
		out.Messages.Append(state.Human("[human check] The run was aborted by a human."))
		write(Finished{Outcome: OutcomeAborted, Reason: "aborted by a human at iteration " + fmt.Sprint(it),
			Iteration: it, TotalTokens: s.TotalTokens.Get()})
	}
	return out, nil
}

// Approved reports whether a human check's resume value approves going on:
// true, or "approve", "yes" or "continue" in any case and surrounding
// space, or a map whose "decision" key holds one of these.
func Approved(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "approve", "yes", "continue":
			return true
		}
	case map[string]any:
		return Approved(x["decision"])
	}
	return false
}

// systemPrompt builds the model's instructions.
func (r *agent) systemPrompt(s State, tn *tools.ToolNode) string {
	var b strings.Builder
	b.WriteString("You are retrAI, an autonomous software engineering agent. You work on the project in the directory ")
	b.WriteString(s.Cwd.Get())
	b.WriteString(" with the tools below, and you keep iterating until the goal is achieved.\n\n## Goal: ")
	b.WriteString(r.goal.Name())
	b.WriteString("\n\n")
	b.WriteString(strings.TrimSpace(r.goal.SystemPrompt()))
	fmt.Fprintf(&b, "\n\n## How the run works\n\nEach iteration you may call tools; then the goal is checked automatically and you are told the result. You have at most %d iterations (%d done so far).\n\n## Tools\n\n", s.Limit(), s.Iteration.Get())
	for _, t := range tn.Tools() {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name(), firstLine(t.Description()))
	}
	b.WriteString(`
## Strategy

1. Understand first: list the files, read the relevant code and configuration, and run the check yourself to see the actual failure before changing anything.
2. Run things: execute the tests, scripts and commands; evidence beats guessing.
3. Iterate: make one focused change at a time, then re-run to see its effect.
4. Search when stuck: if the same failure persists, re-read the error, grep the code base or search the web, and try a different approach.
5. Prefer file_patch for targeted edits over rewriting whole files with file_write.
6. Always verify a change by running the tests or the command before you consider it done.

## Rules

- Never give up while iterations remain, and never say you cannot do something: you have full shell access in the project directory.
- Paths are relative to the project directory.
- Think step by step, and say briefly what you are about to do before calling tools.`)
	return b.String()
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TruncateMiddle shortens s to at most n characters (runes) by keeping its
// head and tail around a marker saying how many characters were left out.
// n <= 0 returns s unchanged.
func TruncateMiddle(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if n <= 0 || total <= n {
		return s
	}
	r := []rune(s)
	keep := n
	var marker string
	for range 3 { // the marker's length depends on the count it shows
		marker = fmt.Sprintf("\n… [%d characters truncated] …\n", total-keep)
		keep = n - utf8.RuneCountInString(marker)
	}
	if keep < 2 {
		return string(r[:n])
	}
	head := keep / 2
	return string(r[:head]) + marker + string(r[total-(keep-head):])
}
