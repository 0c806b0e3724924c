package runs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentgraph/agentgraph/agent/retrai"
	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/postgres"
	"github.com/agentgraph/agentgraph/checkpoint/sqlite"
	"github.com/agentgraph/agentgraph/events"
	"github.com/agentgraph/agentgraph/examples/internal/sandboxnote"
	"github.com/agentgraph/agentgraph/goals"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools"
)

// Options configures [Open].
type Options struct {
	// DB is where runs and checkpoints are kept: a SQLite file (created
	// with its directory if needed) or a postgres:// (postgresql://) URL.
	// Empty: DefaultDB().
	DB string
	// Models builds a run's model from its spec. Default: llm.New.
	Models func(ctx context.Context, spec string) (llm.Model, error)
	// Bus receives the events of every run. Default: a new bus, closed by
	// Close.
	Bus *events.Bus
	// Tools builds the agent's tools for a project directory. Default:
	// the coding tools of package tools (see retrai.WithTools).
	Tools func(cwd string) ([]tools.Tool, error)
	// AgentOptions are passed to retrai.New after the manager's own
	// (hooks, call options, limits, …).
	AgentOptions []retrai.Option
	// LeaseTTL is how long the lease a run holds on its checkpoint thread
	// lasts without renewal (see graph.WithLeaseTTL): how long a run whose
	// process died still counts as live before it can be resumed. Zero:
	// graph.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Sandbox is how the agent's commands, tests and goal checks are
	// confined (tools.WithSandbox): auto (the zero value) runs them in the
	// sandbox where the machine has one and unconfined, with an
	// events.SandboxWarning at the start of every execution, where it has
	// none; required refuses them there. It applies to the default tools
	// (not to Tools) and to the test goals' runs.
	Sandbox tools.SandboxMode
	// AllowConfigEndpoint lets the model of a project's .retrai.yml name
	// its endpoint (a base URL); without it Create refuses such a model
	// with ErrConfigEndpoint. A model given in Config is never refused.
	AllowConfigEndpoint bool
}

// DefaultDB returns the default database file: ~/.retrai/retrai.db, or
// retrai/retrai.db in the temporary directory when there is no home
// directory.
func DefaultDB() string {
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".retrai", "retrai.db")
	}
	return filepath.Join(os.TempDir(), "retrai", "retrai.db")
}

// IsPostgresURL reports whether db names a PostgreSQL database rather than
// a SQLite file.
func IsPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Manager creates, runs, resumes and tracks runs. It is safe for concurrent
// use; several runs may execute at once, each at most once at a time.
type Manager struct {
	db        string
	store     *store
	saver     checkpoint.Saver
	leaser    checkpoint.Leaser // the saver's leases; nil if it has none
	leaseTTL  time.Duration
	allowEP   bool
	sandbox   tools.SandboxMode
	closeSave func() error
	bus       *events.Bus
	ownBus    bool
	models    func(ctx context.Context, spec string) (llm.Model, error)
	tools     func(cwd string) ([]tools.Tool, error)
	agentOpts []retrai.Option

	mu     sync.Mutex
	closed bool
	active map[string]*execution
	wg     sync.WaitGroup
}

// execution is a run executing (or being prepared) in this manager.
type execution struct {
	cancel context.CancelFunc // nil while preparing
	done   chan struct{}
}

// Open opens the database of opts.DB (creating its tables) and returns a
// Manager. Close it when done.
func Open(ctx context.Context, opts Options) (*Manager, error) {
	m := &Manager{
		db:        opts.DB,
		models:    opts.Models,
		tools:     opts.Tools,
		agentOpts: opts.AgentOptions,
		bus:       opts.Bus,
		leaseTTL:  opts.LeaseTTL,
		allowEP:   opts.AllowConfigEndpoint,
		sandbox:   opts.Sandbox,
		active:    map[string]*execution{},
	}
	if m.leaseTTL <= 0 {
		m.leaseTTL = graph.DefaultLeaseTTL
	}
	if m.models == nil {
		m.models = func(ctx context.Context, spec string) (llm.Model, error) { return llm.New(ctx, spec) }
	}
	if m.db == "" {
		m.db = DefaultDB()
		if err := os.MkdirAll(filepath.Dir(m.db), 0o755); err != nil {
			m.db = filepath.Join(os.TempDir(), "retrai", "retrai.db")
		}
	}
	if IsPostgresURL(m.db) {
		s, err := postgres.Open(ctx, m.db)
		if err != nil {
			return nil, fmt.Errorf("runs: open checkpoints: %w", err)
		}
		m.saver, m.closeSave = s, s.Close
		if m.store, err = openPostgresStore(ctx, m.db); err != nil {
			s.Close()
			return nil, fmt.Errorf("runs: open runs table: %w", err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(m.db), 0o755); err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		s, err := sqlite.Open(ctx, m.db)
		if err != nil {
			return nil, fmt.Errorf("runs: open checkpoints: %w", err)
		}
		m.saver, m.closeSave = s, s.Close
		if m.store, err = openSQLiteStore(ctx, m.db); err != nil {
			s.Close()
			return nil, fmt.Errorf("runs: open runs table %s: %w", m.db, err)
		}
	}
	m.leaser, _ = m.saver.(checkpoint.Leaser)
	if m.bus == nil {
		m.bus, m.ownBus = events.NewBus(), true
	}
	return m, nil
}

// DB returns the database the manager uses (a file path or a URL).
func (m *Manager) DB() string { return m.db }

// Bus returns the bus on which the events of every run are published.
func (m *Manager) Bus() *events.Bus { return m.bus }

// Close interrupts the runs executing in this manager (they become
// StatusInterrupted and can be resumed later), waits for them to stop, and
// closes the database and, if the manager created it, the bus.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, ex := range m.active {
		if ex.cancel != nil {
			ex.cancel()
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
	err := errors.Join(m.store.close(), m.closeSave())
	if m.ownBus {
		m.bus.Close()
	}
	return err
}

// Create validates cfg and records a new pending run. Unset fields come
// from the project's .retrai.yml, then from defaults: the goal is detected
// from the project, the iteration limit is retrai.DefaultMaxIterations. It
// fails with ErrNoModel when no model is given either way, with
// ErrConfigEndpoint when the model of .retrai.yml names its endpoint (see
// Options.AllowConfigEndpoint), and when the goal or the model cannot be
// built. A negative MaxIterations is an error.
func (m *Manager) Create(ctx context.Context, cfg Config) (Run, error) {
	if cfg.Cwd == "" {
		cfg.Cwd = "."
	}
	cwd, err := filepath.Abs(cfg.Cwd)
	if err != nil {
		return Run{}, fmt.Errorf("runs: create: %w", err)
	}
	if fi, err := os.Stat(cwd); err != nil {
		return Run{}, fmt.Errorf("runs: create: %w", err)
	} else if !fi.IsDir() {
		return Run{}, fmt.Errorf("runs: create: %s is not a directory", cwd)
	}
	cfg.Cwd = cwd
	if cfg.MaxIterations < 0 {
		return Run{}, fmt.Errorf("runs: create: the iteration limit must be positive, not %d", cfg.MaxIterations)
	}
	fileCfg, err := loadConfig(cwd)
	if err != nil {
		return Run{}, fmt.Errorf("runs: create: %w", err)
	}
	if cfg.Model == "" {
		cfg.Model = strings.TrimSpace(fileCfg.Model)
		if ep, ok := ModelEndpoint(cfg.Model); ok && !m.allowEP {
			return Run{}, fmt.Errorf("runs: create: %s sets model %q, which would send the model's API key and your code to %s: %w",
				filepath.Join(cwd, goals.ConfigFile), cfg.Model, ep, ErrConfigEndpoint)
		}
	}
	if cfg.Model == "" {
		return Run{}, fmt.Errorf("runs: create: %w (set Config.Model or model in %s)", ErrNoModel, goals.ConfigFile)
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = fileCfg.MaxIterations
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = retrai.DefaultMaxIterations
	}
	cfg.HITL = cfg.HITL || fileCfg.HITLEnabled
	if cfg.Goal == "" {
		name, _, err := goals.Detect(cwd)
		if err != nil {
			return Run{}, fmt.Errorf("runs: create: %w", err)
		}
		cfg.Goal = name
	}
	if _, err := goals.New(cfg.Goal, fileCfg); err != nil {
		return Run{}, fmt.Errorf("runs: create: %w", err)
	}
	if _, err := m.models(ctx, cfg.Model); err != nil {
		return Run{}, fmt.Errorf("runs: create: model %s: %w", cfg.Model, err)
	}
	t := now()
	run := Run{ID: state.NewID(), Config: cfg, Status: StatusPending, CreatedAt: t, UpdatedAt: t}
	if err := m.store.put(ctx, run); err != nil {
		return Run{}, fmt.Errorf("runs: create: %w", err)
	}
	return run, nil
}

// ModelEndpoint returns the endpoint a model spec names, such as
// "http://host/v1" in "openai:gpt-4o@http://host/v1", and whether it names
// one.
func ModelEndpoint(spec string) (string, bool) {
	i := strings.Index(spec, "://")
	if i < 0 {
		return "", false
	}
	return spec[strings.LastIndexAny(spec[:i], "@:")+1:], true
}

// Get returns the run id (an error wrapping ErrNotFound if there is none).
// A run recorded running that nothing executes any more — no Manager of
// this process, and no process holding its thread's lease: the process
// died — is returned as StatusInterrupted.
func (m *Manager) Get(ctx context.Context, id string) (Run, error) {
	r, _, err := m.Inspect(ctx, id)
	return r, err
}

// Inspect is Get, and also returns, for a run recorded running that
// another process (or another Manager) executes, the *LiveError that says
// which — found by the same lease check; nil for any other run.
func (m *Manager) Inspect(ctx context.Context, id string) (Run, *LiveError, error) {
	r, err := m.store.get(ctx, id)
	if err != nil {
		return Run{}, nil, fmt.Errorf("runs: %w", err)
	}
	r, live := m.view(ctx, r)
	return r, live, nil
}

// List returns every run, newest first, with the statuses Get returns.
func (m *Manager) List(ctx context.Context) ([]Run, error) {
	rs, _, err := m.InspectAll(ctx)
	return rs, err
}

// InspectAll is List, and also returns the *LiveError of each run, as
// Inspect does: live[i] is that of run i.
func (m *Manager) InspectAll(ctx context.Context) (rs []Run, live []*LiveError, err error) {
	rs, err = m.store.list(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("runs: %w", err)
	}
	live = make([]*LiveError, len(rs))
	for i := range rs {
		rs[i], live[i] = m.view(ctx, rs[i])
	}
	return rs, live, nil
}

// view returns the record r as Get reports it: a run recorded running
// whose thread's lease nobody holds is interrupted. For a run recorded
// running whose lease another process holds, it returns the *LiveError.
func (m *Manager) view(ctx context.Context, r Run) (Run, *LiveError) {
	if r.Status != StatusRunning || m.leaser == nil {
		return r, nil
	}
	err := m.CheckIdle(ctx, r.ID)
	if err == nil {
		r.Status = StatusInterrupted
	}
	live, _ := errors.AsType[*LiveError](err)
	return r, live
}

// Executing reports whether the run id executes in this manager.
func (m *Manager) Executing(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.active[id]
	return ok
}

// CheckIdle returns nil when the run id is not executing anywhere; an error
// wrapping ErrBusy when it executes in this manager; and a *LiveError when
// it executes elsewhere — another process, or another Manager — which holds
// its thread's lease. Without leases (a checkpointer that has none) it can
// only tell the runs of this manager.
func (m *Manager) CheckIdle(ctx context.Context, id string) error {
	if m.Executing(id) {
		return fmt.Errorf("runs: %s: %w", id, ErrBusy)
	}
	if m.leaser == nil {
		return nil
	}
	l, err := m.takeLease(ctx, id, probeHolder)
	if err != nil {
		return err
	}
	m.dropLease(ctx, l)
	return nil
}

// Holders of the thread leases the manager takes itself, for a moment:
// to check whether a run is live, and while it prepares a run's execution
// (until the graph takes the lease). A lease one of them holds is let go
// soon: takeLease waits for it.
const (
	probeHolder = "retrai status check"
	startHolder = "retrai starting the run"
)

// processDesc describes this process in the leases the manager takes, as
// the graph describes it in a run's.
var processDesc = func() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown host"
	}
	return fmt.Sprintf("pid %d on %s", os.Getpid(), host)
}()

// briefHolder reports whether a lease holder is one of the manager's brief
// ones (probeHolder, startHolder), in this process or another.
func briefHolder(holder string) bool {
	return strings.HasPrefix(holder, probeHolder+" (") || strings.HasPrefix(holder, startHolder+" (")
}

// How long takeLease and run wait, at most, for a lease held briefly by a
// manager to be let go: briefTries times briefWait.
const (
	briefTries = 40
	briefWait  = 25 * time.Millisecond
)

// takeLease takes the lease of run id's thread for holder (probeHolder or
// startHolder). It returns a *LiveError when a run holds it — it waits a
// little for a lease held by a manager's brief check — and other errors
// when the lease cannot be taken. Give it back with dropLease.
func (m *Manager) takeLease(ctx context.Context, id, holder string) (checkpoint.Lease, error) {
	for try := 1; ; try++ {
		l, err := m.leaser.AcquireLease(ctx, id, holder+" ("+processDesc+")", m.leaseTTL)
		if err == nil {
			return l, nil
		}
		held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		if !ok {
			return checkpoint.Lease{}, fmt.Errorf("runs: lease of run %s: %w", id, err)
		}
		if !briefHolder(held.Holder) || try >= briefTries {
			return checkpoint.Lease{}, &LiveError{RunID: id, Holder: holderOf(held.Holder), Expires: held.Expires}
		}
		if err := sleep(ctx, briefWait); err != nil {
			return checkpoint.Lease{}, err
		}
	}
}

// dropLease gives back a lease taken by takeLease; one that cannot be
// given back expires.
func (m *Manager) dropLease(ctx context.Context, l checkpoint.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = m.leaser.ReleaseLease(ctx, l)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State returns the agent state of the run's latest checkpoint (the
// conversation, the iteration, …); a run without checkpoints gives a zero
// state.
func (m *Manager) State(ctx context.Context, id string) (retrai.State, error) {
	run, err := m.store.get(ctx, id)
	if err != nil {
		return retrai.State{}, fmt.Errorf("runs: %w", err)
	}
	reader, err := shapeGraphOf(run, retrai.WithCheckpointer(m.saver))
	if err != nil {
		return retrai.State{}, err
	}
	snap, err := reader.GetState(ctx, graph.WithThread(id))
	if err != nil {
		return retrai.State{}, fmt.Errorf("runs: state of %s: %w", id, err)
	}
	return snap.Values, nil
}

// Start starts the pending run id in the background and returns once it
// runs; use Wait or the bus to follow it. The run keeps ctx's values but
// not its cancellation: Cancel or Close stop it. Start fails with
// ErrNotPending for a run started before, and with ErrBusy, a *LiveError
// or ErrClosed. When the run's goal or model cannot be built the run
// becomes StatusError and Start returns the error.
func (m *Manager) Start(ctx context.Context, id string) error {
	return m.execute(ctx, id, false, "")
}

// Resume continues the run id in the background from its last checkpoint
// and returns once it runs. A run waiting at a human check needs a
// decision (DecisionApprove or DecisionAbort, else ErrDecisionRequired);
// for other runs decision is ignored. Interrupted runs, runs stopped on an
// error and runs left "running" by a process that died continue where they
// stopped; a pending run starts. Resume fails with ErrFinal for runs that
// have ended, with ErrBusy for a run executing in this manager, with a
// *LiveError — leaving the run's record alone — for a run executing in
// another process, and with ErrClosed.
func (m *Manager) Resume(ctx context.Context, id, decision string) error {
	return m.execute(ctx, id, true, decision)
}

// Cancel interrupts the run id executing in this manager; it becomes
// StatusInterrupted (Wait for it) and can be resumed. It fails with
// ErrNotActive if the run is not executing here.
func (m *Manager) Cancel(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ex, ok := m.active[id]
	if !ok || ex.cancel == nil {
		return fmt.Errorf("runs: cancel %s: %w", id, ErrNotActive)
	}
	ex.cancel()
	return nil
}

// Wait blocks until the run id is not executing in this manager — it has
// ended, waits for a human, or was interrupted — or ctx is done, and
// returns the run.
func (m *Manager) Wait(ctx context.Context, id string) (Run, error) {
	m.mu.Lock()
	ex := m.active[id]
	m.mu.Unlock()
	if ex != nil {
		select {
		case <-ex.done:
		case <-ctx.Done():
			return Run{}, ctx.Err()
		}
	}
	return m.Get(ctx, id)
}

// reserve marks id as executing, or fails.
func (m *Manager) reserve(id string) (*execution, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, ok := m.active[id]; ok {
		return nil, fmt.Errorf("%s: %w", id, ErrBusy)
	}
	ex := &execution{done: make(chan struct{})}
	m.active[id] = ex
	m.wg.Add(1)
	return ex, nil
}

// release ends the execution ex of id.
func (m *Manager) release(id string, ex *execution) {
	m.mu.Lock()
	if m.active[id] == ex {
		delete(m.active, id)
	}
	m.mu.Unlock()
	close(ex.done)
	m.wg.Done()
}

// execute starts (resume false) or resumes a run in the background.
//
// It holds the run's thread lease from before it reads the run's record
// until it has recorded the run running, so that two processes cannot both
// take the run over, and lets it go just before the graph takes it for the
// run itself. A run another process executes is refused before its record
// is touched.
func (m *Manager) execute(ctx context.Context, id string, resume bool, decision string) (err error) {
	op := "start"
	if resume {
		op = "resume"
	}
	ex, err := m.reserve(id)
	if err != nil {
		return fmt.Errorf("runs: %s: %w", op, err)
	}
	launched := false
	defer func() {
		if !launched {
			m.release(id, ex)
		}
	}()

	check := func() (Run, error) {
		run, err := m.store.get(ctx, id)
		if err != nil {
			return Run{}, fmt.Errorf("runs: %s: %w", op, err)
		}
		switch {
		case !resume && run.Status != StatusPending:
			return Run{}, fmt.Errorf("runs: start %s (%s): %w", id, run.Status, ErrNotPending)
		case resume && run.Status.Final():
			return Run{}, fmt.Errorf("runs: resume %s (%s): %w", id, run.Status, ErrFinal)
		}
		return run, nil
	}
	if _, err := check(); err != nil {
		return err
	}
	dropLease := func() {}
	if m.leaser != nil {
		lease, err := m.takeLease(ctx, id, startHolder)
		if err != nil {
			return err
		}
		var once sync.Once
		dropLease = func() { once.Do(func() { m.dropLease(ctx, lease) }) }
		defer dropLease()
	}
	run, err := check() // as it is now that nobody else can change it
	if err != nil {
		return err
	}

	sk := &sink{m: m, id: id}
	g, err := m.build(ctx, run)
	if err != nil {
		m.failEarly(run, err)
		return fmt.Errorf("runs: %s %s: %w", op, id, err)
	}
	var cmd *graph.Command[retrai.State]
	if resume && run.Status != StatusPending {
		snap, err := g.GetState(ctx, graph.WithThread(id))
		if err != nil {
			return fmt.Errorf("runs: resume %s: %w", id, err)
		}
		switch {
		case snap.CheckpointID == "":
			// Stopped before its first checkpoint: start afresh.
		case len(snap.Interrupts) > 0:
			if strings.TrimSpace(decision) == "" {
				return fmt.Errorf("runs: resume %s: %w", id, ErrDecisionRequired)
			}
			cmd = &graph.Command[retrai.State]{Resume: strings.TrimSpace(decision)}
		default:
			cmd = &graph.Command[retrai.State]{}
		}
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		cancel()
		return fmt.Errorf("runs: %s: %w", op, ErrClosed)
	}
	ex.cancel = cancel
	m.mu.Unlock()

	run.Status, run.Error, run.Question, run.UpdatedAt = StatusRunning, "", "", now()
	if err := m.store.put(ctx, run); err != nil {
		cancel()
		return fmt.Errorf("runs: %s: %w", op, err)
	}
	sk.run = run
	launched = true
	dropLease() // for the graph to take
	if w, ok := sandboxnote.Warning(sandboxStatus(), m.sandbox); ok {
		// Never a silent fallback: whoever follows the run sees it.
		m.publish(id, w)
	}
	go m.run(runCtx, ex, run, g, sk, cmd)
	return nil
}

// sandboxStatus is tools.SandboxStatus, replaced by tests.
var sandboxStatus = tools.SandboxStatus

// build returns the agent graph of run.
func (m *Manager) build(ctx context.Context, run Run) (*graph.Graph[retrai.State], error) {
	fileCfg, err := loadConfig(run.Cwd)
	if err != nil {
		return nil, err
	}
	fileCfg.TestOptions = append(fileCfg.TestOptions, tools.WithSandbox(m.sandbox))
	goal, err := goals.New(run.Goal, fileCfg)
	if err != nil {
		return nil, err
	}
	model, err := m.models(ctx, run.Model)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", run.Model, err)
	}
	opts := []retrai.Option{
		retrai.WithCheckpointer(m.saver),
		retrai.WithCompileOptions(graph.WithLeaseTTL(m.leaseTTL)),
		retrai.WithToolOptions(tools.WithSandbox(m.sandbox)),
	}
	if m.tools != nil {
		opts = append(opts, retrai.WithTools(m.tools))
	}
	return retrai.New(model, goal, append(opts, m.agentOpts...)...)
}

// loadConfig returns the project's .retrai.yml in dir, the zero Config if
// there is none.
func loadConfig(dir string) (goals.Config, error) {
	cfg, _, err := goals.LoadConfig(dir)
	if err != nil || cfg == nil {
		return goals.Config{}, err
	}
	return *cfg, nil
}

// failEarly records that run could not be started or resumed.
func (m *Manager) failEarly(run Run, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run.Status, run.Error, run.UpdatedAt = StatusError, cause.Error(), now()
	if err := m.store.put(ctx, run); err != nil {
		cause = errors.Join(cause, err)
	}
	m.publish(run.ID, events.Error{Message: cause.Error()})
	m.bus.Publish(endEvent(run))
}

// publish publishes an event of the manager's about run id.
func (m *Manager) publish(id string, p events.Payload) {
	m.bus.Publish(events.Event{RunID: id, Data: p})
}

// run executes the graph of run, its events bridged onto sk, and records
// how it stopped.
func (m *Manager) run(ctx context.Context, ex *execution, run Run, g *graph.Graph[retrai.State], sk *sink, cmd *graph.Command[retrai.State]) {
	opts := []graph.RunOption{graph.WithThread(run.ID), graph.WithRecursionLimit(4*run.MaxIterations + 8),
		graph.WithStreamModes(events.StreamModes)}
	ctx = llm.ContextWithProgress(ctx, modelProgress)
	execute := func() error {
		var stream iter.Seq2[graph.Event, error]
		if cmd != nil {
			stream = g.StreamResume(ctx, *cmd, opts...)
		} else {
			stream = g.Stream(ctx, retrai.Input(retrai.Run{
				RunID:         run.ID,
				Cwd:           run.Cwd,
				ModelName:     run.Model,
				MaxIterations: run.MaxIterations,
				HITL:          run.HITL,
				Instructions:  run.Instructions,
			}), opts...)
		}
		return events.Bridge(ctx, sk, run.ID, stream)
	}
	err := execute()
	// A manager's brief check may hold the lease at the start: the graph
	// refuses the run before it reads the thread, and it is tried again.
	for try := 1; try < briefTries; try++ {
		held, ok := errors.AsType[*checkpoint.LeaseHeldError](err)
		if !ok || !briefHolder(held.Holder) || sleep(ctx, briefWait) != nil {
			break
		}
		err = execute()
	}
	cancelled := ctx.Err() != nil
	ex.cancel()

	bg, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if held, ok := errors.AsType[*checkpoint.LeaseHeldError](err); ok || errors.Is(err, checkpoint.ErrLeaseLost) {
		// Another process took the run over — between execute's check and
		// the graph's start, or after this one failed to renew the lease
		// in time. The run and its record are that process's now.
		m.release(run.ID, ex)
		lerr := fmt.Errorf("run %s was taken over by another process: %w", run.ID, err)
		if ok {
			lerr = &LiveError{RunID: run.ID, Holder: holderOf(held.Holder), Expires: held.Expires}
		}
		m.publish(run.ID, events.Error{Message: lerr.Error()})
		m.publish(run.ID, Ended{Status: StatusRunning, Reason: run.Reason, Iteration: run.Iteration,
			TotalTokens: run.TotalTokens, Error: lerr.Error(), Live: true})
		return
	}
	run = sk.record()
	var v retrai.State
	if snap, serr := g.GetState(bg, graph.WithThread(run.ID)); serr == nil {
		v = snap.Values
		run.Iteration, run.TotalTokens = v.Iteration.Get(), v.TotalTokens.Get()
		if r := v.GoalReason.Get(); r != "" {
			run.Reason = r
		}
	}
	var intr *graph.Interrupted
	switch {
	case err == nil:
		switch v.Outcome() {
		case retrai.OutcomeAchieved:
			run.Status = StatusAchieved
		case retrai.OutcomeAborted:
			run.Status = StatusAborted
		case retrai.OutcomeFailed:
			run.Status = StatusFailed
		default:
			run.Status, run.Error = StatusError, "the agent stopped without an outcome"
		}
		if r, ok := sk.endReason(); ok {
			run.Reason = r
		}
	case errors.As(err, &intr):
		run.Status = StatusWaiting
		for _, in := range intr.Interrupts {
			if p, ok := in.Value.(map[string]any); ok {
				run.Question, _ = p["question"].(string)
			}
		}
	case cancelled && errors.Is(err, context.Canceled):
		run.Status = StatusInterrupted
	default:
		run.Status, run.Error = StatusError, err.Error()
	}
	run.UpdatedAt = now()
	perr := m.store.put(bg, run)
	m.release(run.ID, ex)

	if perr != nil {
		m.publish(run.ID, events.Error{Message: perr.Error()})
	}
	switch {
	case run.Status == StatusWaiting:
		ev, ok := sk.humanCheck()
		if !ok {
			ev = events.Event{RunID: run.ID, Data: retrai.HumanCheck{Question: run.Question, Reason: run.Reason, Iteration: run.Iteration}}
		}
		m.bus.Publish(ev)
	case run.Error != "":
		m.publish(run.ID, events.Error{Message: run.Error})
		m.bus.Publish(endEvent(run))
	default:
		m.bus.Publish(endEvent(run))
	}
}

// endEvent is the Ended event of run.
func endEvent(run Run) events.Event {
	return events.Event{RunID: run.ID, Data: Ended{Status: run.Status, Reason: run.Reason, Iteration: run.Iteration,
		TotalTokens: run.TotalTokens, Error: run.Error}}
}

// sink receives the events of one execution of a run from events.Bridge
// and publishes them on the manager's bus: it records progress, adds a
// Progress after each goal check, and leaves out the events of the
// execution's end — the run's start, end and error, and the agent's
// outcome and human check — which the manager publishes once the run's
// record is updated.
type sink struct {
	m  *Manager
	id string

	mu       sync.Mutex
	run      Run // the run's record, as the execution last wrote it
	finished *retrai.Finished
	human    *events.Event
	track    progressTracker
}

// Publish implements events.Publisher.
func (s *sink) Publish(ev events.Event) {
	ev.RunID = s.id
	var after []events.Event
	var record *Run // progress to record
	s.mu.Lock()
	switch p := ev.Data.(type) {
	case events.RunStarted, events.RunEnded:
		s.mu.Unlock()
		return
	case events.Error:
		if ev.Node == "" { // the run's: the manager reports it
			s.mu.Unlock()
			return
		}
	case retrai.Finished:
		s.finished = &p
		s.mu.Unlock()
		return
	case retrai.HumanCheck:
		s.human = &ev
		s.mu.Unlock()
		return
	case events.NodeStarted:
		s.track.stepStart(s.run.Cwd, ev.Node)
	case retrai.GoalCheck:
		idle := s.track.goalCheck(s.run.Cwd, p)
		s.run.Iteration, s.run.TotalTokens, s.run.Reason = p.Iteration, p.TotalTokens, p.Reason
		s.run.UpdatedAt = now()
		run := s.run
		record = &run
		progress := ev
		progress.Data = Progress{Iteration: p.Iteration, NoProgress: idle}
		after = append(after, progress)
	}
	s.mu.Unlock()
	if record != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = s.m.store.put(ctx, *record) // progress only; the final record is written by run
		cancel()
	}
	s.m.bus.Publish(ev)
	for _, e := range after {
		s.m.bus.Publish(e)
	}
}

// record returns the run's record with the progress made so far.
func (s *sink) record() Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

func (s *sink) endReason() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished == nil {
		return "", false
	}
	return s.finished.Reason, true
}

func (s *sink) humanCheck() (events.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.human == nil {
		return events.Event{}, false
	}
	return *s.human, true
}

// modelProgress writes the progress of a run's model call (see
// llm.Progress) to the run's stream as a ModelProgress, from the node
// that makes the call.
func modelProgress(ctx context.Context, ev llm.ProgressEvent) {
	p := ModelProgress{State: ev.Kind.String(), Model: ev.Model, Attempt: ev.Attempt, MaxAttempts: ev.MaxAttempts}
	if ev.Kind == llm.ProgressRetryWait || ev.Kind == llm.ProgressGaveUp {
		p.Reason, p.StatusCode = string(ev.Reason), ev.StatusCode
		p.RetryAfterMS, p.DelayMS = ev.RetryAfter.Milliseconds(), ev.Delay.Milliseconds()
		if ev.Err != nil {
			p.Error = ev.Err.Error()
		}
	}
	graph.StreamWriter(ctx)(p)
}

// shapeGoal stands in for a goal in a graph that is only read or drawn.
type shapeGoal struct{}

func (shapeGoal) Name() string         { return "none" }
func (shapeGoal) SystemPrompt() string { return "" }
func (shapeGoal) Check(context.Context, goals.State, string) (goals.Result, error) {
	return goals.Result{}, errors.New("runs: the checkpoint reader cannot check goals")
}

// shapeBaselineGoal stands in for a goal that takes a baseline: its graph
// has the baseline node.
type shapeBaselineGoal struct{ shapeGoal }

func (shapeBaselineGoal) Baseline(context.Context, string) (*goals.Baseline, error) {
	return nil, errors.New("runs: the checkpoint reader cannot take baselines")
}

// shapeGraphOf returns a graph of the shape of run's — with a baseline
// node when its goal takes baselines — to read its checkpoints.
func shapeGraphOf(run Run, opts ...retrai.Option) (*graph.Graph[retrai.State], error) {
	cfg, err := loadConfig(run.Cwd)
	if err != nil {
		cfg = goals.Config{}
	}
	goal, err := goals.New(run.Goal, cfg)
	if err != nil { // the project or its settings are gone
		goal, err = goals.New(run.Goal, goals.Config{})
	}
	if _, ok := goal.(goals.Baseliner); ok && err == nil {
		g, err := retrai.New(llm.NewScripted(), shapeBaselineGoal{}, opts...)
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		return g, nil
	}
	return shapeGraph(opts...)
}

// shapeGraph returns the agent's graph with neither a model nor a goal:
// enough to read checkpoints or draw it.
func shapeGraph(opts ...retrai.Option) (*graph.Graph[retrai.State], error) {
	g, err := retrai.New(llm.NewScripted(), shapeGoal{}, opts...)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	return g, nil
}

// Structure returns the agent's graph's nodes and edges (see
// graph.Graph.Nodes and Edges), without opening a database.
func Structure() ([]string, []graph.Edge, error) {
	g, err := shapeGraph()
	if err != nil {
		return nil, nil, err
	}
	return g.Nodes(), g.Edges(), nil
}

// Mermaid returns the agent's graph as a Mermaid flowchart, without opening
// a database.
func Mermaid() (string, error) {
	g, err := shapeGraph()
	if err != nil {
		return "", err
	}
	return g.Mermaid(), nil
}
