package llm

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/state"
)

// Trim shortens a conversation for the model's context window. It returns
// every system message, first and in their original order, followed by the
// last keepLast other messages in order, widened backwards where needed so
// that no tool result is separated from the AI message holding its tool
// call: when a kept tool message answers a call of an earlier AI message,
// the window starts at that AI message instead. A tool result whose call
// appears nowhere is kept with the nearest earlier AI message that has tool
// calls, if any.
//
// keepLast <= 0 keeps only the system messages. The result is a new slice
// (the messages themselves are shared with msgs); msgs is not modified.
func Trim(msgs []state.Message, keepLast int) []state.Message {
	var system, rest []state.Message
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeSystem {
			system = append(system, m)
		} else {
			rest = append(rest, m)
		}
	}
	out := make([]state.Message, 0, len(system)+min(max(keepLast, 0), len(rest)))
	out = append(out, system...)
	if keepLast <= 0 || len(rest) == 0 {
		return out
	}

	// callAt maps a tool-call ID to the index (in rest) of its AI message.
	callAt := make(map[string]int)
	for i, m := range rest {
		if m.Role != llms.ChatMessageTypeAI {
			continue
		}
		for _, c := range m.ToolCalls() {
			if c.ID != "" {
				callAt[c.ID] = i
			}
		}
	}
	start := max(len(rest)-keepLast, 0)
	// Widening the window can pull in more tool results, so repeat until
	// nothing moves.
	for moved := true; moved; {
		moved = false
		for i := start; i < len(rest); i++ {
			if rest[i].Role != llms.ChatMessageTypeTool {
				continue
			}
			for _, r := range rest[i].ToolResults() {
				at, ok := callAt[r.ToolCallID]
				if !ok {
					at = precedingCaller(rest, i)
				}
				if at >= 0 && at < start {
					start, moved = at, true
				}
			}
			if len(rest[i].ToolResults()) == 0 {
				if at := precedingCaller(rest, i); at >= 0 && at < start {
					start, moved = at, true
				}
			}
		}
	}
	return append(out, rest[start:]...)
}

// precedingCaller returns the index of the nearest AI message with tool
// calls before i, or -1.
func precedingCaller(msgs []state.Message, i int) int {
	for j := i - 1; j >= 0; j-- {
		if msgs[j].Role == llms.ChatMessageTypeAI && len(msgs[j].ToolCalls()) > 0 {
			return j
		}
	}
	return -1
}
