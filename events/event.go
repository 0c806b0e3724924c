package events

import (
	"encoding/json"
	"math"
	"time"
)

// Kind identifies what an [Event] reports. Its string value is the snake_case
// name used on the wire (JSON, WebSocket, logs).
type Kind string

// The kinds of event the agent runtime publishes.
const (
	// KindStepStart marks the start of a plan/act/evaluate step.
	KindStepStart Kind = "step_start"
	// KindToolCall reports that the agent invoked a tool (see [ToolCall]).
	KindToolCall Kind = "tool_call"
	// KindToolResult reports a tool's output (see [ToolResult]).
	KindToolResult Kind = "tool_result"
	// KindGoalCheck reports the outcome of evaluating the goal.
	KindGoalCheck Kind = "goal_check"
	// KindHumanCheckRequired asks a human to review or approve something.
	KindHumanCheckRequired Kind = "human_check_required"
	// KindHumanCheckResponse carries the human's answer to a check.
	KindHumanCheckResponse Kind = "human_check_response"
	// KindIterationComplete marks the end of one agent loop iteration.
	KindIterationComplete Kind = "iteration_complete"
	// KindRunEnd marks the end of a run.
	KindRunEnd Kind = "run_end"
	// KindError reports an error (see [Error]); sinks treat it as severe.
	KindError Kind = "error"
	// KindLog carries a free-form log message.
	KindLog Kind = "log"
	// KindLLMUsage reports token usage of one model call (see [LLMUsage]).
	KindLLMUsage Kind = "llm_usage"
)

// Event is one progress report of an agent run.
//
// It round-trips through encoding/json, with the usual caveat for the
// free-form Payload: JSON numbers decode as float64 (use [Event.PayloadInt]
// to read integers regardless of representation).
type Event struct {
	// Kind says what happened.
	Kind Kind `json:"kind"`
	// RunID identifies the agent run the event belongs to.
	RunID string `json:"run_id"`
	// Iteration is the agent loop iteration (0 when not applicable).
	Iteration int `json:"iteration"`
	// Time is when the event happened; [Bus.Publish] fills it if zero.
	Time time.Time `json:"time"`
	// Payload holds kind-specific data. It must be JSON-encodable and is
	// shared by all subscribers, who must not modify it.
	Payload map[string]any `json:"payload"`
}

// New returns an Event of the given kind. Time is left zero so that
// [Bus.Publish] stamps it.
func New(kind Kind, runID string, iteration int, payload map[string]any) Event {
	return Event{Kind: kind, RunID: runID, Iteration: iteration, Payload: payload}
}

// ToolCall returns a [KindToolCall] event with payload keys "tool" (the tool
// name) and "args" (its arguments, typically JSON text).
func ToolCall(runID string, iteration int, name, args string) Event {
	return New(KindToolCall, runID, iteration, map[string]any{
		"tool": name,
		"args": args,
	})
}

// ToolResult returns a [KindToolResult] event with payload keys "tool" and
// "output", plus "error" (the error text) when err is non-nil.
func ToolResult(runID string, iteration int, name, output string, err error) Event {
	p := map[string]any{"tool": name, "output": output}
	if err != nil {
		p["error"] = err.Error()
	}
	return New(KindToolResult, runID, iteration, p)
}

// LLMUsage returns a [KindLLMUsage] event with payload keys "model",
// "prompt_tokens", "completion_tokens" and "total_tokens".
func LLMUsage(runID string, iteration int, model string, prompt, completion int) Event {
	return New(KindLLMUsage, runID, iteration, map[string]any{
		"model":             model,
		"prompt_tokens":     prompt,
		"completion_tokens": completion,
		"total_tokens":      prompt + completion,
	})
}

// Error returns a [KindError] event with payload key "error" holding
// err.Error() (the key is absent if err is nil).
func Error(runID string, iteration int, err error) Event {
	p := map[string]any{}
	if err != nil {
		p["error"] = err.Error()
	}
	return New(KindError, runID, iteration, p)
}

// PayloadString returns the payload value under key if it is a string.
func (e Event) PayloadString(key string) (string, bool) {
	s, ok := e.Payload[key].(string)
	return s, ok
}

// PayloadInt returns the payload value under key as an int. It accepts Go
// integer types as well as the whole-number float64 and json.Number values
// produced by decoding JSON.
func (e Event) PayloadInt(key string) (int, bool) {
	switch v := e.Payload[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case int32:
		return int(v), true
	case float64:
		if v != math.Trunc(v) || v < math.MinInt || v >= -math.MinInt {
			return 0, false
		}
		return int(v), true
	case json.Number:
		n, err := v.Int64()
		return int(n), err == nil
	default:
		return 0, false
	}
}
