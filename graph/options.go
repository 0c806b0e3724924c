package graph

// Durability says when a run's checkpoints are written.
type Durability int

const (
	// DurabilitySync writes each checkpoint before the next step starts.
	DurabilitySync Durability = iota
	// DurabilityAsync writes checkpoints in order in the background while
	// the next steps run (at most 64 behind, so a crash can lose that
	// many steps); the run waits for them before it returns, and stops at
	// the next step if one failed.
	DurabilityAsync
	// DurabilityExit writes one checkpoint when the run ends or pauses.
	DurabilityExit
)

// RunOption configures one run (Invoke, Stream, Resume, …).
type RunOption func(*runConfig)

type runConfig struct {
	thread       string
	checkpointID string
	runID        string
	limit        int
	modes        Mode
	subgraphs    bool
	maxConc      int
	durability   Durability
	metadata     map[string]any
	// Breakpoints of this run, replacing the compiled ones when set.
	before, after       []string
	hasBefore, hasAfter bool
}

// WithThread names the thread whose checkpoints the run reads and writes.
// It is required when the graph has a checkpointer.
func WithThread(id string) RunOption { return func(c *runConfig) { c.thread = id } }

// WithCheckpointID starts from that checkpoint of the thread instead of
// the latest: a replay, and a fork of the history when the run writes.
func WithCheckpointID(id string) RunOption { return func(c *runConfig) { c.checkpointID = id } }

// WithRunID tags the run's checkpoints' metadata.
func WithRunID(id string) RunOption { return func(c *runConfig) { c.runID = id } }

// WithRecursionLimit bounds the number of supersteps of the run (the step
// applying the input counts); see [DefaultRecursionLimit].
func WithRecursionLimit(n int) RunOption { return func(c *runConfig) { c.limit = n } }

// WithStreamModes selects what Stream and StreamResume yield (default
// [ModeUpdates]).
func WithStreamModes(m Mode) RunOption { return func(c *runConfig) { c.modes = m } }

// WithSubgraphs includes the events of subgraphs in the stream, with their
// namespace.
func WithSubgraphs() RunOption { return func(c *runConfig) { c.subgraphs = true } }

// WithMaxConcurrency bounds how many tasks of a step run at once (default:
// all of them). Tasks start in the step's order — the nodes by name, then
// the Sends in the order they were sent — so with n = 1 they run one after
// the other in that order, also when a resumed step runs only the tasks
// that had not finished.
func WithMaxConcurrency(n int) RunOption { return func(c *runConfig) { c.maxConc = n } }

// WithDurability chooses when checkpoints are written (default
// [DurabilitySync]).
func WithDurability(d Durability) RunOption { return func(c *runConfig) { c.durability = d } }

// WithMetadata adds entries to the metadata of every checkpoint the run
// writes; History filters can match them.
func WithMetadata(m map[string]any) RunOption { return func(c *runConfig) { c.metadata = m } }

// WithInterruptBefore pauses this run before any of nodes runs ("*" for
// every node), in place of the breakpoints given at Compile with
// [InterruptBefore] (LangGraph's interrupt_before argument of invoke and
// stream). With no nodes, the run has no breakpoint before nodes. Like
// every pause it needs a checkpointer; an unknown node is an error of the
// run.
func WithInterruptBefore(nodes ...string) RunOption {
	return func(c *runConfig) { c.before, c.hasBefore = nodes, true }
}

// WithInterruptAfter pauses this run after any of nodes ran ("*" for every
// node), in place of the breakpoints given at Compile with
// [InterruptAfter].
func WithInterruptAfter(nodes ...string) RunOption {
	return func(c *runConfig) { c.after, c.hasAfter = nodes, true }
}
