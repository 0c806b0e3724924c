package graph

import (
	"sync"
	"time"
)

// Durability says when a run's checkpoints are written.
type Durability int

const (
	// DurabilitySync writes each checkpoint before the next step starts.
	DurabilitySync Durability = iota
	// DurabilityAsync writes checkpoints in order in the background while
	// the next steps run (at most 64 behind, so a crash can lose that
	// many steps); the run waits for them before it returns, and stops at
	// the next step if one failed. A saver that is a [checkpoint.Batcher]
	// gets what queued up while it wrote the previous ones as one batch
	// (one transaction for many steps).
	DurabilityAsync
	// DurabilityExit writes one checkpoint when the run ends or pauses.
	DurabilityExit
)

// RunOption configures one run (Invoke, Stream, Resume, …). It is made by
// the With… functions of this package.
type RunOption interface{ applyRun(*runConfig) }

// runOption is a RunOption that is a function.
type runOption func(*runConfig)

func (f runOption) applyRun(c *runConfig) { f(c) }

type runConfig struct {
	thread       string
	checkpointID string
	runID        string
	limit        int
	limitSet     bool // WithRecursionLimit was given (a subgraph's run inherits its parent's limit otherwise)
	modes        Mode
	subgraphs    bool
	maxConc      int
	durability   Durability
	metadata     map[string]any
	// Breakpoints of this run, replacing the compiled ones when set.
	before, after       []string
	hasBefore, hasAfter bool
	abandoned           *sync.WaitGroup
	// only lists the tasks a WithTasks run runs.
	only []string
	// leaseTTL is the run's WithLeaseTTL, nil for the graph's.
	leaseTTL *time.Duration
	// refuseInput: see RefuseInputWhileInterrupted.
	refuseInput bool
}

// WithTasks makes [Graph.Resume] run only the named tasks of the thread's
// next step — IDs from [Snapshot.Tasks] of [Graph.GetState] — and save
// each one's outcome (its writes and route, its interrupts, or its error)
// as a pending write of the thread's latest checkpoint, without ending
// the step: no checkpoint is written, and a later Resume without
// WithTasks completes the step, running only the tasks that have no saved
// writes yet, and merging every task's writes in the order a run in one
// process would. A task whose writes are saved already does not run
// again.
//
// It is how a runner spread over several processes (package temporal's
// workflows, for one) runs each task of a step on its own: several such
// runs of one step may run at once, so a WithTasks run takes no thread
// lease; the runner must not complete the step while they run. The run
// returns an [*Interrupted] with the interrupts its tasks raised, the
// [*NodeError] of a task that failed, or an error wrapping
// [ErrUnknownTask] when an ID is not a task of the thread's next step (the
// step was completed since the IDs were read, say). It needs a
// checkpointer, and a Command without Update, Goto or Sends; answers to
// interrupts go in its ResumeMap (a scalar Resume is ambiguous as soon as
// another task of the step waits too, as in any Resume).
func WithTasks(ids ...string) RunOption {
	ids = append([]string{}, ids...) // not nil: WithTasks() names no task, and is refused
	return runOption(func(c *runConfig) { c.only = ids })
}

// WithAbandonedNodes counts on wg the nodes the run abandons: a node that
// was still running when its [WithNodeTimeout] passed or the run's context
// was cancelled, and that has not returned, is left running on its own
// goroutine (see the package doc). The run calls wg.Add(1) for each before
// it returns, and wg.Done when that node returns. A caller that must not
// start work overlapping them — the thread's next run, say — waits on wg
// after the run returned.
func WithAbandonedNodes(wg *sync.WaitGroup) RunOption {
	return runOption(func(c *runConfig) { c.abandoned = wg })
}

// WithThread names the thread whose checkpoints the run reads and writes.
// It is required when the graph has a checkpointer.
func WithThread(id string) RunOption { return runOption(func(c *runConfig) { c.thread = id }) }

// WithCheckpointID starts from that checkpoint of the thread instead of
// the latest: a replay, and a fork of the history when the run writes.
func WithCheckpointID(id string) RunOption {
	return runOption(func(c *runConfig) { c.checkpointID = id })
}

// WithRunID tags the run's checkpoints' metadata.
func WithRunID(id string) RunOption { return runOption(func(c *runConfig) { c.runID = id }) }

// WithRecursionLimit bounds the number of supersteps of the run (the step
// applying the input counts); see [DefaultRecursionLimit]. As in LangGraph,
// the limit also bounds the run of each subgraph the run calls (counted in
// the subgraph's own steps), unless the subgraph was compiled with a limit
// of its own ([WithRunDefaults]).
func WithRecursionLimit(n int) RunOption {
	return runOption(func(c *runConfig) { c.limit, c.limitSet = n, true })
}

// WithStreamModes selects what Stream and StreamResume yield (default
// [ModeUpdates]).
func WithStreamModes(m Mode) RunOption { return runOption(func(c *runConfig) { c.modes = m }) }

// WithSubgraphs includes the events of subgraphs in the stream, with their
// namespace.
func WithSubgraphs() RunOption { return runOption(func(c *runConfig) { c.subgraphs = true }) }

// WithMaxConcurrency bounds how many tasks of a step run at once (default:
// all of them). Tasks start in the step's order — the nodes by name, then
// the Sends in the order they were sent — so with n = 1 they run one after
// the other in that order, also when a resumed step runs only the tasks
// that had not finished.
func WithMaxConcurrency(n int) RunOption { return runOption(func(c *runConfig) { c.maxConc = n }) }

// WithDurability chooses when checkpoints are written (default
// [DurabilitySync]).
func WithDurability(d Durability) RunOption {
	return runOption(func(c *runConfig) { c.durability = d })
}

// WithMetadata adds entries to the metadata of every checkpoint the run
// writes; History filters can match them.
func WithMetadata(m map[string]any) RunOption {
	return runOption(func(c *runConfig) { c.metadata = m })
}

// BreakpointOption sets static breakpoints: given to [Builder.Compile], for
// every run of the graph; given to a run, for that run (replacing the
// compiled ones). It is both a [CompileOption] and a [RunOption].
type BreakpointOption interface {
	CompileOption
	RunOption
}

// WithInterruptBefore pauses a run before the nodes run ("*" for every
// node), as LangGraph's interrupt_before. Given to a run, it replaces the
// compiled breakpoints for that run; with no nodes, it clears them. A
// graph with breakpoints needs a checkpointer.
func WithInterruptBefore(nodes ...string) BreakpointOption { return interruptBefore(nodes) }

// WithInterruptAfter pauses a run after the nodes ran ("*" for every
// node), as LangGraph's interrupt_after; see [WithInterruptBefore].
func WithInterruptAfter(nodes ...string) BreakpointOption { return interruptAfter(nodes) }

type interruptBefore []string

func (n interruptBefore) applyRun(c *runConfig) { c.before, c.hasBefore = n, true }

func (n interruptBefore) applyCompile(c *compileConfig) {
	c.interruptBefore = append(c.interruptBefore, n...)
}

type interruptAfter []string

func (n interruptAfter) applyRun(c *runConfig) { c.after, c.hasAfter = n, true }

func (n interruptAfter) applyCompile(c *compileConfig) {
	c.interruptAfter = append(c.interruptAfter, n...)
}
