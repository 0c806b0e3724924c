package codur

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/tools"
)

// Names of the nodes of the graph.
const (
	// TextualPrePlanNode recognises obvious tasks by their wording,
	// without a model.
	TextualPrePlanNode = "textual_pre_plan"
	// LLMPrePlanNode asks the planner model for a quick classification.
	LLMPrePlanNode = "llm_pre_plan"
	// LLMPlanNode asks the planner model for a full decision.
	LLMPlanNode = "llm_plan"
	// DelegateNode hands the task to the selected agent.
	DelegateNode = "delegate"
	// ExecuteNode runs the agent with its tool loop.
	ExecuteNode = "execute"
	// ToolNode runs the tool calls a planning phase asked for.
	ToolNode = "tool"
	// ReviewNode verifies the result and loops or ends.
	ReviewNode = "review"
)

// Defaults of the limits.
const (
	// DefaultMaxIterations bounds the reviews of a run.
	DefaultMaxIterations = 10
	// DefaultMaxToolRounds bounds the tool rounds of one execution.
	DefaultMaxToolRounds = 5
	// DefaultRecursionLimit bounds the supersteps of a run.
	DefaultRecursionLimit = 300
	// DefaultPrePlanConfidence is the confidence the quick classification
	// needs to act.
	DefaultPrePlanConfidence = 0.9
	// DefaultRepairBudget bounds the candidate programs the local repair
	// search runs per review.
	DefaultRepairBudget = 120
	// DefaultRepairTime bounds the local repair search of one review:
	// with the verification's runs, it bounds an iteration's time. (The
	// search also stops once three candidates have run over their time
	// limit.)
	DefaultRepairTime = 2 * time.Minute
	// DefaultAgent is the agent delegated to when neither the planner nor
	// the options name one.
	DefaultAgent = "llm:default"
)

// ErrNilModel is returned by [New] for a nil planner model.
var ErrNilModel = errors.New("codur: nil planner model")

// OptionError reports an option given an invalid value.
type OptionError struct {
	Option string
	Value  any
}

// Error implements error.
func (e *OptionError) Error() string {
	return fmt.Sprintf("codur: %s(%v): invalid value", e.Option, e.Value)
}

// Option configures [New].
type Option func(*config)

type config struct {
	defaultAgent  string
	maxIterations int
	maxToolRounds int
	recursion     int
	iterSet       bool // WithMaxIterations was given
	recursionSet  bool // WithRecursionLimit was given
	confidence    float64
	textCalls     bool
	extractCalls  bool
	pruning       PruningPolicy
	prompts       Prompts
	verifier      *Verifier
	repairs       []RepairPattern
	repairBudget  int
	repairTime    time.Duration
	dir           string
	callOpts      []llm.CallOption
	compileOpts   []graph.CompileOption
}

// WithDefaultAgent sets the agent delegated to when the planner names none
// or one that is not registered (default [DefaultAgent]).
func WithDefaultAgent(ref string) Option { return func(c *config) { c.defaultAgent = ref } }

// WithMaxIterations bounds the reviews of a run (default
// [DefaultMaxIterations]): the n-th failed verification ends the run.
// When no recursion limit is set, New raises the default one to what the
// iterations may need ([StepsPerIteration] each, plus one).
func WithMaxIterations(n int) Option {
	return func(c *config) { c.maxIterations, c.iterSet = n, true }
}

// WithMaxToolRounds bounds the tool rounds of one execution (default
// [DefaultMaxToolRounds]); the calls of the answer after the last round
// are not run.
func WithMaxToolRounds(n int) Option { return func(c *config) { c.maxToolRounds = n } }

// WithRecursionLimit sets the runs' recursion limit (default
// [DefaultRecursionLimit], or what the iterations need when more). An
// iteration through an agent takes [StepsPerIteration] supersteps, and a
// run needs a limit one above its supersteps: k iterations need 6k+1.
// When both this and [WithMaxIterations] are given and the limit is below
// what the iterations need, New fails with a [*LimitError].
func WithRecursionLimit(n int) Option {
	return func(c *config) { c.recursion, c.recursionSet = n, true }
}

// StepsPerIteration is the most supersteps one iteration takes (the six
// nodes from textual_pre_plan to review).
const StepsPerIteration = 6

// neededRecursion is the recursion limit iterations need.
func neededRecursion(iterations int) int { return StepsPerIteration*iterations + 1 }

// LimitError is returned by [New] when the recursion limit and the
// iteration limit, both set, do not fit: the run would stop with a
// recursion error before its last iteration.
type LimitError struct {
	// RecursionLimit and MaxIterations are the values given.
	RecursionLimit, MaxIterations int
	// Needed is the recursion limit MaxIterations needs.
	Needed int
}

// Error implements error.
func (e *LimitError) Error() string {
	return fmt.Sprintf("codur: recursion limit %d is too low for %d iterations: they may take %d supersteps (%d each, plus one); raise WithRecursionLimit to %d or leave it unset",
		e.RecursionLimit, e.MaxIterations, e.Needed-1, StepsPerIteration, e.Needed)
}

// DefaultAgentError is returned by [New] when the default agent (see
// [WithDefaultAgent]) is not in the registry.
type DefaultAgentError struct{ Ref string }

// Error implements error.
func (e *DefaultAgentError) Error() string {
	return fmt.Sprintf("codur: the default agent %q is not in the registry (register it, or choose another with WithDefaultAgent or default_agent:)", e.Ref)
}

// WithPrePlanConfidence sets the confidence the quick classification needs
// to act (default [DefaultPrePlanConfidence]); it never acts on tasks
// that change code.
func WithPrePlanConfidence(f float64) Option { return func(c *config) { c.confidence = f } }

// WithTextToolCalls turns the detection of tool calls written in agents'
// text on or off (default on).
func WithTextToolCalls(on bool) Option { return func(c *config) { c.textCalls = on } }

// WithToolCallExtraction makes the execute node ask the planner model for
// the tool calls of an agent's answer when none of the text formats
// matched but the answer names a tool (default off: it costs a model
// call). The calls found are reported with format [FormatExtracted].
func WithToolCallExtraction(on bool) Option { return func(c *config) { c.extractCalls = on } }

// WithPruning sets the message pruning policy (default [DefaultPruning]).
func WithPruning(p PruningPolicy) Option { return func(c *config) { c.pruning = p } }

// WithPrompts replaces prompts; empty fields keep the defaults.
func WithPrompts(p Prompts) Option { return func(c *config) { c.prompts = p } }

// WithVerifier makes the review verify fix tasks with v.
func WithVerifier(v *Verifier) Option { return func(c *config) { c.verifier = v } }

// WithRepairs sets the local repair patterns (default [DefaultRepairs]);
// none turns local repair off.
func WithRepairs(patterns ...RepairPattern) Option {
	return func(c *config) { c.repairs = slices.Clone(patterns) }
}

// WithRepairBudget bounds the candidate programs run per review (default
// [DefaultRepairBudget]); 0 turns local repair off.
func WithRepairBudget(n int) Option { return func(c *config) { c.repairBudget = n } }

// WithRepairTime bounds the time of the local repair search of one
// review (default [DefaultRepairTime]); the candidates not run by then
// are not.
func WithRepairTime(d time.Duration) Option { return func(c *config) { c.repairTime = d } }

// WithWorkspace sets the directory CLI agents run in (default: the
// verifier's directory).
func WithWorkspace(dir string) Option { return func(c *config) { c.dir = dir } }

// WithCallOptions adds options to the planner's model calls.
func WithCallOptions(opts ...llm.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

// WithCompileOptions adds options to the compilation (checkpointer, hooks,
// middleware through graph options …); they apply after Codur's own.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// New returns the compiled Codur graph: planner is the model of the two
// LLM planning phases, reg the agents it can delegate to, ts the tools of
// the tool node and of the agents' tool loops. See the package
// documentation for the flow.
//
// It fails with [ErrNilModel], an [*OptionError], a [*LimitError], a
// [*DefaultAgentError] when the default agent is not registered, or the
// error of tools.NewSet when two tools share a name.
func New(planner llm.Model, reg *Registry, ts []tools.Tool, opts ...Option) (*graph.Graph[State], error) {
	if planner == nil {
		return nil, ErrNilModel
	}
	cfg := config{
		defaultAgent:  DefaultAgent,
		maxIterations: DefaultMaxIterations,
		maxToolRounds: DefaultMaxToolRounds,
		recursion:     DefaultRecursionLimit,
		confidence:    DefaultPrePlanConfidence,
		textCalls:     true,
		repairs:       DefaultRepairs(),
		repairBudget:  DefaultRepairBudget,
		repairTime:    DefaultRepairTime,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case cfg.maxIterations < 1:
		return nil, &OptionError{"WithMaxIterations", cfg.maxIterations}
	case cfg.maxToolRounds < 1:
		return nil, &OptionError{"WithMaxToolRounds", cfg.maxToolRounds}
	case cfg.recursion < 1:
		return nil, &OptionError{"WithRecursionLimit", cfg.recursion}
	case cfg.confidence <= 0 || cfg.confidence > 1:
		return nil, &OptionError{"WithPrePlanConfidence", cfg.confidence}
	case cfg.repairBudget < 0:
		return nil, &OptionError{"WithRepairBudget", cfg.repairBudget}
	case cfg.repairTime <= 0:
		return nil, &OptionError{"WithRepairTime", cfg.repairTime}
	}
	if need := neededRecursion(cfg.maxIterations); cfg.recursion < need {
		if cfg.recursionSet && cfg.iterSet {
			return nil, &LimitError{RecursionLimit: cfg.recursion, MaxIterations: cfg.maxIterations, Needed: need}
		}
		if !cfg.recursionSet {
			cfg.recursion = need
		}
	}
	if reg == nil {
		reg = NewRegistry()
	}
	if cfg.verifier != nil {
		if cfg.dir == "" {
			cfg.dir = cfg.verifier.Dir
		}
		// The expected outputs as they are now are the ones that count:
		// an agent's edit of them is put back by every review.
		if err := cfg.verifier.Snapshot(); err != nil {
			return nil, err
		}
	}
	cfg.prompts = cfg.prompts.withDefaults()
	set, err := tools.NewSet(ts...)
	if err != nil {
		return nil, fmt.Errorf("codur: %w", err)
	}
	if _, ok := reg.Get(cfg.defaultAgent); !ok {
		return nil, &DefaultAgentError{Ref: cfg.defaultAgent}
	}
	a := &agent{planner: planner, reg: reg, set: set, tools: set.Tools(), cfg: cfg, detect: NewDetector(set.Tools())}
	a.defs = tools.Definitions(a.tools...)

	b := graph.New[State]()
	b.AddNode(TextualPrePlanNode, a.textualPrePlan)
	b.AddNode(LLMPrePlanNode, a.llmPrePlan)
	b.AddNode(LLMPlanNode, a.llmPlan)
	b.AddNode(DelegateNode, a.delegate)
	b.AddNode(ExecuteNode, a.execute)
	b.AddNode(ToolNode, a.runTools)
	b.AddNode(ReviewNode, a.review)
	b.AddEdge(graph.Start, TextualPrePlanNode)
	b.AddConditionalEdges(TextualPrePlanNode, route(LLMPrePlanNode), graph.WithDestinations(LLMPrePlanNode, DelegateNode, ToolNode, graph.End))
	b.AddConditionalEdges(LLMPrePlanNode, route(LLMPlanNode), graph.WithDestinations(LLMPlanNode, DelegateNode, ToolNode, graph.End))
	b.AddConditionalEdges(LLMPlanNode, route(graph.End), graph.WithDestinations(DelegateNode, ToolNode, graph.End))
	b.AddEdge(DelegateNode, ExecuteNode)
	b.AddEdge(ExecuteNode, ReviewNode)
	b.AddEdge(ToolNode, ReviewNode)
	b.AddConditionalEdges(ReviewNode, route(TextualPrePlanNode), graph.WithDestinations(TextualPrePlanNode, graph.End))

	copts := []graph.CompileOption{
		graph.WithName("codur"),
		graph.WithRunDefaults(graph.WithRecursionLimit(cfg.recursion)),
	}
	g, err := b.Compile(append(copts, cfg.compileOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("codur: %w", err)
	}
	return g, nil
}

// route routes on NextAction; ActionContinue goes to next.
func route(next string) graph.RouterFunc[State] {
	return func(_ context.Context, s State) (string, error) {
		switch s.NextAction.Get() {
		case ActionDelegate:
			return DelegateNode, nil
		case ActionTool:
			return ToolNode, nil
		case ActionEnd:
			return graph.End, nil
		}
		return next, nil
	}
}
