package events

import (
	"encoding/json"

	"github.com/agentgraph/agentgraph/graph"
)

// The SDK's kinds of event, one per payload type.
const (
	// KindRunStarted is the kind of [RunStarted].
	KindRunStarted Kind = "run_started"
	// KindRunEnded is the kind of [RunEnded].
	KindRunEnded Kind = "run_ended"
	// KindNodeStarted is the kind of [NodeStarted].
	KindNodeStarted Kind = "node_started"
	// KindNodeEnded is the kind of [NodeEnded].
	KindNodeEnded Kind = "node_ended"
	// KindModelCall is the kind of [ModelCall].
	KindModelCall Kind = "model_call"
	// KindToolCall is the kind of [ToolCall].
	KindToolCall Kind = "tool_call"
	// KindToolResult is the kind of [ToolResult].
	KindToolResult Kind = "tool_result"
	// KindInterrupt is the kind of [Interrupt].
	KindInterrupt Kind = "interrupt"
	// KindCustom is the kind of [Custom].
	KindCustom Kind = "custom"
	// KindError is the kind of [Error]; sinks treat it as severe.
	KindError Kind = "error"
	// KindSandboxWarning is the kind of [SandboxWarning]; [LogTo] logs
	// it as a warning.
	KindSandboxWarning Kind = "sandbox_warning"
)

// RunStarted reports that a run started (or resumed): [Bridge] publishes
// it before it reads the run's stream.
type RunStarted struct{}

// EventKind implements [Payload].
func (RunStarted) EventKind() Kind { return KindRunStarted }

// Status is how a run ended, in a [RunEnded].
type Status string

// The statuses of [RunEnded].
const (
	// StatusCompleted: the run reached the end of the graph.
	StatusCompleted Status = "completed"
	// StatusInterrupted: the run paused (an interrupt or a breakpoint)
	// and can be resumed.
	StatusInterrupted Status = "interrupted"
	// StatusCancelled: the run's context was cancelled.
	StatusCancelled Status = "cancelled"
	// StatusFailed: the run failed.
	StatusFailed Status = "failed"
)

// RunEnded reports that a run stopped: it is the last event [Bridge]
// publishes for a run.
type RunEnded struct {
	// Status says how.
	Status Status `json:"status"`
	// Error is the text of the run's error when it was cancelled or
	// failed.
	Error string `json:"error,omitempty"`
}

// EventKind implements [Payload].
func (RunEnded) EventKind() Kind { return KindRunEnded }

// NodeStarted reports that a task of the event's node started.
type NodeStarted struct {
	// Push marks a task started by a graph.Send.
	Push bool `json:"push,omitempty"`
}

// EventKind implements [Payload].
func (NodeStarted) EventKind() Kind { return KindNodeStarted }

// NodeEnded reports that a task of the event's node ended: it finished
// (Writes), paused (Interrupted) or failed (Error).
type NodeEnded struct {
	// Writes are what the task wrote, field by field (see graph.Writes).
	Writes graph.Writes `json:"writes,omitempty"`
	// Cached marks a result restored from a checkpoint's pending writes
	// or the node cache instead of being computed again.
	Cached bool `json:"cached,omitempty"`
	// Interrupted reports a task that paused (see [Interrupt]).
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is the text of the task's error when it failed.
	Error string `json:"error,omitempty"`
}

// EventKind implements [Payload].
func (NodeEnded) EventKind() Kind { return KindNodeEnded }

// ModelCall reports a call of a chat model that returned. A node that
// calls a model writes it with graph.StreamWriter; [Bridge] does not make
// it up from the messages a node appends.
type ModelCall struct {
	// Model names the model.
	Model string `json:"model,omitempty"`
	// Text is the text of its answer.
	Text string `json:"text,omitempty"`
	// ToolCalls is how many tools it called.
	ToolCalls int `json:"tool_calls,omitempty"`
	// StopReason says why it stopped (see llm.Response).
	StopReason string `json:"stop_reason,omitempty"`
	// PromptTokens, CompletionTokens and TotalTokens are the call's token
	// usage (see llm.Usage).
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// EventKind implements [Payload].
func (ModelCall) EventKind() Kind { return KindModelCall }

// ToolCall reports a tool call a model asked for. [Bridge] publishes one
// for each tool call of an AI message a node appends to a state.Messages
// field, from the node that appended it.
type ToolCall struct {
	// ID identifies the call; its [ToolResult] carries it too.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Args is the JSON text of the arguments.
	Args string `json:"args"`
}

// EventKind implements [Payload].
func (ToolCall) EventKind() Kind { return KindToolCall }

// ToolResult reports the result of a tool call. [Bridge] publishes one
// for each tool message a node appends to a state.Messages field, from
// the node that appended it.
type ToolResult struct {
	// ID identifies the call (the ID of its [ToolCall]).
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Result is what the model is shown: the tool's output, or the
	// explanation of its failure.
	Result string `json:"result"`
}

// EventKind implements [Payload].
func (ToolResult) EventKind() Kind { return KindToolResult }

// Breakpoints of an [Interrupt].
const (
	BreakpointBefore = "before"
	BreakpointAfter  = "after"
)

// Interrupt reports that the event's node paused the run: with
// graph.Interrupt (ID and Value), or at a static breakpoint before or
// after it ran (Breakpoint).
type Interrupt struct {
	// ID identifies the interrupt, for resuming it (graph.Command's
	// ResumeMap); empty for breakpoints.
	ID string `json:"id,omitempty"`
	// Value is what the node passed to graph.Interrupt. It must encode to
	// JSON for JSON sinks.
	Value any `json:"value,omitempty"`
	// Breakpoint is [BreakpointBefore] or [BreakpointAfter] for a
	// breakpoint, "" for an interrupt.
	Breakpoint string `json:"breakpoint,omitempty"`
}

// EventKind implements [Payload].
func (Interrupt) EventKind() Kind { return KindInterrupt }

// Custom carries a value a node wrote with graph.StreamWriter that is not
// a [Payload] of its own.
type Custom struct {
	// Value is the value written. It must encode to JSON for JSON sinks.
	Value any `json:"value"`
}

// EventKind implements [Payload].
func (Custom) EventKind() Kind { return KindCustom }

// Error reports an error: [Bridge] publishes one, before [RunEnded], for
// a run that failed.
type Error struct {
	// Message is the error's text.
	Message string `json:"message"`
}

// EventKind implements [Payload].
func (Error) EventKind() Kind { return KindError }

// SandboxWarning warns that the commands an agent runs (bash_exec,
// run_tests, goal checks) are NOT sandboxed: the sandbox mode is auto and
// no sandbox works on this machine, so they run unconfined, with this
// process's rights, files and network. A program that starts an agent in
// that state publishes one, so that whoever watches the run sees it.
type SandboxWarning struct {
	// Mode is the sandbox mode in force, such as "auto".
	Mode string `json:"mode"`
	// Reason says why there is no sandbox, such as "bwrap (package
	// bubblewrap) is not installed".
	Reason string `json:"reason"`
}

// EventKind implements [Payload].
func (SandboxWarning) EventKind() Kind { return KindSandboxWarning }

// decodePayload decodes the data of an event of kind k: into the SDK's
// payload type of k, or else as a [Raw].
func decodePayload(k Kind, data json.RawMessage) (Payload, error) {
	switch k {
	case KindRunStarted:
		return decode[RunStarted](data)
	case KindRunEnded:
		return decode[RunEnded](data)
	case KindNodeStarted:
		return decode[NodeStarted](data)
	case KindNodeEnded:
		return decode[NodeEnded](data)
	case KindModelCall:
		return decode[ModelCall](data)
	case KindToolCall:
		return decode[ToolCall](data)
	case KindToolResult:
		return decode[ToolResult](data)
	case KindInterrupt:
		return decode[Interrupt](data)
	case KindCustom:
		return decode[Custom](data)
	case KindError:
		return decode[Error](data)
	case KindSandboxWarning:
		return decode[SandboxWarning](data)
	}
	if len(data) == 0 || string(data) == "null" {
		data = nil
	}
	return Raw{Kind: k, Data: data}, nil
}

func decode[P Payload](data json.RawMessage) (Payload, error) {
	var p P
	if len(data) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return p, nil
}
