package planexec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent/internal/modelcall"
	"github.com/agentgraph/agentgraph/agent/internal/modeljson"
	"github.com/agentgraph/agentgraph/agent/internal/prompt"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Names of the nodes of the graph.
const (
	// PlannerNode asks the model for the plan: a JSON array of steps.
	PlannerNode = "planner"
	// SetupExecutorNode clears the executor's messages and gives it the
	// current step.
	SetupExecutorNode = "setup_executor"
	// ExecutorNode calls the model with the tools bound.
	ExecutorNode = "executor"
	// ToolsNode runs the tool calls of the executor's last message, each
	// call in a task of its own.
	ToolsNode = "tools"
	// AggregateNode records the step's finding and clears the executor's
	// messages.
	AggregateNode = "aggregate"
	// RefineryNode decides whether to plan again or to answer.
	RefineryNode = "refinery"
	// SynthesizerNode writes the final answer.
	SynthesizerNode = "synthesizer"
)

// The defaults of the three safety limits.
const (
	// DefaultMaxIterations bounds the planner-executor-refinery cycles
	// (see [WithMaxIterations]).
	DefaultMaxIterations = 10
	// DefaultMaxExecutorSteps bounds the executor's model calls for one
	// plan step (see [WithMaxExecutorSteps]).
	DefaultMaxExecutorSteps = 5
	// DefaultRecursionLimit bounds the supersteps of a run (see
	// [WithRecursionLimit]).
	DefaultRecursionLimit = 150
)

// NoResults is the finding of a step whose executor produced no tool
// result and no text.
const NoResults = "No results found"

// NoMoreSteps is the step the executor is given when the current step is
// past the end of the plan.
const NoMoreSteps = "No more steps to execute"

// Decision is the refinery's decision.
type Decision string

// The refinery's decisions.
const (
	// Continue: information is missing; plan again.
	Continue Decision = "CONTINUE"
	// Finish: the findings suffice; write the answer.
	Finish Decision = "FINISH"
)

// State is the state of the plan-and-execute agent. [Input] builds the
// input of a run.
type State struct {
	// Input is the user's question.
	Input state.Value[string]
	// ChatHistory is the conversation across runs of a thread: the
	// questions and the agent's answers. The planner, the refinery and
	// the synthesizer see it after their system message.
	ChatHistory state.Messages
	// Plan is the planner's current plan.
	Plan state.Value[[]string]
	// CurrentStep is the index in Plan of the step being worked on.
	CurrentStep state.Value[int]
	// Findings is the evidence gathered, one entry per step done, keyed
	// "step_N: <step>", where N counts the steps done in the run, from 1.
	Findings state.Map[string, string]
	// Response is the final answer, in markdown.
	Response state.Value[string]
	// LoopDecision is the refinery's last decision.
	LoopDecision state.Value[Decision]
	// Messages is the executor's conversation for the current step: its
	// system and human messages, the model's AI messages and the tool
	// messages. Every message is removed, by ID, when the step ends.
	Messages state.Messages
	// ExecutorCallCount counts the executor's model calls for the current
	// step.
	ExecutorCallCount state.Value[int]
	// IterationCount counts the planner-executor-refinery cycles.
	IterationCount state.Value[int]
}

// Input returns the input of a run answering question: it appends the
// question to ChatHistory and resets the other fields, so that a thread
// with a checkpointer can take a follow-up question.
func Input(question string) State {
	in := State{
		Input:             state.Set(question),
		ChatHistory:       state.Msgs(state.Human(question)),
		Plan:              state.Set[[]string](nil),
		CurrentStep:       state.Set(0),
		Response:          state.Set(""),
		LoopDecision:      state.Set(Decision("")),
		ExecutorCallCount: state.Set(0),
		IterationCount:    state.Set(0),
	}
	in.Findings.Overwrite(nil)
	return in
}

// ErrNilModel is returned by [New] when the model is nil.
var ErrNilModel = errors.New("planexec: nil model")

// OptionError is returned by [New] for an option given an invalid value.
type OptionError struct {
	// Option names the option, Value is the value it was given.
	Option string
	Value  int
}

// Error names the option and the value.
func (e *OptionError) Error() string {
	return fmt.Sprintf("planexec: %s(%d): the limit must be at least 1", e.Option, e.Value)
}

// Option configures [New].
type Option func(*config)

type config struct {
	maxIterations    int
	maxExecutorSteps int
	recursionLimit   int
	maxFinding       int
	prompts          Prompts
	toolOpts         []tools.ToolNodeOption
	callOpts         []llm.CallOption
	compileOpts      []graph.CompileOption
}

// WithMaxIterations bounds the planner-executor-refinery cycles (default
// [DefaultMaxIterations]): the refinery of the n-th cycle decides Finish
// without asking the model, and the run goes to the synthesizer.
func WithMaxIterations(n int) Option {
	return func(c *config) { c.maxIterations = n }
}

// WithMaxExecutorSteps bounds the executor's model calls for one plan step
// (default [DefaultMaxExecutorSteps]): after the n-th call the step ends,
// even if the model asked for tools, whose calls are then not run.
func WithMaxExecutorSteps(n int) Option {
	return func(c *config) { c.maxExecutorSteps = n }
}

// WithRecursionLimit sets the recursion limit of the graph's runs
// (default [DefaultRecursionLimit]; see graph.WithRecursionLimit): a run
// that needs more supersteps fails with a *graph.RecursionError. One
// planner-executor-refinery cycle without tool calls takes 5 supersteps,
// and each round of tool calls 2 more. A run's own
// graph.WithRecursionLimit overrides it.
func WithRecursionLimit(n int) Option {
	return func(c *config) { c.recursionLimit = n }
}

// WithMaxFindingLength bounds each finding to n characters (runes); n
// of 0 or less, the default, keeps findings whole. Every finding goes into
// every later prompt of the run, and a step's finding holds all its tool
// results, so tools with large outputs, or a model calling many tools at
// once, can make the prompts outgrow the model's context: a longer finding
// keeps its head and its tail (where the executor's answer is) around a
// line saying how much was cut, as tools.Truncate cuts.
func WithMaxFindingLength(n int) Option {
	return func(c *config) { c.maxFinding = n }
}

// WithPrompts replaces the prompts; its empty fields keep the defaults
// (see [DefaultPrompts]).
func WithPrompts(p Prompts) Option {
	return func(c *config) { c.prompts = p }
}

// WithToolNodeOptions configures the "tools" node (per-call timeout,
// concurrency, logger, failing on tool errors).
func WithToolNodeOptions(opts ...tools.ToolNodeOption) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

// WithCallOptions adds options to every model call (temperature, maximum
// tokens, …). The executor's tools are bound by the agent itself.
func WithCallOptions(opts ...llm.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

// WithCompileOptions adds options to the compilation of the graph: a
// checkpointer (graph.WithCheckpointer), breakpoints, hooks (for example
// telemetry.Instrument), a cache. They apply after the agent's own, so
// they may override its name ("planexec") and its run defaults.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// New returns the compiled plan-and-execute agent: model plans, runs each
// step as a ReAct loop with the tools ts, decides whether to plan again,
// and writes the answer (see the package documentation). With no tools the
// executor answers each step from the model alone.
//
// It fails with [ErrNilModel], an [*OptionError], or an error of
// tools.NewToolNode when two tools share a name or a tool is invalid.
func New(model llm.Model, ts []tools.Tool, opts ...Option) (*graph.Graph[State], error) {
	if model == nil {
		return nil, ErrNilModel
	}
	cfg := config{
		maxIterations:    DefaultMaxIterations,
		maxExecutorSteps: DefaultMaxExecutorSteps,
		recursionLimit:   DefaultRecursionLimit,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	for _, lim := range []struct {
		name string
		n    int
	}{
		{"WithMaxIterations", cfg.maxIterations},
		{"WithMaxExecutorSteps", cfg.maxExecutorSteps},
		{"WithRecursionLimit", cfg.recursionLimit},
	} {
		if lim.n < 1 {
			return nil, &OptionError{Option: lim.name, Value: lim.n}
		}
	}
	cfg.prompts = cfg.prompts.withDefaults()
	a := &agent{model: model, cfg: cfg}

	b := graph.New[State]()
	b.AddNode(PlannerNode, a.plan)
	b.AddNode(SetupExecutorNode, a.setupExecutor)
	b.AddNode(ExecutorNode, a.execute)
	b.AddNode(AggregateNode, a.aggregate)
	b.AddNode(RefineryNode, a.refine)
	b.AddNode(SynthesizerNode, a.synthesize)
	b.AddEdge(graph.Start, PlannerNode)
	b.AddEdge(PlannerNode, SetupExecutorNode)
	b.AddEdge(SetupExecutorNode, ExecutorNode)
	if len(ts) == 0 {
		b.AddEdge(ExecutorNode, AggregateNode)
	} else {
		tn, err := tools.NewToolNode(ts, cfg.toolOpts...)
		if err != nil {
			return nil, fmt.Errorf("planexec: %w", err)
		}
		a.defs = tn.Definitions()
		b.AddNode(ToolsNode, tools.Node(tn, getMessages, setMessages))
		b.AddBranch(ExecutorNode, a.routeExecutor, graph.WithDestinations(ToolsNode, AggregateNode))
		b.AddEdge(ToolsNode, ExecutorNode)
	}
	b.AddEdge(AggregateNode, RefineryNode)
	b.AddConditionalEdges(RefineryNode, a.shouldContinue, graph.WithDestinations(PlannerNode, SynthesizerNode))
	b.AddEdge(SynthesizerNode, graph.End)

	copts := []graph.CompileOption{
		graph.WithName("planexec"),
		graph.WithRunDefaults(graph.WithRecursionLimit(cfg.recursionLimit)),
	}
	g, err := b.Compile(append(copts, cfg.compileOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("planexec: %w", err)
	}
	return g, nil
}

func getMessages(s State) state.Messages { return s.Messages }

func setMessages(m []state.Message) State { return State{Messages: state.Msgs(m...)} }

type agent struct {
	model llm.Model
	cfg   config
	defs  []llms.Tool
}

// generate calls the model from a node and writes an events.ModelCall.
func (a *agent) generate(ctx context.Context, msgs []state.Message, extra ...llm.CallOption) (*llm.Response, error) {
	opts := append(a.cfg.callOpts[:len(a.cfg.callOpts):len(a.cfg.callOpts)], extra...)
	return modelcall.Generate(ctx, a.model, "", 0, msgs, opts...)
}

// conversation returns the system message system followed by the chat
// history, which ends with the question.
func conversation(s State, system string) []state.Message {
	msgs := append([]state.Message{state.System(system)}, s.ChatHistory.List()...)
	last := msgs[len(msgs)-1]
	if last.Role != llms.ChatMessageTypeHuman || last.Text() != s.Input.Get() {
		msgs = append(msgs, state.Human(s.Input.Get()))
	}
	return msgs
}

// plan is the "planner" node.
func (a *agent) plan(ctx context.Context, s State) (State, error) {
	it := s.IterationCount.Get() + 1
	system := prompt.Render(a.cfg.prompts.Planner, "input", s.Input.Get(), "findings", formatFindings(s.Findings.Get()))
	resp, err := a.generate(ctx, conversation(s, system))
	if err != nil {
		return State{}, fmt.Errorf("planexec: planner: %w", err)
	}
	steps, ok := parsePlan(resp.Message.Text())
	if !ok {
		steps = []string{a.cfg.prompts.FallbackStep}
	}
	graph.StreamWriter(ctx)(PlanMade{Iteration: it, MaxIterations: a.cfg.maxIterations, Steps: steps, Fallback: !ok})
	return State{Plan: state.Set(steps), CurrentStep: state.Set(0), IterationCount: state.Set(it)}, nil
}

// parsePlan returns the steps of a planner's answer, a JSON array of
// strings, without blank steps; ok is false when there are none.
func parsePlan(text string) (steps []string, ok bool) {
	raw, err := modeljson.Parse[[]string](text)
	if err != nil {
		return nil, false
	}
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" {
			steps = append(steps, s)
		}
	}
	return steps, len(steps) > 0
}

// currentStep returns the text of the current step, or NoMoreSteps.
func currentStep(s State) string {
	plan, i := s.Plan.Get(), s.CurrentStep.Get()
	if i < 0 || i >= len(plan) {
		return NoMoreSteps
	}
	return plan[i]
}

// removeAll records the removal of every message of s.Messages, by ID.
func removeAll(out *State, s State) {
	for _, m := range s.Messages.List() {
		out.Messages.Remove(m.ID)
	}
}

// setupExecutor is the "setup_executor" node.
func (a *agent) setupExecutor(ctx context.Context, s State) (State, error) {
	step := currentStep(s)
	findings := formatFindings(s.Findings.Get())
	var out State
	removeAll(&out, s)
	out.Messages.Append(
		state.System(prompt.Render(a.cfg.prompts.Executor, "step", step, "findings", findings)),
		state.Human(prompt.Render(a.cfg.prompts.ExecutorTask, "step", step, "input", s.Input.Get())),
	)
	out.ExecutorCallCount = state.Set(0)
	graph.StreamWriter(ctx)(StepStarted{
		Iteration: s.IterationCount.Get(),
		Index:     s.CurrentStep.Get() + 1,
		Total:     len(s.Plan.Get()),
		Step:      step,
	})
	return out, nil
}

// execute is the "executor" node.
func (a *agent) execute(ctx context.Context, s State) (State, error) {
	var extra []llm.CallOption
	if len(a.defs) > 0 {
		extra = append(extra, llm.WithTools(a.defs))
	}
	resp, err := a.generate(ctx, s.Messages.List(), extra...)
	if err != nil {
		return State{}, fmt.Errorf("planexec: executor: %w", err)
	}
	return State{
		Messages:          state.Msgs(resp.Message),
		ExecutorCallCount: state.Set(s.ExecutorCallCount.Get() + 1),
	}, nil
}

// routeExecutor runs the tool calls of the executor's last message, one
// task per call, unless it has none or the executor made its last allowed
// call; then the step ends.
func (a *agent) routeExecutor(_ context.Context, s State) (graph.Route[State], error) {
	last, ok := s.Messages.Last()
	if !ok || last.Role != llms.ChatMessageTypeAI || len(last.ToolCalls()) == 0 ||
		s.ExecutorCallCount.Get() >= a.cfg.maxExecutorSteps {
		return graph.To[State](AggregateNode), nil
	}
	return graph.Route[State]{Sends: tools.SendCalls(last, ToolsNode, setMessages)}, nil
}

// aggregate is the "aggregate" node.
func (a *agent) aggregate(ctx context.Context, s State) (State, error) {
	var parts []string
	for _, m := range s.Messages.List() {
		isResult := m.Role == llms.ChatMessageTypeTool
		isAnswer := m.Role == llms.ChatMessageTypeAI && len(m.ToolCalls()) == 0
		if t := strings.TrimSpace(m.Text()); t != "" && (isResult || isAnswer) {
			parts = append(parts, t)
		}
	}
	text := NoResults
	if len(parts) > 0 {
		text = tools.Truncate(strings.Join(parts, "\n---\n"), a.cfg.maxFinding)
	}
	key := fmt.Sprintf("step_%d: %s", s.Findings.Len()+1, currentStep(s))

	var out State
	out.Findings.Put(key, text)
	out.CurrentStep = state.Set(s.CurrentStep.Get() + 1)
	removeAll(&out, s)
	graph.StreamWriter(ctx)(FindingRecorded{Key: key, Text: text})
	return out, nil
}

// refineAnswer is the refinery's answer.
type refineAnswer struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// refine is the "refinery" node.
func (a *agent) refine(ctx context.Context, s State) (State, error) {
	done, total := s.CurrentStep.Get(), len(s.Plan.Get())
	ev := DecisionMade{Decision: Finish}
	if s.IterationCount.Get() >= a.cfg.maxIterations {
		ev.Forced = true
		ev.Reason = fmt.Sprintf("reached the limit of %d iterations", a.cfg.maxIterations)
	} else {
		system := prompt.Render(a.cfg.prompts.Refine,
			"input", s.Input.Get(),
			"findings", formatFindings(s.Findings.Get()),
			"step", strconv.Itoa(done),
			"total", strconv.Itoa(total))
		resp, err := a.generate(ctx, conversation(s, system))
		if err != nil {
			return State{}, fmt.Errorf("planexec: refinery: %w", err)
		}
		ans, err := modeljson.Parse[refineAnswer](resp.Message.Text())
		ev.Decision = Decision(strings.ToUpper(strings.TrimSpace(ans.Decision)))
		ev.Reason = strings.TrimSpace(ans.Reason)
		if err != nil || (ev.Decision != Continue && ev.Decision != Finish) {
			ev.Fallback = true
			ev.Decision = Finish
			if done < total {
				ev.Decision = Continue
			}
			ev.Reason = fmt.Sprintf("the model's answer was not a usable decision; %d of %d steps done", done, total)
		}
	}
	graph.StreamWriter(ctx)(ev)
	return State{LoopDecision: state.Set(ev.Decision)}, nil
}

// shouldContinue routes after the refinery: to the synthesizer once the
// iteration limit is reached or the decision is not Continue, else back
// to the planner.
func (a *agent) shouldContinue(_ context.Context, s State) (string, error) {
	if s.IterationCount.Get() >= a.cfg.maxIterations || s.LoopDecision.Get() != Continue {
		return SynthesizerNode, nil
	}
	return PlannerNode, nil
}

// synthesize is the "synthesizer" node.
func (a *agent) synthesize(ctx context.Context, s State) (State, error) {
	system := prompt.Render(a.cfg.prompts.Synthesize, "input", s.Input.Get(), "findings", formatFindings(s.Findings.Get()))
	resp, err := a.generate(ctx, conversation(s, system))
	if err != nil {
		return State{}, fmt.Errorf("planexec: synthesizer: %w", err)
	}
	answer := strings.TrimSpace(resp.Message.Text())
	return State{
		Response:    state.Set(answer),
		ChatHistory: state.Msgs(state.AI(answer).WithID(resp.Message.ID)),
	}, nil
}

// formatFindings renders findings for the prompts: a section per step, in
// the order of their step numbers, or "(none yet)".
func formatFindings(findings map[string]string) string {
	if len(findings) == 0 {
		return "(none yet)"
	}
	keys := make([]string, 0, len(findings))
	for k := range findings {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		return cmp.Or(cmp.Compare(stepNumber(x), stepNumber(y)), strings.Compare(x, y))
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "### %s\n%s", k, findings[k])
	}
	return b.String()
}

// stepNumber returns N of a findings key "step_N: …", or 0.
func stepNumber(key string) int {
	rest, ok := strings.CutPrefix(key, "step_")
	if !ok {
		return 0
	}
	num, _, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0
	}
	return n
}
