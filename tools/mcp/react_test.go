package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/agent"
	"github.com/agentgraph/agentgraph/llm"
	"github.com/agentgraph/agentgraph/state"
	"github.com/agentgraph/agentgraph/tools/mcp"
)

func TestReActAgentCallsAnMCPTool(t *testing.T) {
	s := connectStdio(t, mcp.WithToolPrefix("calc__"))
	ts, err := s.Tools(context.Background())
	require.NoError(t, err)

	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llms.ToolCall{
			state.ToolCall("call_1", "calc__add", `{"a":20,"b":22}`),
			state.ToolCall("call_2", "calc__fail", `{}`),
		}},
		llm.Reply{Text: "20 + 22 = 42, and the disk is full."},
	)
	g, err := agent.NewReAct(model, ts)
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.ReActState{Messages: state.Msgs(state.Human("What is 20 + 22?"))})
	require.NoError(t, err)

	// The model was offered the MCP tool with the server's schema.
	calls := model.Calls()
	require.Len(t, calls, 2)
	var offered *llms.FunctionDefinition
	for _, def := range calls[0].Options.Tools {
		if def.Function != nil && def.Function.Name == "calc__add" {
			offered = def.Function
		}
	}
	require.NotNil(t, offered, "calc__add offered to the model")
	require.Equal(t, "Add two integers.", offered.Description)
	params, err := json.Marshal(offered.Parameters)
	require.NoError(t, err)
	require.Contains(t, string(params), `"the first addend"`)

	// The tool messages carry the result and the server's error message.
	msgs := out.Messages.List()
	require.Len(t, msgs, 5)
	results := map[string]string{}
	for _, m := range msgs[2:4] {
		for _, r := range m.ToolResults() {
			results[r.ToolCallID] = r.Content
		}
	}
	require.JSONEq(t, `{"sum":42}`, results["call_1"])
	require.Contains(t, results["call_2"], "disk is full")
	require.Equal(t, "20 + 22 = 42, and the disk is full.", msgs[4].Text())
}
