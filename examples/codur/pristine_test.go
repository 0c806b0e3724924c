package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentgraph/agentgraph/internal/openaitest"
	"github.com/agentgraph/agentgraph/llm"
)

// cheatServer is an OpenAI-compatible server whose agent, instead of
// fixing main.py, rewrites expected.txt to what the buggy program prints.
func cheatServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := openaitest.ReadRequest(w, r)
		if !ok {
			return
		}
		msgs := body["messages"].([]any)
		system, _ := msgs[0].(map[string]any)["content"].(string)
		_, offered := body["tools"]
		var reply llm.Reply
		switch {
		case strings.HasPrefix(system, "You classify a task"):
			reply.Text = `{"task_type": "code_change", "confidence": 0.97, "action": "plan"}`
		case strings.HasPrefix(system, "You are the planner"):
			reply.Text = `{"action": "delegate", "agent": "llm:default", "reasoning": "a fix"}`
		case offered && msgs[len(msgs)-1].(map[string]any)["role"] != "tool":
			args, _ := json.Marshal(map[string]string{"path": "expected.txt", "content": "-1\n"})
			reply.ToolCalls = []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "write_file", Arguments: string(args)}}}
		default:
			reply.Text = "Updated the expected output."
		}
		openaitest.WriteReply(w, body, "c", reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAnExpectedOutputEditIsRevertedAndFailsEveryInvocation(t *testing.T) {
	srv := cheatServer(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.py"), []byte("def add(a, b):\n    return a - b\n\n\nprint(add(2, 3))\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.txt"), []byte("5\n"), 0o644))
	for invocation := 1; invocation <= 2; invocation++ {
		code, out, errOut := runCmd(t, "fix add in main.py", "--cwd", dir, "--model", "openai-compatible:m@"+srv.URL+"/v1")
		require.Equal(t, exitError, code, "invocation %d passes with the bug still there:\n%s\n%s", invocation, out, errOut)
		require.Contains(t, out, "expected.txt was changed by the agent: restored", "invocation %d", invocation)
		b, err := os.ReadFile(filepath.Join(dir, "expected.txt"))
		require.NoError(t, err)
		require.Equal(t, "5\n", string(b), "invocation %d leaves the user's expected output as it was", invocation)
	}
	b, err := os.ReadFile(filepath.Join(dir, "main.py"))
	require.NoError(t, err)
	require.Contains(t, string(b), "a - b", "the bug is still there")
}
