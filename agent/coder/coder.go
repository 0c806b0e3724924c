package coder

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/agent/middleware"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/tools"
)

// Names of the nodes of the coder graph. A custom intent's node is named
// after the intent.
const (
	RouteNode      = "route"
	ProfileNode    = "profile"
	PlanReadNode   = "plan_read"
	ReadNode       = "read"
	EditNode       = "edit"
	TestNode       = "test"
	RunCommandNode = "run_command"
)

// Defaults of the agent's limits.
const (
	// DefaultMaxPromptChars bounds the text of a prompt.
	DefaultMaxPromptChars = 50_000
	// DefaultHistoryLimit is the number of question/answer pairs the
	// session keeps.
	DefaultHistoryLimit = 10
	// DefaultFileCacheSize is the number of files the session's cache
	// keeps.
	DefaultFileCacheSize = 50
	// DefaultMaxAttempts is the number of edit attempts of the auto-fix
	// loop.
	DefaultMaxAttempts = 3
	// DefaultMaxNodeRetries is how many times in all a failing node runs
	// before the request ends with an error answer.
	DefaultMaxNodeRetries = 3
	// DefaultMaxFiles is the number of files plan_read picks.
	DefaultMaxFiles = 5
	// DefaultCommandTimeout bounds a command of run_command.
	DefaultCommandTimeout = 60 * time.Second
	// DefaultPreferenceRecall is how many preferences semantic recall
	// returns.
	DefaultPreferenceRecall = 5
	// differentApproachAfter is the number of failed attempts after which
	// the edit prompt asks for a different approach.
	differentApproachAfter = 2
)

// Option configures [New].
type Option func(*config)

type config struct {
	st              store.Store
	saver           checkpoint.Saver
	prefix          []string
	intents         []IntentDef
	patterns        []Pattern
	minConfidence   float64
	maxAttempts     int
	maxNodeRetries  int
	maxPromptChars  int
	historyLimit    int
	fileCacheSize   int
	queryCacheSize  int
	logLimit        int
	maxFiles        int
	recall          int
	commandTimeout  time.Duration
	testTimeout     time.Duration
	autoFix         bool
	toolOpts        []tools.Option
	prompts         Prompts
	callOpts        []llm.CallOption
	compileOpts     []graph.CompileOption
	modelName       string
	customProblems  []string
	middleware      []graph.Middleware[State]
	defaultPatterns bool
}

// WithStore keeps the persistent memory in st (default: a new
// store.Memory, which lasts as long as the process). The package opens no
// database itself: the program opens the store (store/sqlite, say) and
// imports its driver.
func WithStore(st store.Store) Option { return func(c *config) { c.st = st } }

// WithCheckpointer keeps the session memory of each thread in s
// (default: a new checkpoint.Memory, which lasts as long as the process).
func WithCheckpointer(s checkpoint.Saver) Option { return func(c *config) { c.saver = s } }

// WithNamespace sets the namespace prefix of the persistent memory in the
// store (default ["coder"]).
func WithNamespace(labels ...string) Option {
	return func(c *config) { c.prefix = append([]string(nil), labels...) }
}

// WithIntent registers a new intent: its node, its route entry and its
// patterns (see [IntentDef] and the package documentation).
func WithIntent(def IntentDef) Option {
	return func(c *config) { c.intents = append(c.intents, def) }
}

// WithPatterns adds fast-path patterns, for any registered intent, after
// the built-in ones.
func WithPatterns(ps ...Pattern) Option {
	return func(c *config) { c.patterns = append(c.patterns, ps...) }
}

// WithoutDefaultPatterns drops the built-in patterns: only those of
// WithPatterns and of WithIntent's definitions route without the model.
func WithoutDefaultPatterns() Option { return func(c *config) { c.defaultPatterns = false } }

// WithMinConfidence sets the confidence a pattern needs to decide without
// the model (default DefaultMinConfidence). 0 lets any match decide; a
// value above 1 sends every request to the model.
func WithMinConfidence(f float64) Option { return func(c *config) { c.minConfidence = f } }

// WithMaxAttempts sets the number of edit attempts of the auto-fix loop
// (default 3).
func WithMaxAttempts(n int) Option { return positive(n, func(c *config) { c.maxAttempts = n }) }

// WithMaxNodeRetries sets how many times in all a failing node runs
// before the request ends with an error answer (default 3).
func WithMaxNodeRetries(n int) Option { return positive(n, func(c *config) { c.maxNodeRetries = n }) }

// WithMaxPromptChars bounds each prompt's text (default 50,000
// characters); file contents are cut first, keeping their beginning.
func WithMaxPromptChars(n int) Option { return positive(n, func(c *config) { c.maxPromptChars = n }) }

// WithHistoryLimit sets the number of question/answer pairs the session
// keeps and the read prompt includes (default 10).
func WithHistoryLimit(n int) Option { return positive(n, func(c *config) { c.historyLimit = n }) }

// WithFileCacheSize sets the number of files the session's content cache
// keeps, evicting the oldest first (default 50).
func WithFileCacheSize(n int) Option { return positive(n, func(c *config) { c.fileCacheSize = n }) }

// WithQueryCacheSize sets the number of answers the persistent query
// cache keeps, evicting the oldest first (default 200).
func WithQueryCacheSize(n int) Option { return positive(n, func(c *config) { c.queryCacheSize = n }) }

// WithLogLimit sets the number of entries the node log and the memory log
// keep, evicting the oldest first (default 1,000).
func WithLogLimit(n int) Option { return positive(n, func(c *config) { c.logLimit = n }) }

// WithMaxFiles sets the number of files plan_read picks (default 5).
func WithMaxFiles(n int) Option { return positive(n, func(c *config) { c.maxFiles = n }) }

// WithPreferenceRecall sets how many preferences a semantic recall
// returns (default 5); a store without an index returns them all.
func WithPreferenceRecall(n int) Option { return positive(n, func(c *config) { c.recall = n }) }

// WithCommandTimeout bounds each command of run_command (default 60 s).
func WithCommandTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.commandTimeout = d
		}
	}
}

// WithTestTimeout bounds each test run of the auto-fix loop (default:
// the goals' default, 10 minutes).
func WithTestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.testTimeout = d
		}
	}
}

// WithAutoFix turns the auto-fix loop on (the default) or off: without
// it, an edit ends the request without running the tests.
func WithAutoFix(on bool) Option { return func(c *config) { c.autoFix = on } }

// WithToolOptions passes options to the tools the agent uses
// (tools.WithSandbox, tools.WithOutputLimit, …).
func WithToolOptions(opts ...tools.Option) Option {
	return func(c *config) { c.toolOpts = append(c.toolOpts, opts...) }
}

// WithPrompts replaces the agent's prompts; empty fields keep the
// defaults.
func WithPrompts(p Prompts) Option { return func(c *config) { c.prompts = p } }

// WithCallOptions adds options to every model call.
func WithCallOptions(opts ...llm.CallOption) Option {
	return func(c *config) { c.callOpts = append(c.callOpts, opts...) }
}

// WithCompileOptions adds options to the graph's compilation, after the
// agent's own.
func WithCompileOptions(opts ...graph.CompileOption) Option {
	return func(c *config) { c.compileOpts = append(c.compileOpts, opts...) }
}

// WithNodeMiddleware wraps every node of the graph in mw, inside the
// agent's own error handling and node log (see graph.Builder.Use).
func WithNodeMiddleware(mw ...graph.Middleware[State]) Option {
	return func(c *config) { c.middleware = append(c.middleware, mw...) }
}

// WithModelName names the model in events.ModelCall events.
func WithModelName(name string) Option { return func(c *config) { c.modelName = name } }

func positive(n int, set func(*config)) Option {
	return func(c *config) {
		if n > 0 {
			set(c)
		}
	}
}

// Agent is the intent-routed coding agent on one workspace. It is safe
// for concurrent use by requests on different threads.
type Agent struct {
	model   llm.Model
	ws      *tools.Workspace
	cfg     config
	mem     *Memory
	g       *graph.Graph[State]
	intents []IntentDef // built-in then custom, in registration order
	byName  map[Intent]IntentDef
	pats    []Pattern

	fileRead, filePatch, fileWrite, bash tools.Tool

	goalMu sync.Mutex
	goals  map[string]goals.Goal // by name and AllowTestEdits (see testGoalOf); nil for a goal that is not a test goal
}

// New returns the agent for the workspace directory dir, on model. It
// fails for a dir that is not a directory, a nil model, or an invalid
// intent definition (an empty or reserved name, one registered twice).
func New(model llm.Model, dir string, opts ...Option) (*Agent, error) {
	if model == nil {
		return nil, errors.New("coder: nil model")
	}
	cfg := config{
		prefix:          []string{"coder"},
		minConfidence:   DefaultMinConfidence,
		maxAttempts:     DefaultMaxAttempts,
		maxNodeRetries:  DefaultMaxNodeRetries,
		maxPromptChars:  DefaultMaxPromptChars,
		historyLimit:    DefaultHistoryLimit,
		fileCacheSize:   DefaultFileCacheSize,
		queryCacheSize:  DefaultQueryCacheSize,
		logLimit:        DefaultLogLimit,
		maxFiles:        DefaultMaxFiles,
		recall:          DefaultPreferenceRecall,
		commandTimeout:  DefaultCommandTimeout,
		autoFix:         true,
		defaultPatterns: true,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.prompts = cfg.prompts.withDefaults()
	if cfg.st == nil {
		cfg.st = store.NewMemory()
	}
	if cfg.saver == nil {
		cfg.saver = checkpoint.NewMemory()
	}
	if err := store.ValidateNamespace(cfg.prefix); err != nil {
		return nil, fmt.Errorf("coder: namespace: %w", err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		return nil, fmt.Errorf("coder: %w", err)
	}
	a := &Agent{model: model, ws: ws, cfg: cfg, byName: map[Intent]IntentDef{}, goals: map[string]goals.Goal{}}
	a.mem = newMemory(cfg.st, cfg.prefix, cfg.logLimit, cfg.queryCacheSize)
	topts := append([]tools.Option{tools.WithTimeout(cfg.commandTimeout), tools.WithMaxTimeout(cfg.commandTimeout)}, cfg.toolOpts...)
	a.fileRead = tools.FileRead(ws, topts...)
	a.filePatch = tools.FilePatch(ws, topts...)
	a.fileWrite = tools.FileWrite(ws, topts...)
	a.bash = tools.BashExec(ws, topts...)

	if err := a.register(); err != nil {
		return nil, err
	}
	g, err := a.build()
	if err != nil {
		return nil, err
	}
	a.g = g
	return a, nil
}

// reservedNames are the names a custom intent may not take.
var reservedNames = map[string]bool{RouteNode: true, ProfileNode: true, PlanReadNode: true, ReadNode: true,
	EditNode: true, TestNode: true, RunCommandNode: true, routeDone: true, graph.Start: true, graph.End: true}

// register builds the intent registry and the pattern list.
func (a *Agent) register() error {
	builtins := Builtins()
	for _, d := range builtins {
		a.byName[d.Intent] = d
		a.intents = append(a.intents, d)
		if a.cfg.defaultPatterns {
			a.pats = append(a.pats, d.Patterns...)
		}
	}
	var problems []string
	for _, d := range a.cfg.intents {
		name := string(d.Intent)
		switch {
		case strings.TrimSpace(name) == "" || strings.ContainsAny(name, "|: \t\n"):
			problems = append(problems, fmt.Sprintf("intent %q: invalid name", name))
			continue
		case reservedNames[name]:
			problems = append(problems, fmt.Sprintf("intent %q: the name is reserved", name))
			continue
		case a.byName[d.Intent].Intent != "":
			problems = append(problems, fmt.Sprintf("intent %q: registered twice", name))
			continue
		case d.Run == nil:
			problems = append(problems, fmt.Sprintf("intent %q: nil Run", name))
			continue
		}
		a.byName[d.Intent] = d
		a.intents = append(a.intents, d)
		for _, p := range d.Patterns {
			p.Intent = d.Intent
			a.pats = append(a.pats, p)
		}
	}
	for _, p := range a.cfg.patterns {
		if _, ok := a.byName[p.Intent]; !ok {
			problems = append(problems, fmt.Sprintf("pattern %q: unknown intent %q", p.Name, p.Intent))
			continue
		}
		if p.Regexp == nil {
			problems = append(problems, fmt.Sprintf("pattern %q: nil Regexp", p.Name))
			continue
		}
		a.pats = append(a.pats, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("coder: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Route keys of the graph's conditional edges besides the intents.
const (
	routeDone  = "done"
	routeRead  = "read"
	routeTest  = "test"
	routeRetry = "retry"
)

// build compiles the graph.
func (a *Agent) build() (*graph.Graph[State], error) {
	b := graph.New[State]()
	b.Use(a.handleErrors(), a.logNodes)
	b.Use(a.cfg.middleware...)
	b.AddNode(RouteNode, a.route)
	b.AddNode(ProfileNode, a.profile)
	b.AddNode(PlanReadNode, a.planRead)
	b.AddNode(ReadNode, a.read)
	b.AddNode(EditNode, a.edit)
	b.AddNode(TestNode, a.test)
	b.AddNode(RunCommandNode, a.runCommand)

	routes := map[string]string{
		string(IntentRead):       PlanReadNode,
		string(IntentEdit):       EditNode,
		string(IntentRunCommand): RunCommandNode,
		string(IntentProfile):    ProfileNode,
		routeDone:                graph.End,
	}
	for _, d := range a.intents {
		if d.Run == nil {
			continue // built-in
		}
		name := string(d.Intent)
		b.AddNode(name, a.custom(d))
		b.AddEdge(name, graph.End)
		routes[name] = name
	}
	b.AddEdge(graph.Start, RouteNode)
	b.AddConditionalEdges(RouteNode, routeByIntent, graph.WithPathMap(routes))
	b.AddConditionalEdges(PlanReadNode, afterPlanRead, graph.WithPathMap(map[string]string{
		routeRead: ReadNode, routeDone: graph.End}))
	b.AddEdge(ReadNode, graph.End)
	b.AddEdge(ProfileNode, graph.End)
	b.AddEdge(RunCommandNode, graph.End)
	b.AddConditionalEdges(EditNode, afterEdit, graph.WithPathMap(map[string]string{
		routeTest: TestNode, routeRetry: EditNode, routeDone: graph.End}))
	b.AddConditionalEdges(TestNode, afterTest, graph.WithPathMap(map[string]string{
		routeRetry: EditNode, routeDone: graph.End}))

	copts := []graph.CompileOption{graph.WithName("coder"), graph.WithCheckpointer(a.cfg.saver),
		graph.WithRunDefaults(graph.WithMaxConcurrency(1))}
	g, err := b.Compile(append(copts, a.cfg.compileOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("coder: %w", err)
	}
	return g, nil
}

func routeByIntent(_ context.Context, s State) (string, error) {
	if s.Halted.Get() || s.Outcome.Get() != "" {
		return routeDone, nil
	}
	return string(s.Route.Get().Intent), nil
}

func afterPlanRead(_ context.Context, s State) (string, error) {
	if s.Halted.Get() || s.Outcome.Get() != "" {
		return routeDone, nil
	}
	return routeRead, nil
}

func afterEdit(_ context.Context, s State) (string, error) {
	if s.Halted.Get() || s.Outcome.Get() != "" {
		return routeDone, nil
	}
	if anyApplied(s.Edits.Get()) {
		return routeTest, nil
	}
	return routeRetry, nil
}

func afterTest(_ context.Context, s State) (string, error) {
	if s.Halted.Get() || s.Outcome.Get() != "" {
		return routeDone, nil
	}
	return routeRetry, nil
}

func anyApplied(edits []EditResult) bool {
	for _, e := range edits {
		if e.Applied {
			return true
		}
	}
	return false
}

// Graph returns the compiled graph, to stream, inspect or render it.
func (a *Agent) Graph() *graph.Graph[State] { return a.g }

// Memory returns the agent's persistent memory.
func (a *Agent) Memory() *Memory { return a.mem }

// Workspace returns the workspace's root directory (absolute, symlinks
// resolved).
func (a *Agent) Workspace() string { return a.ws.Root() }

// Patterns returns the fast-path patterns in the order they are tried.
func (a *Agent) Patterns() []Pattern { return append([]Pattern(nil), a.pats...) }

// Intents returns the registered intents: the built-in ones, then those
// of WithIntent.
func (a *Agent) Intents() []IntentDef { return append([]IntentDef(nil), a.intents...) }

// Input returns the input of a request on thread: the request, with the
// working memory reset and the thread's turn counted. It reads the
// thread's last checkpoint.
func (a *Agent) Input(ctx context.Context, thread, request string) (State, error) {
	snap, err := a.g.GetState(ctx, graph.WithThread(thread))
	if err != nil {
		return State{}, fmt.Errorf("coder: thread %s: %w", thread, err)
	}
	in := RequestStart(snap.Values.Turn.Get() + 1)
	in.Thread.Set(thread)
	in.Request.Set(request)
	return in, nil
}

// Ask runs one request on the conversation thread and returns its result.
// A request that fails in a node is answered with an error message
// (Result.Outcome is OutcomeError); Ask returns an error only when the run
// itself fails: a cancelled ctx, the checkpointer, an empty thread.
func (a *Agent) Ask(ctx context.Context, thread, request string) (Result, error) {
	if thread == "" {
		return Result{}, errors.New("coder: empty thread")
	}
	in, err := a.Input(ctx, thread, request)
	if err != nil {
		return Result{}, err
	}
	out, err := a.g.Invoke(ctx, in, graph.WithThread(thread))
	if err != nil {
		return Result{}, fmt.Errorf("coder: %w", err)
	}
	return ResultOf(out), nil
}

// Stream runs one request on thread like Ask and yields the run's events
// in the modes events.Bridge reads (events.StreamModes); [Agent.Last]
// returns its result afterwards.
func (a *Agent) Stream(ctx context.Context, thread, request string) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		if thread == "" {
			yield(graph.Event{}, errors.New("coder: empty thread"))
			return
		}
		in, err := a.Input(ctx, thread, request)
		if err != nil {
			yield(graph.Event{}, err)
			return
		}
		for ev, err := range a.g.Stream(ctx, in, graph.WithThread(thread), graph.WithStreamModes(events.StreamModes)) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Last returns the result of the last request on thread.
func (a *Agent) Last(ctx context.Context, thread string) (Result, error) {
	snap, err := a.g.GetState(ctx, graph.WithThread(thread))
	if err != nil {
		return Result{}, fmt.Errorf("coder: thread %s: %w", thread, err)
	}
	return ResultOf(snap.Values), nil
}

// Result is the outcome of a request.
type Result struct {
	// Request is the request and Route the route node's decision.
	Request string
	Route   Decision
	// Answer is what the agent tells the user.
	Answer string
	// Outcome classifies the end (see the Outcome… constants).
	Outcome string
	// Cached reports an answer from the query cache.
	Cached bool
	// Files are the files the request worked on.
	Files []string
	// Edits are the edits of the last attempt; Attempts the number of
	// edit attempts; Tests the last test run (nil if none).
	Edits    []EditResult
	Attempts int
	Tests    *TestOutcome
	// Working is the request's working memory at its end.
	Working middleware.WorkingMemory
}

// ResultOf returns the result of the request whose final state is s.
func ResultOf(s State) Result {
	return Result{
		Request:  s.Request.Get(),
		Route:    s.Route.Get(),
		Answer:   s.Answer.Get(),
		Outcome:  s.Outcome.Get(),
		Cached:   s.Cached.Get(),
		Files:    s.Files.Get(),
		Edits:    s.Edits.Get(),
		Attempts: s.Attempt.Get(),
		Tests:    s.Tests.Get(),
		Working:  s.Memory.Get(),
	}
}
