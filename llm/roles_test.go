package llm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
)

// The role constants are the roles the state's constructors give, and
// survive a JSON round trip of the message.
func TestRolesAreTheRolesOfTheMessageConstructors(t *testing.T) {
	tests := []struct {
		msg  state.Message
		want llm.Role
	}{
		{state.System("be terse"), llm.RoleSystem},
		{state.Human("hi"), llm.RoleHuman},
		{state.AI("hello", state.ToolCall("c1", "add", `{}`)), llm.RoleAI},
		{state.Tool("c1", "add", "3"), llm.RoleTool},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			require.Equal(t, tt.want, tt.msg.Role)
			var back state.Message
			b, err := tt.msg.MarshalJSON()
			require.NoError(t, err)
			require.NoError(t, back.UnmarshalJSON(b))
			require.Equal(t, tt.want, back.Role)
		})
	}
}
