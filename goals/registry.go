package goals

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Factory builds a goal from its configuration. It validates the settings
// the goal needs and reports problems as *SettingError.
type Factory func(cfg Config) (Goal, error)

var registry = struct {
	sync.RWMutex
	factories map[string]Factory
}{factories: make(map[string]Factory)}

// Register makes a goal available to New under name. It returns a
// *DuplicateGoalError, and keeps the earlier factory, if name is already
// registered; an empty name or a nil factory is an error too. It is safe
// for concurrent use.
func Register(name string, factory Factory) error {
	if name == "" {
		return errors.New("goals: Register: empty goal name")
	}
	if factory == nil {
		return fmt.Errorf("goals: Register %q: nil factory", name)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.factories[name]; ok {
		return &DuplicateGoalError{Name: name}
	}
	registry.factories[name] = factory
	return nil
}

// New builds the goal registered under name with cfg. It returns an
// *UnknownGoalError for an unregistered name, and the factory's error as
// is (a *SettingError for the built-in goals) when cfg does not suit the
// goal. cfg.Goal is not consulted: name decides.
//
// The goal's results, which a model reads, hide this process's secrets:
// every value of its environment at least 8 characters long is replaced
// by "[redacted]" in Reason, Details.Command, Details.Output and
// Details.Failures (and in a Baseline's Summary), unless its variable is
// one commands are meant to see (PATH, HOME, LANG, GOPATH, …) and it does
// not look like a secret: a test that prints its environment or reads
// /proc/*/environ shows the model no key.
func New(name string, cfg Config) (Goal, error) {
	registry.RLock()
	factory, ok := registry.factories[name]
	registry.RUnlock()
	if !ok {
		return nil, &UnknownGoalError{Name: name, Known: Names()}
	}
	g, err := factory(cfg)
	if err != nil || g == nil {
		return g, err
	}
	// Its output reaches a model: never a secret of this process's.
	return redact(g), nil
}

// Names returns the registered goal names, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.factories))
	for name := range registry.factories {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// registered reports whether name is registered.
func registered(name string) bool {
	registry.RLock()
	defer registry.RUnlock()
	_, ok := registry.factories[name]
	return ok
}

// Names of the built-in goals.
const (
	GoalPytest       = "pytest"
	GoalPyright      = "pyright"
	GoalBunTest      = "bun-test"
	GoalNpmTest      = "npm-test"
	GoalCargoTest    = "cargo-test"
	GoalGoTest       = "go-test"
	GoalMakeTest     = "make-test"
	GoalShell        = "shell"
	GoalPerfCheck    = "perf-check"
	GoalSQLBenchmark = "sql-benchmark"
	GoalAIEval       = "ai-eval"
)

func init() {
	builtins := map[string]Factory{
		GoalPytest:       newTestGoalFactory(GoalPytest),
		GoalBunTest:      newTestGoalFactory(GoalBunTest),
		GoalNpmTest:      newTestGoalFactory(GoalNpmTest),
		GoalCargoTest:    newTestGoalFactory(GoalCargoTest),
		GoalGoTest:       newTestGoalFactory(GoalGoTest),
		GoalPyright:      newPyrightGoal,
		GoalMakeTest:     newMakeTestGoal,
		GoalShell:        newShellGoal,
		GoalPerfCheck:    newPerfGoal,
		GoalSQLBenchmark: newSQLGoal,
		GoalAIEval:       newAIEvalGoal,
	}
	for name, f := range builtins {
		if err := Register(name, f); err != nil {
			panic(err) // unreachable: the names above are distinct
		}
	}
}
