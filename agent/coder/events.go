package coder

import "github.com/agentgraph/agentgraph/events"

// The kinds of the coder's own events, beside the SDK's (see package
// events). Its nodes write them with graph.StreamWriter, and events.Bridge
// publishes them.
const (
	// KindIntentChosen is the kind of [IntentChosen].
	KindIntentChosen events.Kind = "coder.intent_chosen"
	// KindToolAction is the kind of [ToolAction].
	KindToolAction events.Kind = "coder.tool_action"
	// KindTestRun is the kind of [TestRun].
	KindTestRun events.Kind = "coder.test_run"
	// KindMemoryHit is the kind of [MemoryHit].
	KindMemoryHit events.Kind = "coder.memory_hit"
	// KindFinished is the kind of [Finished].
	KindFinished events.Kind = "coder.finished"
)

// IntentChosen reports the route node's decision.
type IntentChosen struct {
	Decision
}

// EventKind implements events.Payload.
func (IntentChosen) EventKind() events.Kind { return KindIntentChosen }

// ToolAction reports one action on the workspace: a file read, a patch or
// a write, a command.
type ToolAction struct {
	// Tool is the tool's name: file_read, file_patch, file_write,
	// bash_exec.
	Tool string `json:"tool"`
	// Target is the file or the command.
	Target string `json:"target"`
	// OK reports success; Result is the tool's output or error (for a
	// command, its exit code and output), shortened.
	OK     bool   `json:"ok"`
	Result string `json:"result,omitempty"`
}

// EventKind implements events.Payload.
func (ToolAction) EventKind() events.Kind { return KindToolAction }

// TestRun reports a test run of the auto-fix loop.
type TestRun struct {
	// Attempt is the edit attempt it checks and MaxAttempts the limit.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts"`
	TestOutcome
}

// EventKind implements events.Payload.
func (TestRun) EventKind() events.Kind { return KindTestRun }

// Kinds of memory of a [MemoryHit].
const (
	// MemoryQueryCache: the answer came from the persistent query cache.
	MemoryQueryCache = "query_cache"
	// MemoryFileCache: a file's content came from the session's cache.
	MemoryFileCache = "file_cache"
	// MemoryPreferences: preferences were recalled for the prompt.
	MemoryPreferences = "preferences"
	// MemoryHistory: earlier exchanges of the session were included.
	MemoryHistory = "history"
)

// MemoryHit reports that a memory served the request.
type MemoryHit struct {
	// Memory is MemoryQueryCache, MemoryFileCache, MemoryPreferences or
	// MemoryHistory.
	Memory string `json:"memory"`
	// Detail says what was found (a path, the preferences recalled, …).
	Detail string `json:"detail,omitempty"`
	// Count is the number of items recalled.
	Count int `json:"count,omitempty"`
}

// EventKind implements events.Payload.
func (MemoryHit) EventKind() events.Kind { return KindMemoryHit }

// Finished reports the end of a request.
type Finished struct {
	// Intent is the request's intent and Outcome how it ended.
	Intent  Intent `json:"intent"`
	Outcome string `json:"outcome"`
}

// EventKind implements events.Payload.
func (Finished) EventKind() events.Kind { return KindFinished }
