// Package agenttest holds what the tests of the prebuilt agents share: a
// one-line rendering of messages and the crash test of an agent's tool
// calls ([Crash]).
package agenttest

import (
	"fmt"

	"github.com/agentgraph/agentgraph/state"
)

// Summary renders messages as "role: text [calls] [results]" lines; a
// tool message has no text besides its results ("tool:  result(…)").
func Summary(msgs []state.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role) + ": "
		if len(m.ToolResults()) == 0 {
			s += m.Text()
		}
		for _, c := range m.ToolCalls() {
			s += fmt.Sprintf(" call(%s %s %s)", c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments)
		}
		for _, r := range m.ToolResults() {
			s += fmt.Sprintf(" result(%s %s %s)", r.ToolCallID, r.Name, r.Content)
		}
		out = append(out, s)
	}
	return out
}
