package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/examples/retrai/internal/runs"
	"github.com/agentgraph/agentgraph/examples/retrai/samples"
	"github.com/agentgraph/agentgraph/llm"
)

// changesOf returns the retrai.changes event of msgs, which must follow
// the retrai.human_check.
func changesOf(t *testing.T, msgs []wsMessage) workspaceChanges {
	t.Helper()
	for i, m := range msgs {
		if m.Kind != string(kindChanges) {
			continue
		}
		require.Positive(t, i)
		require.Equal(t, "retrai.human_check", msgs[i-1].Kind, "the changes follow the check")
		b, err := json.Marshal(m.Data)
		require.NoError(t, err)
		var ch workspaceChanges
		require.NoError(t, json.Unmarshal(b, &ch))
		return ch
	}
	t.Fatalf("no %s in %v", kindChanges, kinds(msgs))
	return workspaceChanges{}
}

// Each human check shows the changes since the one before was approved,
// not since the run started.
func TestHumanChecksShowTheChangesSinceTheLastApproval(t *testing.T) {
	ts := newTestServer(t)
	model := newFakeOpenAI(t, []llm.Reply{
		{Text: "First try.", ToolCalls: []llms.ToolCall{toolCall("call_1", "file_patch", `{"path":"greeting.txt","old_text":"Wrold","new_text":"Wordl"}`)}},
		{Text: "Second try.", ToolCalls: []llms.ToolCall{toolCall("call_2", "file_patch", `{"path":"greeting.txt","old_text":"Wordl","new_text":"Wolrd"}`)}},
		{Text: "Third try.", ToolCalls: []llms.ToolCall{toolCall("call_3", "file_patch", `{"path":"greeting.txt","old_text":"Wolrd","new_text":"World"}`)}},
	})
	project := t.TempDir()
	require.NoError(t, samples.Copy(samples.Shell, project))
	body, err := json.Marshal(map[string]any{"goal": "shell", "hitl": true, "cwd": project, "model": model.spec("")})
	require.NoError(t, err)
	run := ts.create(t, string(body))

	c := ts.follow(t, run.ID, false)
	first := changesOf(t, readUntil(t, c, run.ID, "retrai.human_check", string(kindChanges)))
	require.Equal(t, "start", first.Since)
	require.Len(t, first.Files, 1)
	require.Equal(t, []string{"-Hello, Wrold!", "+Hello, Wordl!"}, first.Files[0].Hunks[0].Lines)

	ts.api(t, "POST", "/api/runs/"+run.ID+"/resume", `{"decision":"approve"}`, http.StatusAccepted, nil)
	second := changesOf(t, readUntil(t, c, run.ID, "retrai.human_decision", "retrai.human_check", string(kindChanges)))
	require.Equal(t, "check", second.Since)
	require.Len(t, second.Files, 1)
	require.Equal(t, []string{"-Hello, Wordl!", "+Hello, Wolrd!"}, second.Files[0].Hunks[0].Lines, "from what was approved")

	ts.api(t, "POST", "/api/runs/"+run.ID+"/resume", `{"decision":"approve"}`, http.StatusAccepted, nil)
	readUntil(t, c, run.ID, "runs.ended")
	var final runs.Run
	ts.api(t, "GET", "/api/runs/"+run.ID, "", http.StatusOK, &final)
	require.Equal(t, runs.StatusAchieved, final.Status)
}
