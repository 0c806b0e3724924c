package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// Assistant is a graph served under a configuration.
type Assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config,omitempty"`
	Context     any            `json:"context,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Name        string         `json:"name"`
	Description *string        `json:"description,omitempty"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// GraphDrawing is an assistant's graph as nodes and edges.
type GraphDrawing struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is a node of a [GraphDrawing].
type GraphNode struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// GraphEdge is an edge of a [GraphDrawing].
type GraphEdge struct {
	Source      string          `json:"source"`
	Target      string          `json:"target"`
	Conditional bool            `json:"conditional"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// Schemas are the JSON Schemas of an assistant's graph; a server may leave
// any of them out (null).
type Schemas struct {
	GraphID       string          `json:"graph_id"`
	InputSchema   json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema  json.RawMessage `json:"output_schema,omitempty"`
	StateSchema   json.RawMessage `json:"state_schema,omitempty"`
	ConfigSchema  json.RawMessage `json:"config_schema,omitempty"`
	ContextSchema json.RawMessage `json:"context_schema,omitempty"`
}

// Thread status values.
const (
	ThreadStatusIdle        = "idle"
	ThreadStatusBusy        = "busy"
	ThreadStatusInterrupted = "interrupted"
	ThreadStatusError       = "error"
)

// Thread is a conversation: a sequence of runs over one state.
type Thread struct {
	ThreadID  string         `json:"thread_id"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	Metadata  map[string]any `json:"metadata"`
	// Status is ThreadStatusIdle, ThreadStatusBusy, ThreadStatusInterrupted or ThreadStatusError.
	Status string         `json:"status"`
	Config map[string]any `json:"config,omitempty"`
	// Values is the thread's state (null before its first run on some
	// servers).
	Values json.RawMessage `json:"values,omitempty"`
	// Interrupts are the pending interrupts by task id.
	Interrupts map[string][]Interrupt `json:"interrupts,omitempty"`
}

// Interrupt is a question a paused run waits to be answered: resume the
// thread with a [Command] whose Resume is the answer.
type Interrupt struct {
	ID    string          `json:"id,omitempty"`
	Value json.RawMessage `json:"value"`
}

// Checkpoint names a checkpoint of a thread.
type Checkpoint struct {
	ThreadID      string         `json:"thread_id,omitempty"`
	CheckpointID  string         `json:"checkpoint_id,omitempty"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointMap map[string]any `json:"checkpoint_map,omitempty"`
}

// ThreadState is a thread's state at a checkpoint.
type ThreadState struct {
	Values           json.RawMessage `json:"values"`
	Next             []string        `json:"next"`
	Tasks            []Task          `json:"tasks"`
	Metadata         map[string]any  `json:"metadata,omitempty"`
	CreatedAt        *time.Time      `json:"created_at"`
	Checkpoint       *Checkpoint     `json:"checkpoint"`
	ParentCheckpoint *Checkpoint     `json:"parent_checkpoint"`
}

// Interrupts returns the interrupts pending in s's tasks, in task order.
func (s *ThreadState) Interrupts() []Interrupt {
	var out []Interrupt
	for _, t := range s.Tasks {
		out = append(out, t.Interrupts...)
	}
	return out
}

// Task is a task pending at a checkpoint.
type Task struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Error      *string         `json:"error,omitempty"`
	Interrupts []Interrupt     `json:"interrupts"`
	Path       json.RawMessage `json:"path,omitempty"`
	Checkpoint *Checkpoint     `json:"checkpoint,omitempty"`
	// State is a subgraph's own state (with subgraphs asked for).
	State  *ThreadState    `json:"state,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Run status values.
const (
	RunStatusPending     = "pending"
	RunStatusRunning     = "running"
	RunStatusSuccess     = "success"
	RunStatusError       = "error"
	RunStatusTimeout     = "timeout"
	RunStatusInterrupted = "interrupted"
)

// Run is one execution of an assistant on a thread.
type Run struct {
	RunID       string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Status is RunStatusPending, RunStatusRunning, RunStatusSuccess, RunStatusError,
	// RunStatusTimeout
	// or RunStatusInterrupted.
	Status            string            `json:"status"`
	Metadata          map[string]any    `json:"metadata,omitempty"`
	MultitaskStrategy MultitaskStrategy `json:"multitask_strategy,omitempty"`
	Kwargs            map[string]any    `json:"kwargs,omitempty"`
}

// MultitaskStrategy says what a run created on a busy thread does.
type MultitaskStrategy string

// The multitask strategies.
const (
	// MultitaskReject refuses the new run (409 on LangGraph Platform and package
	// server, 422 on LangGraph's JS server). The servers' default.
	MultitaskReject MultitaskStrategy = "reject"
	// MultitaskEnqueue runs the new run after the thread's others.
	MultitaskEnqueue MultitaskStrategy = "enqueue"
	// MultitaskInterrupt cancels the current run, keeping its progress.
	MultitaskInterrupt MultitaskStrategy = "interrupt"
	// MultitaskRollback cancels and deletes the current run and its progress.
	MultitaskRollback MultitaskStrategy = "rollback"
)

// StreamMode is what a streamed run sends.
type StreamMode string

// The stream modes.
const (
	ModeValues        StreamMode = "values"
	ModeUpdates       StreamMode = "updates"
	ModeMessages      StreamMode = "messages"
	ModeMessagesTuple StreamMode = "messages-tuple"
	ModeCustom        StreamMode = "custom"
	ModeTasks         StreamMode = "tasks"
	ModeCheckpoints   StreamMode = "checkpoints"
	ModeDebug         StreamMode = "debug"
	ModeEvents        StreamMode = "events"
)

// Command answers interrupts, updates the state and routes a run; a run
// given one ignores its input.
type Command struct {
	// Resume is the answer to the pending interrupt (or a map from
	// interrupt id to answer, for several).
	Resume any `json:"resume,omitempty"`
	// Update is written to the state as by the interrupted node.
	Update any `json:"update,omitempty"`
	// Goto names the nodes to run next.
	Goto []string `json:"goto,omitempty"`
}

// RunConfig is a run's configuration.
type RunConfig struct {
	RecursionLimit int            `json:"recursion_limit,omitempty"`
	Tags           []string       `json:"tags,omitempty"`
	Configurable   map[string]any `json:"configurable,omitempty"`
}

// RunRequest is what a run is created with. Its zero value runs the
// assistant on no input (continuing from the thread's checkpoint).
type RunRequest struct {
	// Input is the run's input, encoded as JSON (nil: none).
	Input any `json:"input,omitempty"`
	// Command, when set, replaces Input.
	Command  *Command       `json:"command,omitempty"`
	Config   *RunConfig     `json:"config,omitempty"`
	Context  any            `json:"context,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// CheckpointID starts the run from that checkpoint (a replay or a
	// fork).
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// StreamMode is what Stream sends (the servers' default: values).
	StreamMode []StreamMode `json:"stream_mode,omitempty"`
	// StreamSubgraphs streams the events of subgraphs too, with their
	// namespace ([Part.Namespace]).
	StreamSubgraphs bool `json:"stream_subgraphs,omitempty"`
	// StreamResumable keeps the run's events, so that a stream whose
	// connection dropped reconnects and a join replays them.
	StreamResumable bool `json:"stream_resumable,omitempty"`
	// OnDisconnect is "cancel" or "continue" (the default).
	OnDisconnect      string            `json:"on_disconnect,omitempty"`
	MultitaskStrategy MultitaskStrategy `json:"multitask_strategy,omitempty"`
	// IfNotExists is "create" to create a missing thread, or "reject".
	IfNotExists     string   `json:"if_not_exists,omitempty"`
	InterruptBefore []string `json:"interrupt_before,omitempty"`
	InterruptAfter  []string `json:"interrupt_after,omitempty"`
	AfterSeconds    float64  `json:"after_seconds,omitempty"`
	// OnCompletion is "delete" (the default) or "keep": what becomes of
	// a stateless run's thread.
	OnCompletion string `json:"on_completion,omitempty"`
	Webhook      string `json:"webhook,omitempty"`
}

// RunError is a run that failed, as a wait, a join or a stream reports it.
type RunError struct {
	// Name is the error's kind, such as "Error" or "NodeError".
	Name string `json:"error"`
	// Message is the error's text.
	Message string `json:"message"`
}

func (e *RunError) Error() string {
	return fmt.Sprintf("client: run failed: %s: %s", e.Name, e.Message)
}

// Item is an entry of the store.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// Score is the relevance of a semantic search's result.
	Score *float64 `json:"score,omitempty"`
}
